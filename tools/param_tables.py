#!/usr/bin/env python3
"""Print every node's parameter descriptors (one tab-separated line per parameter: node, name,
type, default, range, read-only, description), read from the nodes themselves; or compare two
such printouts.

    python tools/param_tables.py > after.tsv           # needs tools/env.sh (the colcon install)
    python tools/param_tables.py --compare before.tsv after.tsv

--compare pairs rows by node and name, following each node's renamed parameters (old -> new,
as the nodes refuse them; a description is compared with the old names replaced by the new
ones), and prints: N identical, M renamed (listed, with any change of their descriptor besides
the name), and every other change (added, removed, changed). Exit 1 if there is any other change.
"""

from __future__ import annotations

import argparse
import sys


def _print_tables() -> int:
    from hand_bringup.param_tables import all_tables

    tables = all_tables()
    for node in sorted(tables):
        rows, renamed = tables[node]
        for r in rows:
            print(r.line())
        for old, new in sorted(renamed.items()):
            print(f"#renamed\t{node}\t{old}\t{new}")
    return 0


def _read(path: str) -> tuple[dict[tuple[str, str], list[str]], dict[tuple[str, str], str]]:
    rows, renamed = {}, {}
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if parts[0] == "#renamed":
                renamed[(parts[1], parts[2])] = parts[3]
            elif len(parts) == 7:
                rows[(parts[0], parts[1])] = parts[2:]
    return rows, renamed


def _compare(before: str, after: str) -> int:
    old, _ = _read(before)
    new, renamed = _read(after)
    by_node: dict[str, dict[str, str]] = {}
    for (node, o), n in renamed.items():
        by_node.setdefault(node, {})[o] = n

    def rename_text(node: str, text: str) -> str:
        # longest names first, whole words only (command_timeout inside command_timeout_s stays)
        import re
        for o in sorted(by_node.get(node, {}), key=len, reverse=True):
            text = re.sub(rf"(?<![\w.]){re.escape(o)}(?![\w])", by_node[node][o], text)
        return text

    identical, renamed_rows, other = [], [], []
    seen_new = set()
    for (node, name), fields in sorted(old.items()):
        target = by_node.get(node, {}).get(name, name)
        key = (node, target)
        if key not in new:
            other.append(f"removed {node} {name}")
            continue
        seen_new.add(key)
        # a description is the same if it is unchanged, or unchanged but for the renamed names
        # (a plain word such as "rate" in "baud rate" is not renamed to "rate_hz")
        text = fields[-1] if fields[-1] == new[key][-1] else rename_text(node, fields[-1])
        mapped = fields[:-1] + [text]
        diffs = [f"{label}: {a} -> {b}" for label, a, b in
                 zip(("type", "default", "range", "read_only", "description"), mapped, new[key]) if a != b]
        if target != name:
            renamed_rows.append((node, name, target, diffs))
        elif diffs:
            other.append(f"changed {node} {name}: " + "; ".join(diffs))
        else:
            identical.append(key)
    other += [f"added {n} {p}" for (n, p) in sorted(set(new) - seen_new)]
    print(f"{len(identical)} identical, {len(renamed_rows)} renamed, {len(other)} other changes")
    for node, o, n, diffs in renamed_rows:
        print(f"  renamed {node}: {o} -> {n}" + ("" if not diffs else "   [" + "; ".join(diffs) + "]"))
    for line in other:
        print(f"  {line}")
    return 1 if other else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    a = ap.parse_args(argv)
    return _compare(*a.compare) if a.compare else _print_tables()


if __name__ == "__main__":
    sys.exit(main())

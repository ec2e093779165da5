"""Pick a ROS_DOMAIN_ID that nobody on this machine is using (for `make test` and the demos).

A random private domain collides with another run on the same machine once in ~100 picks (a
demo in another terminal, a second checkout's tests): the tests then talk to that run's nodes
(measured here: a test found another run's ``/hand_twin`` already active). This probes candidate
domains one after the other: a domain on which DDS discovery shows no other participant within
``wait_s`` is free.

    python -m hand_common.free_domain [--wait 1.0] [--tries 8]   # prints the id
"""

from __future__ import annotations

import argparse
import random
import sys
import time

#: The ids the ROS 2 docs call safe on Linux (higher ones can collide with ephemeral ports; 0 is
#: everyone's default).
DOMAIN_RANGE = (1, 101)


def participants(domain_id: int, wait_s: float) -> list[str]:
    """Names of the ROS nodes discovered on ``domain_id`` within ``wait_s`` s (our probe excluded)."""
    import rclpy
    from rclpy.context import Context

    ctx = Context()
    rclpy.init(context=ctx, domain_id=domain_id)
    try:
        node = rclpy.create_node("free_domain_probe", context=ctx, start_parameter_services=False)
        end = time.monotonic() + wait_s
        seen: set[str] = set()
        while time.monotonic() < end:
            seen |= {n for n, _ in node.get_node_names_and_namespaces() if n != "free_domain_probe"}
            if seen:
                break
            time.sleep(0.05)
        node.destroy_node()
        return sorted(seen)
    finally:
        rclpy.shutdown(context=ctx)


def pick(wait_s: float = 1.0, tries: int = 8, rng: random.Random | None = None) -> tuple[int, dict[int, list[str]]]:
    """(a free domain id, {busy id: node names seen}). After ``tries`` busy candidates, one more
    candidate is returned unprobed (the busy ones are in the dict: the caller says so)."""
    rng = rng or random.Random()
    busy: dict[int, list[str]] = {}
    candidate = rng.randint(*DOMAIN_RANGE)
    for _ in range(max(1, tries)):
        seen = participants(candidate, wait_s)
        if not seen:
            return candidate, busy
        busy[candidate] = seen
        candidate = rng.choice([d for d in range(DOMAIN_RANGE[0], DOMAIN_RANGE[1] + 1) if d not in busy])
    return candidate, busy


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wait", type=float, default=1.0, help="s of discovery per candidate domain")
    ap.add_argument("--tries", type=int, default=8, help="candidate domains probed at most")
    a = ap.parse_args(argv)
    try:
        domain, busy = pick(a.wait, a.tries)
    except Exception as exc:  # noqa: BLE001 - never leave the caller without an id (empty = domain 0)
        domain, busy = random.randint(*DOMAIN_RANGE), {}
        print(f"[free_domain] cannot probe domains ({type(exc).__name__}: {exc}): "
              f"ROS_DOMAIN_ID {domain} picked at random", file=sys.stderr)
    for d, names in sorted(busy.items()):
        print(f"[free_domain] ROS_DOMAIN_ID {d} is in use ({', '.join(names[:5])}): skipped", file=sys.stderr)
    print(domain)
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
import os
import random
import sys
import tempfile
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


#: Where picks are claimed: one file per claimed id (its mtime is the claim's time) and the lock
#: that makes probe-and-claim atomic between concurrent pickers.
CLAIM_DIR = os.path.join(tempfile.gettempdir(), "hand_free_domain")
#: s a claimed id is not handed out again: long enough for the run that picked it to start its
#: nodes (from then on, probing sees them).
CLAIM_LEASE_S = 120.0


def claimed(claim_dir: str = CLAIM_DIR, lease_s: float = CLAIM_LEASE_S, now: float | None = None) -> set[int]:
    """Ids claimed within the last ``lease_s`` s."""
    now = time.time() if now is None else now
    out = set()
    try:
        for name in os.listdir(claim_dir):
            if name.isdigit():
                try:
                    if now - os.stat(os.path.join(claim_dir, name)).st_mtime < lease_s:
                        out.add(int(name))
                except OSError:
                    pass
    except OSError:
        pass
    return out


def claim(domain_id: int, claim_dir: str = CLAIM_DIR) -> None:
    """Claim ``domain_id`` now (or renew the claim: a run renews its domain's while it runs)."""
    os.makedirs(claim_dir, exist_ok=True)
    path = os.path.join(claim_dir, str(int(domain_id)))
    with open(path, "a"):
        os.utime(path)


def pick(wait_s: float = 1.0, tries: int = 8, rng: random.Random | None = None,
         claim_dir: str = CLAIM_DIR, probe=None) -> tuple[int, dict[int, list[str]]]:
    """(a free domain id, {busy id: node names seen}), claimed. Probing and claiming happen under
    an exclusive lock in ``claim_dir``, and ids claimed within :data:`CLAIM_LEASE_S` are skipped:
    two pickers started together got the same id before (issue 27: both probed an empty domain
    before either had nodes on it). After ``tries`` busy candidates, one more candidate is
    returned unprobed (the busy ones are in the dict: the caller says so). probe: domain_id,
    wait_s -> names (default :func:`participants`)."""
    import fcntl

    probe = probe or participants
    rng = rng or random.Random()
    busy: dict[int, list[str]] = {}
    os.makedirs(claim_dir, exist_ok=True)
    with open(os.path.join(claim_dir, "lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes (or the process dies)
        taken = claimed(claim_dir)
        free = [d for d in range(DOMAIN_RANGE[0], DOMAIN_RANGE[1] + 1) if d not in taken] or \
            list(range(DOMAIN_RANGE[0], DOMAIN_RANGE[1] + 1))
        candidate = rng.randint(*DOMAIN_RANGE)
        if candidate not in free:
            candidate = rng.choice(free)
        for _ in range(max(1, tries)):
            seen = probe(candidate, wait_s)
            if not seen:
                break
            busy[candidate] = seen
            left = [d for d in free if d not in busy]
            if not left:
                break
            candidate = rng.choice(left)
        claim(candidate, claim_dir)
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

"""Two pickers started together never get the same ROS_DOMAIN_ID (issue 27): probe and claim are
one atomic step, and a claimed id is skipped for the lease."""

from __future__ import annotations

import random
import threading
import time

from hand_common.free_domain import DOMAIN_RANGE, claim, claimed, pick


def test_concurrent_picks_are_distinct(tmp_path):
    def slow_empty_probe(domain_id, wait_s):
        time.sleep(0.01)  # every domain looks empty (no nodes yet): only the claim separates pickers
        return []

    got: list[int] = []
    lock = threading.Lock()

    def one(seed):
        d, busy = pick(rng=random.Random(seed % 3), claim_dir=str(tmp_path), probe=slow_empty_probe)
        with lock:
            got.append(d)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(30)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    assert len(got) == 30 and len(set(got)) == 30  # same seeds (same first candidate): all distinct
    assert claimed(str(tmp_path)) == set(got)


def test_busy_and_claimed_ids_are_skipped_and_claims_expire(tmp_path):
    claim(5, str(tmp_path))
    assert 5 in claimed(str(tmp_path)) and 5 not in claimed(str(tmp_path), now=time.time() + 1000)
    busy_ids = set(range(DOMAIN_RANGE[0], DOMAIN_RANGE[1] + 1)) - {5, 7}

    def probe(domain_id, wait_s):
        return ["someone"] if domain_id in busy_ids else []

    d, busy = pick(tries=200, claim_dir=str(tmp_path), probe=probe)
    assert d == 7 and 5 not in busy and all(k in busy_ids for k in busy)

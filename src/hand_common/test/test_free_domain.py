"""free_domain: a domain with a node on it is seen as busy and skipped; an empty one is picked."""

from __future__ import annotations

import os
import random

import rclpy
from rclpy.context import Context

from hand_common import free_domain


def test_a_domain_with_a_node_is_busy_and_an_empty_one_is_free():
    own = int(os.environ["ROS_DOMAIN_ID"])
    ctx = Context()
    rclpy.init(context=ctx, domain_id=own)
    try:
        node = rclpy.create_node("someone_elses_twin", context=ctx)
        assert "someone_elses_twin" in free_domain.participants(own, wait_s=5.0)
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def test_pick_skips_busy_domains(monkeypatch, tmp_path):
    busy = {5: ["hand_twin"], 7: ["hand_tracker"]}
    probed: list[int] = []

    def fake(domain_id, wait_s):
        probed.append(domain_id)
        return busy.get(domain_id, [])

    monkeypatch.setattr(free_domain, "participants", fake)

    class Rng(random.Random):
        def randint(self, a, b):
            return 5

        def choice(self, seq):
            return 7 if 7 in seq else 9

    domain, seen = free_domain.pick(wait_s=0.0, tries=8, rng=Rng(), claim_dir=str(tmp_path))
    assert (domain, seen, probed) == (9, busy, [5, 7, 9])

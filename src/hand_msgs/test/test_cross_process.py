"""The interface and the environment work: a HandLandmarksArray published by one process
arrives in another with equal values."""

import os
import sys

import numpy as np
import pytest
from hand_msgs.msg import HandLandmarksArray

from hand_common.testing import NodeProcess, RosProbe, wait_until

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
from landmark_publisher import expected_values  # noqa: E402


@pytest.fixture
def probe():
    p = RosProbe("cross_process_probe")
    yield p
    p.close()


def test_landmarks_cross_process(probe, tmp_path):
    pub = NodeProcess([sys.executable, os.path.join(HERE, "landmark_publisher.py")],
                      log_path=str(tmp_path / "publisher.log"))
    try:
        got = probe.collect(HandLandmarksArray, "/hand/landmarks")
        wait_until(lambda: len(got) >= 3, 20, "3 HandLandmarksArray messages")
    finally:
        pub.stop()
    v = expected_values()
    msg = got[-1]
    assert len(msg.hands) == 1
    hand = msg.hands[0]
    assert (hand.header.stamp.sec, hand.header.stamp.nanosec) == v["stamp"]
    assert hand.header.frame_id == "camera_optical"
    assert hand.frame_index == v["frame_index"]
    assert hand.handedness == "right"
    assert hand.handedness_score == pytest.approx(v["score"])
    assert (hand.image_width, hand.image_height) == v["size"]
    image = np.array([(p.x, p.y, p.z) for p in hand.image_landmarks])
    world = np.array([(p.x, p.y, p.z) for p in hand.world_landmarks])
    np.testing.assert_allclose(image, v["image"], rtol=0, atol=1e-12)
    np.testing.assert_allclose(world, v["world"], rtol=0, atol=1e-12)


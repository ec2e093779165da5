"""The console node and the tracker's preview hook in real processes (no browser: see
test_console_browser for the page itself).

- the tracker publishes ``/hand/image_preview`` only while someone subscribes: none before, JPEG
  frames 320 px wide stamped like the landmarks of the same frame after;
- the console serves its page on 127.0.0.1 (HTTP 200) and refuses to configure on another host
  without allow_remote;
- the active console subscribes to the preview, and to every other data topic (landmarks,
  flexions, diagnostics, the sim twin's joint states and picture), only while a client is connected
  to its page: with no page open it has no subscription (nothing is sent to it, no callback runs)
  and the tracker encodes nothing for it.
"""

import os
import socket
import time
import urllib.request

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from hand_msgs.msg import HandLandmarksArray
from sensor_msgs.msg import CompressedImage

from hand_common import contract
from hand_common.testing import NodeProcess, RosProbe, wait_until
from hand_console.browser import HeadlessClient

TRACKER_PARAMS = os.path.join(os.environ.get("HAND_TELEOP_ROOT", "."), "src", "hand_tracking", "config", "tracker.yaml")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def probe():
    p = RosProbe("console_test_probe")
    yield p
    p.close()


def tracker_values(diags) -> dict:
    for arr in reversed(diags):
        for st in arr.status:
            if st.name.startswith(contract.TRACKER_NODE):
                return {kv.key: kv.value for kv in st.values}
    return {}


def test_preview_only_while_subscribed_and_console_serves_locally(probe, tmp_path, video_path):
    import cv2

    tracker = NodeProcess.module("hand_tracking.tracker_node", "--ros-args", "--params-file", TRACKER_PARAMS,
                                 "-p", f"source:=video:{video_path}", "-p", "model_complexity:=0", "-p",
                                 "loop:=true", "-p", "diagnostics_period_s:=0.5",
                                 log_path=str(tmp_path / "tracker.log"))
    port = free_port()
    console = NodeProcess.module("hand_console.console_node", "--ros-args", "-p", f"port:={port}",
                                 "-p", "profile:=sim", log_path=str(tmp_path / "console.log"))
    remote = NodeProcess.module("hand_console.console_node", "--ros-args", "-r", "__node:=remote_console",
                                "-p", "host:=0.0.0.0", "-p", f"port:={free_port()}",
                                log_path=str(tmp_path / "remote.log"))
    try:
        diags = probe.collect(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, 100)
        landmarks = probe.collect(HandLandmarksArray, contract.TOPIC_LANDMARKS, 1000)
        for node in (contract.TRACKER_NODE, contract.CONSOLE_NODE):
            assert probe.change_state(node, "configure", timeout=60), node
        assert probe.change_state(contract.TRACKER_NODE, "activate")
        # nobody subscribes to the preview yet: frames flow, no preview is encoded
        wait_until(lambda: int(tracker_values(diags).get("frames", "0")) >= 30, 60, "30 tracked frames")
        assert tracker_values(diags)["preview_published"] == "0"
        previews = probe.collect(CompressedImage, contract.TOPIC_IMAGE_PREVIEW, contract.qos(contract.VIEW))
        wait_until(lambda: len(previews) >= 5, 30, "5 preview frames")
        first = previews[0]
        assert first.format == "jpeg"
        img = cv2.imdecode(np.frombuffer(bytes(first.data), np.uint8), cv2.IMREAD_COLOR)
        assert img is not None and img.shape[1] == 320 and 150 <= img.shape[0] <= 260
        # stamped with its frame's capture stamp: a landmarks message carries the same stamp
        stamps = {(m.header.stamp.sec, m.header.stamp.nanosec) for m in landmarks}
        assert sum((p.header.stamp.sec, p.header.stamp.nanosec) in stamps for p in previews[:5]) >= 4
        wait_until(lambda: int(tracker_values(diags).get("preview_published", "0")) >= 5, 10, "diagnostics")
        # the console's page, on the loopback address only
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as r:
            assert r.status == 200 and b"<html" in r.read(2000).lower()
        assert probe.change_state(contract.CONSOLE_NODE, "activate")
        assert probe.get_state(contract.CONSOLE_NODE) == "active"
        # the preview's subscribers: the probe's own; the console's only while a page is open
        def preview_subscribers() -> int:
            return probe.node.count_subscribers(contract.TOPIC_IMAGE_PREVIEW)

        def console_topics() -> set[str]:
            return {t for t, _ in probe.node.get_subscriber_names_and_types_by_node(contract.CONSOLE_NODE, "/")}

        data_topics = {contract.TOPIC_IMAGE_PREVIEW, contract.TOPIC_LANDMARKS, contract.TOPIC_TARGET_FLEXIONS,
                       contract.TOPIC_DIAGNOSTICS, contract.TOPIC_TWIN_JOINT_STATES, contract.TOPIC_TWIN_IMAGE}
        wait_until(lambda: preview_subscribers() == 1, 10, "the probe alone on the preview")
        time.sleep(1.0)  # the console's render loop looked several times: still no page, no subscription
        assert preview_subscribers() == 1 and not console_topics() & data_topics, console_topics()
        with HeadlessClient(f"http://127.0.0.1:{port}") as page:
            wait_until(lambda: preview_subscribers() == 2, 20, "the console subscribed for its page")
            wait_until(lambda: data_topics <= console_topics(), 20, lambda: f"every data topic: {console_topics()}")
            wait_until(lambda: page.messages >= 5, 30, "the page's messages")
        wait_until(lambda: preview_subscribers() == 1, 20, "the console unsubscribed once the page closed")
        wait_until(lambda: not console_topics() & data_topics, 20,
                   lambda: f"no data topic once the page closed: {console_topics()}")
        assert not probe.change_state("remote_console", "configure", timeout=30)
        assert "allow_remote" in remote.output()
    finally:
        for p in (console, remote, tracker):
            p.stop()

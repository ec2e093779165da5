"""The console's page for each bringup profile, in a real browser (Debian's chromium headless, one
browser for every profile): the console node of the profile is started alone and fed, by a probe,
the messages its profile's nodes publish (exact values: the ground truth), and the page must show
that profile's panels:

- every profile: the flexion bars and values of its flexion topic (two_hands: the right hand's),
  and each of its robots' URDF posed from its joint-state topic (figures row "robot poses shown",
  one count per robot: two_hands shows the left and the right hand);
- sim, two_hands, dex: the twin's camera picture in the Robot folder;
- hardware: the servo driver's pulses per digit and its frames sent / acked / unacked (from its
  /diagnostics, as the driver on the simulated board publishes them);
- dex: both Kapandji scores (operator and robot);
- arm: the gesture state, armed then e-stop latched.

What the real nodes publish on these topics is tested with the nodes (hand_servo_driver,
hand_retarget, arm_teleop, hand_twin_mujoco); the whole graph with a page: test_console_browser.
"""

from __future__ import annotations

import json
import re
import socket
import threading

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import String

from hand_common import contract
from hand_common.testing import NodeProcess, RosProbe
from hand_console import keys
from hand_console.browser import ConsoleBrowser, browser_problem, chromium
from hand_console.page import TWIN_CAMERA_LABEL
from hand_console.robots import ROBOT_PANELS, RobotPanel, robot_views

PROFILES = ("sim", "rviz", "hardware", "two_hands", "dex", "arm")
#: The flexions published (thumb..pinky), as the page shows them: values and bars (%).
FLEXIONS = (0.12, 0.34, 0.56, 0.78, 0.9)
PULSES = "1500 1620 1710 1800 1900"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def driver():
    if problem := browser_problem():
        pytest.fail(f"the browser test needs a browser: {problem}")
    d = chromium(1200, 1000, nice=0)
    yield d
    d.quit()


@pytest.fixture(scope="module")
def probe():
    p = RosProbe("console_profiles_probe")
    yield p
    p.close()


def _joint_states(view, phase: float) -> JointState:
    """Every actuated joint of the view's URDF at a phase of its range (moves between messages)."""
    import yourdfpy

    urdf = yourdfpy.URDF.load(str(view.urdf()), load_meshes=False, build_scene_graph=False)
    msg = JointState(name=list(urdf.actuated_joint_names))
    pos = []
    for name in msg.name:
        lim = urdf.joint_map[name].limit
        lo, hi = (lim.lower, lim.upper) if lim is not None and lim.lower is not None and lim.upper is not None \
            else (0.0, 1.0)
        pos.append(lo + (hi - lo) * phase)
    msg.position = pos
    return msg


def _servo_status() -> DiagnosticArray:
    values = {keys.SERVO_LINK: "open", keys.SERVO_PULSES: PULSES, keys.SERVO_CHANNELS: "0 1 2 3 4",
              keys.SERVO_FRAMES_SENT: "120", keys.SERVO_FRAMES_ACKED: "118", keys.SERVO_FRAMES_UNACKED: "2",
              keys.SERVO_BOARD_REJECTS: "0", keys.SERVO_LOSS_RATE: "0.017", keys.SERVO_STALE: "False"}
    st = DiagnosticStatus(name=f"{keys.SERVO_DRIVER_NODE}: serial link", message="ok",
                          values=[KeyValue(key=k, value=v) for k, v in values.items()])
    return DiagnosticArray(status=[st])


def _image(width: int = 160, height: int = 120) -> Image:
    a = np.zeros((height, width, 3), np.uint8)
    a[:, : width // 2] = (200, 40, 40)
    return Image(width=width, height=height, encoding="rgb8", step=width * 3, data=a.tobytes())


class Feeder:
    """Publishes a profile's messages at 5 Hz in a thread (best-effort keep-last-1, like the nodes'
    view topics): flexions, each robot's joint states, and the profile's panel topics."""

    def __init__(self, probe: RosProbe, profile: str):
        view_qos = contract.qos(contract.VIEW)
        two = profile == "two_hands"
        self.panel: RobotPanel = ROBOT_PANELS.get(profile, RobotPanel())
        self.flex_pub = probe.publisher(JointState, contract.side_topic(contract.TOPIC_TARGET_FLEXIONS, "right")
                                        if two else contract.TOPIC_TARGET_FLEXIONS, view_qos)
        self.views = robot_views(profile)
        self.robots = [(probe.publisher(JointState, v.topic_name(), view_qos), v) for v in self.views]
        self.image_pub = (probe.publisher(Image, self.panel.resolve(self.panel.twin_image), view_qos)
                          if self.panel.twin_image else None)
        self.diag_pub = probe.publisher(DiagnosticArray, contract.TOPIC_DIAGNOSTICS,
                                        contract.qos(contract.STREAM)) if self.panel.servo else None
        self.kapandji = [probe.publisher(JointState, self.panel.resolve(t), view_qos)
                         for t in self.panel.kapandji] if self.panel.kapandji else []
        self.arm_pub = probe.publisher(String, self.panel.resolve(self.panel.arm_state), view_qos) \
            if self.panel.arm_state else None
        self.arm_state = "ARMED"
        self._states = [[_joint_states(v, p) for p in (0.3, 0.6)] for v in self.views]
        self.node = probe.node
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        k = 0
        while not self._stop.is_set():
            stamp = self.node.get_clock().now().to_msg()
            flex = JointState(name=list(contract.FINGER_NAMES), position=list(FLEXIONS))
            flex.header.stamp = stamp
            self.flex_pub.publish(flex)
            for (pub, _), states in zip(self.robots, self._states):
                js = states[k % 2]
                js.header.stamp = stamp
                pub.publish(js)
            if self.image_pub is not None:
                self.image_pub.publish(_image())
            if self.diag_pub is not None:
                self.diag_pub.publish(_servo_status())
            for pub, score in zip(self.kapandji, (7.0, 6.5)):
                pub.publish(JointState(name=["kapandji"], position=[score]))
            if self.arm_pub is not None:
                self.arm_pub.publish(String(data=json.dumps({"state": self.arm_state, "gesture": "open",
                                                             "mode": "position", "gripper_closed": False})))
            k += 1
            self._stop.wait(0.2)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5.0)


def _poses_shown(text: str) -> dict[str, int]:
    m = re.search(r"robot poses shown\s+(.*)", text)
    return {name: int(n) for name, n in re.findall(r"(\w+) (\d+)", m.group(1))} if m else {}


@pytest.mark.parametrize("profile", PROFILES)
def test_the_page_shows_the_profiles_panels(profile, driver, probe, tmp_path):
    port = free_port()
    console = NodeProcess.module("hand_console.console_node", "--ros-args", "-p", f"profile:={profile}",
                                 "-p", f"port:={port}", "-p", "render_rate_hz:=5.0",
                                 log_path=str(tmp_path / "console.log"))
    feeder = None
    page = ConsoleBrowser(f"http://127.0.0.1:{port}", driver=driver)
    try:
        assert probe.change_state(contract.CONSOLE_NODE, "configure", timeout=120), console.tail(20)
        assert probe.change_state(contract.CONSOLE_NODE, "activate", timeout=60), console.tail(20)
        feeder = Feeder(probe, profile)
        page.open(timeout=180)
        # the flexions: values and bars
        values = " · ".join(f"{n} `{v:.2f}`".replace("`", "") for n, v in zip(contract.FINGER_NAMES, FLEXIONS))
        page.wait_for(lambda: values in page.text().replace("`", ""), 60, f"flexions '{values}'")
        page.wait_for(lambda: [round(b) for b in page.bars()[:5]] == [round(v * 100) for v in FLEXIONS], 30,
                      "flexion bars")
        # every robot of the profile posed from its joint states, more than once (they move)
        names = [v.name for v in robot_views(profile)]
        page.wait_for(lambda: (p := _poses_shown(page.text())) and all(p.get(n, 0) >= 2 for n in names), 60,
                      f"poses of {names}")
        text = page.text()
        panel = ROBOT_PANELS.get(profile, RobotPanel())
        if panel.twin_image:
            assert TWIN_CAMERA_LABEL in text
            page.wait_for(lambda: any(w == 160 and h == 120 for _, w, h in page.state()[0]), 30,
                          "the twin's camera picture (160x120)")
        if panel.servo:
            shown = " · ".join(f"{d} {p}" for d, p in zip(contract.FINGER_NAMES, PULSES.split()))
            page.wait_for(lambda: shown in page.text(), 30, f"servo pulses '{shown}'")
            assert re.search(r"frames sent / acked / unacked\s+120 / 118 / 2", page.text()), page.text()
        if panel.kapandji:
            page.wait_for(lambda: re.search(r"Kapandji human\s+7\.0 / 10", page.text())
                          and re.search(r"Kapandji robot\s+6\.5 / 10", page.text()), 30, "both Kapandji scores")
        if panel.arm_state:
            page.wait_for(lambda: re.search(r"\barm\s+armed\b", page.text()), 30, "arm 'armed'")
            feeder.arm_state = "ESTOP"
            page.wait_for(lambda: re.search(r"\barm\s+e-stop latched", page.text()), 30, "arm 'e-stop latched'")
        page.screenshot(tmp_path / f"console_{profile}.png")
    except Exception:
        print(console.tail(30))
        raise
    finally:
        if feeder is not None:
            feeder.close()
        console.stop()

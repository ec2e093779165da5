"""Each node's external interface is data next to the node (``<package>/interface.py``); hand_bringup
reads other nodes through it, never through a literal copy of a node key, a diagnostic key or value,
or log text (a rename in a node would otherwise break the runner's end-of-run checks at run time).
One shutdown order for runner and lifecycle manager."""

from __future__ import annotations

import ast
import pathlib

import hand_bringup
from hand_bringup import bringup
from hand_joint_mapper import interface as mapper_iface
from hand_servo_driver import interface as servo_iface
from hand_tracking import interface as tracker_iface
from hand_twin_mujoco import interface as twin_iface

PKG = pathlib.Path(hand_bringup.__file__).parent
#: The modules that drive and watch the other nodes (runner, launch, lifecycle manager).
READERS = ("runner.py", "runner_core.py", "runner_monitor.py", "runner_recording.py", "launch_common.py",
           "lifecycle_manager.py")
IFACES = (tracker_iface, twin_iface, servo_iface, mapper_iface)


def _interface_literals() -> dict[str, str]:
    """Every diagnostic key/value, status text and log word the interfaces define -> its constant."""
    out = {}
    for mod in IFACES:
        for name, value in vars(mod).items():
            if name.startswith(("KEY_", "WATCHDOG_", "STALE_", "STATUS_", "LOG_")) and isinstance(value, str):
                out[value] = f"{mod.__name__}.{name}"
    return out


#: Methods whose string argument reads a key or a name (``d.get("frames")``, ``name.endswith(": tracking")``).
_READING_CALLS = {"get", "setdefault", "pop", "startswith", "endswith"}


def _read_strings(path: pathlib.Path):
    """``(line, value)`` of every string literal used to *read* something: a subscript
    (``st["frames"]``), a comparison or membership test (``== "finished"``, ``"tracker" in keys``),
    or the argument of get/setdefault/pop/startswith/endswith. Literals that only build output
    (a summary dict, a message, a help text) are not reads."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        candidates = []
        if isinstance(node, ast.Subscript):
            candidates.append(node.slice)
        elif isinstance(node, ast.Compare):
            candidates += [node.left, *node.comparators]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _READING_CALLS:
            candidates += node.args[:1]
        for c in candidates:
            for leaf in ([c] if not isinstance(c, (ast.Tuple, ast.List, ast.Set)) else c.elts):
                if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str):
                    yield leaf.lineno, leaf.value


def test_interface_values_are_what_the_nodes_publish():
    from hand_tracking.tracker_diagnostics import RunState, TrackerReport, build_status

    run = RunState(0.0)
    run.finish()
    report = TrackerReport(node_name=tracker_iface.NODE, state="active", source="video:/x.mp4", period_s=1.0,
                           run=run.snapshot(1.0), dropped_frames=0, rejections={}, calibration="default")
    st = build_status(report)
    assert st.name == tracker_iface.NODE + tracker_iface.STATUS_SUFFIX
    assert st.values[tracker_iface.KEY_WATCHDOG] == tracker_iface.WATCHDOG_FINISHED
    for key in (tracker_iface.KEY_FRAMES, tracker_iface.KEY_FLEXIONS_PUBLISHED, tracker_iface.KEY_BAD_FRAMES,
                tracker_iface.KEY_LAST_ERROR, tracker_iface.KEY_SOURCE):
        assert key in st.values
    # the actuators' status keys: following / safe pose
    assert twin_iface.following({twin_iface.KEY_WATCHDOG: twin_iface.WATCHDOG_OK}) is True
    assert twin_iface.following({twin_iface.KEY_WATCHDOG: "stale"}) is False
    assert servo_iface.following({servo_iface.KEY_STALE: str(False)}) is True
    assert servo_iface.following({servo_iface.KEY_STALE: str(True)}) is False
    assert servo_iface.following({}) is None and twin_iface.following({}) is None
    # the bringup table names its nodes through the interfaces
    assert bringup.NODES[bringup.TRACKER].name == tracker_iface.NODE
    assert bringup.NODES[bringup.TWIN].name == twin_iface.NODE
    assert bringup.NODES[bringup.SERVO_DRIVER].name == servo_iface.NODE
    assert bringup.NODES[bringup.JOINT_MAPPER].name == mapper_iface.NODE


def test_no_literal_copy_of_another_nodes_interface_in_hand_bringup():
    literals = _interface_literals()
    keys = set(bringup.NODES)
    found = []
    for path in sorted(PKG.glob("*.py")):
        for line, value in _read_strings(path):
            if path.name in READERS and value in literals:
                found.append(f"{path.name}:{line}: {value!r} (use {literals[value]})")
            if path.name != "bringup.py" and value in keys:
                found.append(f"{path.name}:{line}: node key {value!r} (use the bringup constant)")
    assert not found, "\n".join(found)


def test_one_shutdown_order():
    for profile in bringup.PROFILES:
        specs = bringup.profile_nodes(profile)
        order = [s.name for s in bringup.shutdown_order(specs)]
        assert bringup.shutdown_order_names([s.name for s in specs]) == order
        actuators = [s.name for s in specs if s.actuator]
        assert order[:len(actuators)] == list(reversed(actuators)), profile
    # the lifecycle manager takes its nodes down in that order (not the activation order reversed)
    src = (PKG / "lifecycle_manager.py").read_text()
    assert "shutdown_order_names(self._names)" in src and "reversed(self._names)" not in src
    assert bringup.shutdown_order_names(["hand_twin", "joint_mapper", "servo_driver", "hand_tracker"]) == [
        "servo_driver", "hand_twin", "hand_tracker", "joint_mapper"]


def test_readme_profile_table_lists_every_profile():
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    rows = {line.split("|")[1].strip().strip("`") for line in readme.splitlines() if line.startswith("| `")}
    assert set(bringup.PROFILES) <= rows, set(bringup.PROFILES) - rows

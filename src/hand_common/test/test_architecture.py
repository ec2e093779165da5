"""The workspace's architecture, checked from the source (issue 17).

1. No import cycle between modules: every ``import`` of every module under ``src/<pkg>/<pkg>/`` and
   ``src/<pkg>/launch/`` is read with ``ast`` - function-level and conditional imports included - and
   the module graph must be acyclic.
2. The package graph points down: a package imports only packages of a strictly lower layer
   (:data:`LAYERS`: hand_msgs and hand_common at the bottom, hand_bringup alone on top), and no
   package but hand_bringup starts another workspace package's nodes (``package="..."`` in a call).
3. Dependencies are complete: every third-party import of a package's code is declared in its
   ``package.xml`` (:data:`IMPORT_KEYS` maps import name -> rosdep key) or is a documented pip-only
   dependency (:data:`PIP_ONLY`, installed by the README's pip step), and every rosdep key a
   ``package.xml`` names is one of :data:`ROSDEP_KEYS` (checked against rosdistro, see there).

Each check is also run on a small synthetic tree with a planted fault, so it is shown to fail.
"""

from __future__ import annotations

import ast
import pathlib
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable

import pytest

SRC = pathlib.Path(__file__).resolve().parents[2]

#: Package layers, bottom (0) to top; a package may import only packages of a lower layer.
LAYERS: dict[str, int] = {
    "hand_msgs": 0, "hand_common": 0,
    "hand_description": 1, "arm_description": 1,
    "hand_tracking": 2, "hand_joint_mapper": 2, "hand_twin_mujoco": 2, "hand_servo_driver": 2,
    "hand_gazebo": 2,
    "hand_retarget": 3, "arm_teleop": 3,
    "hand_console": 4,
    "hand_bringup": 5,
}
TOP = "hand_bringup"

#: Import name -> the rosdep key that installs it.
IMPORT_KEYS: dict[str, str] = {
    "numpy": "python3-numpy", "yaml": "python3-yaml", "cv2": "python3-opencv", "scipy": "python3-scipy",
    "serial": "python3-serial", "PIL": "python3-pil", "matplotlib": "python3-matplotlib",
    "rclpy": "rclpy", "launch": "launch", "launch_ros": "launch_ros",
    "ament_index_python": "ament_index_python", "builtin_interfaces": "builtin_interfaces",
    "std_msgs": "std_msgs", "sensor_msgs": "sensor_msgs", "geometry_msgs": "geometry_msgs",
    "diagnostic_msgs": "diagnostic_msgs", "lifecycle_msgs": "lifecycle_msgs",
    "rcl_interfaces": "rcl_interfaces", "std_srvs": "std_srvs",
}

#: Third-party imports with no rosdep key for Jazzy: installed by the README's pip step (stock
#: recipe) and by tools/requirements.txt (embedded venv). Looked up in ros/rosdistro
#: rosdep/python.yaml (commit 000730dc5f916eb05b15d3f183bd1c17bf1b4722): there is no
#: python3-rosbags-pip key (python3-robodk-pip, python3-rocker, python3-rosdep follow each other);
#: no key for mujoco, yourdfpy, mediapipe, dex_retargeting or scservo_sdk was found either.
PIP_ONLY: dict[str, str] = {
    "mujoco": "mujoco", "yourdfpy": "yourdfpy", "rosbags": "rosbags", "mediapipe": "mediapipe",
    "dex_retargeting": "dex-retargeting", "pinocchio": "pin (comes with dex-retargeting)",
    "scservo_sdk": "ftservo-python-sdk (optional: the real SO-101 bus)",
    "viser": "viser (hand_console's web page)",
    "websockets": "websockets (comes with viser; hand_console.browser.HeadlessClient opens the page's socket)",
    "msgspec": "msgspec (comes with viser; HeadlessClient sends the viser client's camera message)",
    "selenium": "selenium (hand_console.browser drives chromium in the browser test and for make demo)",
    "trimesh": "trimesh (comes with yourdfpy; hand_retarget.urdf_twin converts glTF meshes with it)",
}

#: rosdep keys a package.xml may name. python3-* keys: read in ros/rosdistro rosdep/python.yaml
#: (commit 000730dc5f916eb05b15d3f183bd1c17bf1b4722), each with an ``ubuntu`` entry: python3-numpy,
#: python3-opencv, python3-pil, python3-scipy, python3-serial. python3-yaml, python3-matplotlib and
#: python3-pytest are long-standing keys of the same files (rosdep/python.yaml, rosdep/base.yaml)
#: that were not re-read in that session. The other keys are ROS 2 Jazzy packages (resolved by
#: rosdep from jazzy/distribution.yaml) and this workspace's own packages.
ROSDEP_KEYS: frozenset[str] = frozenset({
    "python3-numpy", "python3-opencv", "python3-pil", "python3-scipy", "python3-serial",
    "python3-yaml", "python3-matplotlib", "python3-pytest",
    "rclpy", "launch", "launch_ros", "ament_index_python", "builtin_interfaces", "std_msgs",
    "sensor_msgs", "geometry_msgs", "diagnostic_msgs", "lifecycle_msgs", "rcl_interfaces", "std_srvs",
    "robot_state_publisher", "joint_state_publisher_gui", "rviz2", "ros_gz_sim", "ros_gz_bridge",
    "ament_cmake", "rosidl_default_generators", "rosidl_default_runtime",
}) | frozenset(LAYERS)


# --- reading the tree ------------------------------------------------------------------------------

def packages(src: pathlib.Path) -> list[str]:
    """Names of the packages under src (directories with a package.xml)."""
    return sorted(p.parent.name for p in src.glob("*/package.xml"))


def code_files(src: pathlib.Path, pkg: str) -> Iterable[tuple[str, pathlib.Path]]:
    """(module name, path) of a package's code: src/<pkg>/<pkg>/**.py and src/<pkg>/launch/*.py."""
    base = src / pkg / pkg
    for f in sorted(base.rglob("*.py")):
        parts = list(f.relative_to(src / pkg).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), f
    for f in sorted((src / pkg / "launch").glob("*.py")):
        yield f"{pkg}.launch.{f.name.removesuffix('.py').replace('.', '_')}", f


def imported_names(path: pathlib.Path) -> list[str]:
    """Every absolute module name a file imports, anywhere in it ('from a.b import c' -> 'a.b.c'
    and 'a.b'; the caller keeps the names that are modules)."""
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append(node.module)
            out += [f"{node.module}.{a.name}" for a in node.names]
    return out


def module_graph(src: pathlib.Path) -> dict[str, set[str]]:
    """Module -> the workspace modules it imports (function-level imports included)."""
    mods = {m: f for pkg in packages(src) for m, f in code_files(src, pkg)}
    graph: dict[str, set[str]] = {}
    for m, f in mods.items():
        graph[m] = {n for n in imported_names(f) if n in mods and n != m}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as [a, b, ..., a], or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (c := visit(m)):
                return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (c := visit(n)):
            return c
    return None


def layer_violations(src: pathlib.Path, layers: dict[str, int], top: str) -> list[str]:
    """Imports of a package from the same or a higher layer, and workspace nodes started by a
    package other than ``top``."""
    pkgs = set(packages(src))
    bad = []
    for pkg in sorted(pkgs):
        for mod, f in code_files(src, pkg):
            for name in imported_names(f):
                other = name.split(".")[0]
                if other in pkgs and other != pkg and layers[other] >= layers[pkg]:
                    bad.append(f"{mod} imports {other} (layer {layers[other]} >= {pkg}'s {layers[pkg]})")
            if pkg == top:
                continue
            for node in ast.walk(ast.parse(f.read_text())):
                if isinstance(node, ast.Call):
                    for kw in node.keywords:
                        if (kw.arg == "package" and isinstance(kw.value, ast.Constant)
                                and kw.value.value in pkgs and kw.value.value != pkg):
                            bad.append(f"{mod} starts a node of {kw.value.value} (only {top} may)")
    return sorted(set(bad))


def declared_keys(src: pathlib.Path, pkg: str) -> set[str]:
    """The dependency keys of src/<pkg>/package.xml (every *depend element)."""
    root = ET.parse(src / pkg / "package.xml").getroot()
    return {e.text.strip() for e in root if e.tag.endswith("depend") and e.text}


def dependency_problems(src: pathlib.Path, import_keys: dict[str, str], pip_only: dict[str, str],
                        rosdep_keys: frozenset[str]) -> list[str]:
    """Third-party imports without a declared key, imports nobody knows, and unknown keys."""
    pkgs = set(packages(src))
    bad = []
    for pkg in sorted(pkgs):
        keys = declared_keys(src, pkg)
        bad += [f"{pkg}/package.xml: '{k}' is not a known Jazzy rosdep key" for k in sorted(keys - rosdep_keys)]
        for mod, f in code_files(src, pkg):
            for name in imported_names(f):
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in pip_only:
                    continue
                if top in pkgs:
                    if top != pkg and top not in keys:
                        bad.append(f"{mod} imports {top}, not declared in {pkg}/package.xml")
                elif top not in import_keys:
                    bad.append(f"{mod} imports {top}: neither a rosdep key nor a documented pip-only dependency")
                elif import_keys[top] not in keys:
                    bad.append(f"{mod} imports {top}, but {pkg}/package.xml lacks '{import_keys[top]}'")
    return sorted(set(bad))


# --- the workspace ---------------------------------------------------------------------------------

def test_every_package_has_a_layer():
    assert set(packages(SRC)) == set(LAYERS)


def test_no_import_cycle_between_modules():
    graph = module_graph(SRC)
    assert len(graph) > 100  # really read the workspace
    assert find_cycle(graph) is None


def test_package_graph_points_down_and_only_bringup_starts_other_packages_nodes():
    assert layer_violations(SRC, LAYERS, TOP) == []


def test_every_third_party_import_is_declared_and_every_key_exists():
    assert dependency_problems(SRC, IMPORT_KEYS, PIP_ONLY, ROSDEP_KEYS) == []


def test_hand_description_takes_the_digit_names_from_the_contract():
    from hand_common.contract import FINGER_NAMES
    from hand_description import description, render

    assert description.DIGITS is FINGER_NAMES and render.DIGITS is FINGER_NAMES


# --- planted faults on a synthetic tree --------------------------------------------------------------

def _tree(tmp_path: pathlib.Path, files: dict[str, str], deps: dict[str, list[str]]) -> pathlib.Path:
    for pkg, keys in deps.items():
        (tmp_path / pkg / pkg).mkdir(parents=True, exist_ok=True)
        (tmp_path / pkg / pkg / "__init__.py").write_text("")
        body = "".join(f"  <exec_depend>{k}</exec_depend>\n" for k in keys)
        (tmp_path / pkg / "package.xml").write_text(f"<package format=\"3\">\n  <name>{pkg}</name>\n{body}</package>\n")
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_a_planted_function_level_cycle_is_found(tmp_path):
    src = _tree(tmp_path, {
        "low/low/a.py": "from low.b import f\n",
        "low/low/b.py": "def f():\n    from low import a\n    return a\n",
        "low/low/c.py": "import low.a\n",
    }, {"low": []})
    cycle = find_cycle(module_graph(src))
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"low.a", "low.b"}
    (src / "low/low/b.py").write_text("def f():\n    return 1\n")
    assert find_cycle(module_graph(src)) is None


def test_a_planted_upward_import_and_a_foreign_node_start_are_found(tmp_path):
    src = _tree(tmp_path, {
        "low/low/a.py": "def g():\n    import top.x\n",
        "mid/launch/m.launch.py": "def generate():\n    return [Node(package='low', executable='n')]\n",
        "top/launch/t.launch.py": "def generate():\n    return [Node(package='low', executable='n')]\n",
        "top/top/x.py": "import low.a\n",
    }, {"low": [], "mid": [], "top": ["low"]})
    bad = layer_violations(src, {"low": 0, "mid": 1, "top": 2}, "top")
    assert bad == ["low.a imports top (layer 2 >= low's 0)", "mid.launch.m_launch starts a node of low (only top may)"]


def test_a_planted_undeclared_import_and_an_unknown_key_are_found(tmp_path):
    src = _tree(tmp_path, {
        "low/low/a.py": "import numpy\nimport yaml\nimport mujoco\n",
        "top/top/x.py": "def f():\n    import cv2\n    import low.a\n    import frobnicate\n",
    }, {"low": ["python3-numpy", "python3-yaml"], "top": ["python3-opencv", "python3-nonexistent"]})
    known = frozenset({"python3-numpy", "python3-yaml", "python3-opencv", "low", "top"})
    bad = dependency_problems(src, IMPORT_KEYS, PIP_ONLY, known)
    assert bad == [
        "top.x imports frobnicate: neither a rosdep key nor a documented pip-only dependency",
        "top.x imports low, not declared in top/package.xml",
        "top/package.xml: 'python3-nonexistent' is not a known Jazzy rosdep key",
    ]
    (src / "low/package.xml").write_text("<package format=\"3\"><name>low</name>"
                                         "<exec_depend>python3-numpy</exec_depend></package>")
    assert "low.a imports yaml, but low/package.xml lacks 'python3-yaml'" in dependency_problems(
        src, IMPORT_KEYS, PIP_ONLY, known)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

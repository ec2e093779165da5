"""Where the hand model files are: the installed share directory, or the source tree.

Every path is resolved through ``ament_index_python`` (``get_package_share_directory``) when the
package is installed (``colcon build``; stock Jazzy or the embedded ``install/``), and falls back
to the source tree this module lives in when it is not (running from a checkout). No rclpy.

Files (``side`` is ``"right"`` or ``"left"``; the left hand is the mirror image of the right one,
generated from the same description)::

    urdf/hand.urdf   urdf/hand_left.urdf     URDF for robot_state_publisher / RViz
    mjcf/hand.xml    mjcf/hand_left.xml      MJCF of the hand alone (MuJoCo)
    mjcf/scene.xml   mjcf/scene_left.xml     hand-written scenes that <include> the hand
    config/hand.yaml                         the one description both are generated from
    rviz/hand.rviz
"""

from __future__ import annotations

import os
import pathlib

PACKAGE = "hand_description"
SIDES = ("right", "left")

#: The package directory next to this module (``src/hand_description`` when running from a checkout).
SOURCE_DIR = pathlib.Path(__file__).resolve().parent.parent


def source_dir() -> pathlib.Path | None:
    """The package's source directory, if one can be found: next to this module (running from a
    checkout), else ``$HAND_TELEOP_ROOT/src/hand_description`` (set by tools/env.sh). None otherwise."""
    candidates = [SOURCE_DIR]
    root = os.environ.get("HAND_TELEOP_ROOT")
    if root:
        candidates.append(pathlib.Path(root) / "src" / PACKAGE)
    for c in candidates:
        if (c / "config" / "hand.yaml").is_file() and (c / "urdf" / "hand.urdf").is_file():
            return c
    return None


def _check_side(side: str) -> str:
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    return side


def _suffix(side: str) -> str:
    return "" if _check_side(side) == "right" else "_left"


def share_dir() -> pathlib.Path:
    """The package's share directory (installed), or its source directory when not installed.

    The installed share is used only when it really holds the models (``urdf/hand.urdf``), so a
    half-built install never shadows a complete source tree. Raises FileNotFoundError when
    neither exists.
    """
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        share = pathlib.Path(get_package_share_directory(PACKAGE, print_warning=False))
        if (share / "urdf" / "hand.urdf").is_file():
            return share
    except ImportError:  # no ament_index_python at all: plain source checkout
        pass
    except (PackageNotFoundError, ValueError, LookupError, OSError):  # not installed, or no ament index
        pass
    src = source_dir()
    if src is None:
        raise FileNotFoundError(
            f"{PACKAGE} is neither installed (ament index) nor available as a source tree; "
            "build the workspace (colcon build) and source install/setup.bash")
    return src


def description_path() -> pathlib.Path:
    """The parametric description (YAML) the URDF and MJCF are generated from."""
    return share_dir() / "config" / "hand.yaml"


def urdf_path(side: str = "right") -> pathlib.Path:
    """The generated URDF of the ``side`` hand (``urdf/hand.urdf`` or ``urdf/hand_left.urdf``)."""
    return share_dir() / "urdf" / f"hand{_suffix(side)}.urdf"


def mjcf_path(side: str = "right") -> pathlib.Path:
    """The generated MJCF of the ``side`` hand alone (``mjcf/hand.xml`` or ``mjcf/hand_left.xml``)."""
    return share_dir() / "mjcf" / f"hand{_suffix(side)}.xml"


def scene_path(side: str = "right") -> pathlib.Path:
    """The MuJoCo scene (floor, light, camera ``front``) that includes the ``side`` hand."""
    return share_dir() / "mjcf" / f"scene{_suffix(side)}.xml"


def rviz_config_path() -> pathlib.Path:
    """The RViz configuration (RobotModel + TF, fixed frame ``palm``)."""
    return share_dir() / "rviz" / "hand.rviz"


# --- the dexterous hand (hand_description.dex; used by hand_retarget) ---------------------------------

def dex_description_path() -> pathlib.Path:
    """The dexterous hand's description (``config/dex_hand.yaml``)."""
    return share_dir() / "config" / "dex_hand.yaml"


def dex_urdf_path() -> pathlib.Path:
    """The generated URDF of the dexterous (fully actuated, right) hand (``urdf/dex_hand.urdf``)."""
    return share_dir() / "urdf" / "dex_hand.urdf"


def dex_mjcf_path() -> pathlib.Path:
    """The generated MJCF of the dexterous hand alone (``mjcf/dex_hand.xml``)."""
    return share_dir() / "mjcf" / "dex_hand.xml"


def dex_scene_path() -> pathlib.Path:
    """The MuJoCo scene (floor, light, cameras ``front`` and ``side``) that includes the dexterous hand."""
    return share_dir() / "mjcf" / "dex_scene.xml"

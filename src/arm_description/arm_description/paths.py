"""Where the arm model files are: the installed share directory, or the source tree. No rclpy.

    config/so101.yaml   the one description (URDF and MJCF are generated from it)
    urdf/so101.urdf     URDF for robot_state_publisher / RViz (generated)
    mjcf/so101.xml      MJCF of the arm alone (generated)
    mjcf/scene.xml      hand-written scene: floor, light, cameras `front` and `side`
"""

from __future__ import annotations

import pathlib

PACKAGE = "arm_description"
SOURCE_DIR = pathlib.Path(__file__).resolve().parent.parent


def share_dir() -> pathlib.Path:
    """The installed share directory when it holds the models, else the source directory next to
    this module. FileNotFoundError when neither has them."""
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

        share = pathlib.Path(get_package_share_directory(PACKAGE, print_warning=False))
        if (share / "mjcf" / "so101.xml").is_file():
            return share
    except ImportError:
        pass
    except (PackageNotFoundError, ValueError, LookupError, OSError):
        pass
    if (SOURCE_DIR / "mjcf" / "so101.xml").is_file():
        return SOURCE_DIR
    raise FileNotFoundError(f"{PACKAGE} is neither installed (ament index) nor a source tree next to {__file__}")


def description_path() -> pathlib.Path:
    return share_dir() / "config" / "so101.yaml"


def urdf_path() -> pathlib.Path:
    return share_dir() / "urdf" / "so101.urdf"


def mjcf_path() -> pathlib.Path:
    return share_dir() / "mjcf" / "so101.xml"


def scene_path() -> pathlib.Path:
    return share_dir() / "mjcf" / "scene.xml"

import os
from glob import glob

from setuptools import find_packages, setup

package_name = "hand_gazebo"


def tree(directory: str) -> list[tuple[str, list[str]]]:
    """(install dir, files) pairs that install `directory` into share/<package>/ recursively."""
    pairs = []
    for dirpath, _, filenames in os.walk(directory):
        files = [os.path.join(dirpath, f) for f in filenames if not f.endswith((".pyc", "~"))]
        if files:
            pairs.append((os.path.join("share", package_name, dirpath), files))
    return pairs


data_files = [
    ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
    ("share/" + package_name, ["package.xml"] + glob("README.md")),
]
for d in ["config", "worlds"]:
    data_files += tree(d)

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=data_files,
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="hand-teleop maintainers",
    maintainer_email="maintainers@hand-teleop.invalid",
    description="Gazebo (gz sim Harmonic) path for stock ROS 2 Jazzy installs: an SDF world with both hands generated "
                "from hand_description, a ros_gz_bridge configuration and the flexion -> joint command node.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "gz_commander = hand_gazebo.commander_node:main",
            "generate_gz_world = hand_gazebo.world:main",
        ],
    },
)

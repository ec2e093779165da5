import os
from glob import glob

from setuptools import find_packages, setup

package_name = "hand_joint_mapper"


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
for d in ['config']:
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
    description="Per-joint flexions to any URDF's joints: joint mapper lifecycle node (/hand/joint_flexions -> /joint_states), mapping tables, /joint_states limit checker, pose pictures.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "joint_mapper = hand_joint_mapper.joint_mapper_node:main",
            "check_joint_states = hand_joint_mapper.joint_state_check:main",
            "pose_picture = hand_joint_mapper.pose_picture:main",
            "derive_joint_map = hand_joint_mapper.derive_joint_map:main",
        ],
    },
)

import os
from glob import glob

from setuptools import find_packages, setup

package_name = "hand_bringup"


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
for d in ['launch', 'config']:
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
    description="Top of the workspace: every launch file (sim, rviz, hardware, two_hands, arm, dex, gazebo), the node/profile table, the lifecycle manager, the embedded runner with recording, and the demos.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "lifecycle_manager = hand_bringup.lifecycle_manager:main",
            "runner = hand_bringup.cli:main",
            "arm_demo = hand_bringup.arm_demo:main",
            "dex_demo = hand_bringup.dex_demo:main",
            "bench_kill = hand_bringup.bench_kill:main",
            "bench_pipeline = hand_bringup.bench_pipeline:main",
            "bench_link = hand_bringup.bench_link:main",
        ],
    },
)

import os
from glob import glob

from setuptools import find_packages, setup

package_name = "arm_teleop"


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
for d in ["config"]:
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
    description="Gesture teleoperation of the SO-101 arm: gesture classifier, safety state machine, Cartesian/joint "
                "modes with damped-least-squares IK, arm teleop node, MuJoCo arm twin, Feetech STS3215 bus driver "
                "with a simulated bus.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "arm_teleop = arm_teleop.teleop_node:main",
            "arm_twin = arm_teleop.twin_node:main",
            "arm_driver = arm_teleop.driver_node:main",
            "sim_sts_bus = arm_teleop.sim_bus:main",
            "arm_keys = arm_teleop.keys:main",
            "bench_driver_memory = arm_teleop.bench_driver_memory:main",
        ],
    },
)

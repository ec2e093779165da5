import os
from glob import glob

from setuptools import find_packages, setup

package_name = "hand_servo_driver"


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
for d in ['launch', 'config', 'firmware']:
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
    description="Driver for SG90 hobby servos on a microcontroller over USB serial: framed, checksummed protocol, firmware, simulated board, lifecycle node following /hand/target_flexions safely.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "servo_driver = hand_servo_driver.driver_node:main",
            "sim_board = hand_servo_driver.sim_board:main",
            "bench_driver = hand_servo_driver.bench_driver:main",
            "bench_faults = hand_servo_driver.bench_faults:main",
        ],
    },
)

from glob import glob

from setuptools import find_packages, setup

package_name = "hand_console"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(exclude=["test"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"] + glob("README.md")),
        ("share/" + package_name + "/config", glob("config/*.yaml")),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="hand-teleop maintainers",
    maintainer_email="maintainers@hand-teleop.invalid",
    description="Operator console in the browser (viser): the tracker's camera with landmarks and gate, "
                "flexion bars and plot, the robot's URDF, figures, guided calibration, live parameters, bag replay.",
    license="Apache-2.0",
    entry_points={
        "console_scripts": [
            "console = hand_console.console_node:main",
        ],
    },
)

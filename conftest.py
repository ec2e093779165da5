"""Repository-wide pytest set-up: the environment every test relies on and shared fixtures."""

import os
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent
SHARED_MEDIA = ROOT.parent / "shared" / "media"
VIDEO = SHARED_MEDIA / "human_hand_video.mp4"


def pytest_configure(config):
    # Tests start ROS nodes: traffic must stay on this machine, on a private domain.
    if os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE") != "LOCALHOST":
        raise pytest.UsageError("run tests through `make test` (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST)")
    if not os.environ.get("ROS_DOMAIN_ID"):
        raise pytest.UsageError("set a private ROS_DOMAIN_ID (make test picks one)")


@pytest.fixture(scope="session")
def video_path() -> pathlib.Path:
    """The shared recording of a real right hand (see ../shared/media/README.md)."""
    if not VIDEO.exists():
        pytest.fail(f"{VIDEO} is missing: the tests need ../shared beside the repository")
    return VIDEO

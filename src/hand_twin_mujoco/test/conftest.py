"""Fixtures of the twin's tests: the fixture scene (always) and the real hand_description scene."""

from __future__ import annotations

import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from fixture_hand import fixture_xml, real_scene  # noqa: E402


@pytest.fixture(scope="session")
def fixture_scene(tmp_path_factory) -> str:
    """Path of the fixture scene (5 digits, agreed names) written to a temp dir."""
    path = tmp_path_factory.mktemp("twin_fixture") / "fixture_scene.xml"
    path.write_text(fixture_xml())
    return str(path)


@pytest.fixture(scope="session")
def hand_scene(fixture_scene) -> str:
    """The scene the acceptance tests run on: the real one when it exists, else the fixture."""
    return real_scene() or fixture_scene

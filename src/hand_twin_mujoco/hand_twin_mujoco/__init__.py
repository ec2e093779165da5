"""hand_twin_mujoco: MuJoCo digital twin of the tendon-driven robot hand.

Headless by default: MuJoCo picks its OpenGL backend from ``MUJOCO_GL`` when it is first imported;
without a ``DISPLAY`` (and without an explicit choice) the twin uses ``egl`` for offscreen rendering.
This runs before any submodule imports mujoco.
"""

import os

if not os.environ.get("DISPLAY"):
    os.environ.setdefault("MUJOCO_GL", "egl")

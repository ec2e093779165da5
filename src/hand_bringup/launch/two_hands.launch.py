"""Both operator hands → the two-hand MuJoCo twin: ``ros2 launch hand_bringup two_hands.launch.py
source:=camera:0 [headless:=true]``. The tracker runs with ``hands: two`` (identity by continuity,
``/hand/left/...`` and ``/hand/right/...``), the twin with ``hands: two`` (hand_description's
``mjcf/scene_two_hands.xml``, each hand following its own operator hand)."""

from hand_bringup.launch_common import profile_launch


def generate_launch_description():
    return profile_launch("two_hands")

"""hand_description: the tendon-driven robot hand, described once and generated into URDF and MJCF.

Modules (none imports rclpy): ``paths`` (where the files are), ``description`` (load/validate/mirror
``config/hand.yaml``, derived physics), ``generate`` (URDF + MJCF writer, ``generate_hand_models``),
``agreement`` (URDF <-> MJCF check, bend signs), ``render`` (``render_hand``, the flexion -> tendon
length map), ``curl_check`` (proportional-curl benchmark). See README.md.
"""

"""hand_retarget: dexterous teleoperation (preprocessing, dex-retargeting, safety filter, Kapandji, twin)."""

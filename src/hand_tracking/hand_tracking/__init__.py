"""hand_tracking: Vision half of webcam hand teleoperation."""

"""Gesture teleoperation of the SO-101 arm: classifier, state machine, IK, nodes (see README.md)."""

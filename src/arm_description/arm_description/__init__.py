"""The SO-101 arm from one description: generated URDF and MJCF (see README.md)."""

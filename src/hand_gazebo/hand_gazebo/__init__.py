"""Gazebo (gz sim) path: SDF world + ros_gz_bridge configuration generated from hand_description."""

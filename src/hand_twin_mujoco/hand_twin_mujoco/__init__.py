"""hand_twin_mujoco: MuJoCo digital twin of the tendon-driven robot hand."""

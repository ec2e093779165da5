"""Names of the arm's nodes and topics, defined once (launch files, runner and tests import them).

QoS: ``hand_common.contract`` STREAM (reliable, keep last 10) for everything published;
actuators subscribe to ``/arm/joint_commands`` with LATEST (reliable, keep last 1).
"""

TELEOP_NODE = "arm_teleop"
TWIN_NODE = "arm_twin"
DRIVER_NODE = "arm_driver"

#: sensor_msgs/JointState: names = arm_model.ALL_JOINTS, position = target angle (rad), stamp = capture.
JOINT_COMMANDS = "/arm/joint_commands"
#: std_msgs/String: one JSON object per tracker frame (state, mode, gesture, gripper, ...).
TELEOP_STATE = "/arm/teleop_state"
#: sensor_msgs/JointState: manual/keyboard joint command (used only in MANUAL).
MANUAL_COMMAND = "/arm/manual_command"
#: sensor_msgs/JointState: the MuJoCo twin's measured joints (position rad, velocity rad/s, effort N m).
TWIN_JOINT_STATES = "/arm_twin/joint_states"
#: sensor_msgs/JointState: the real (or simulated-bus) servos' measured joints, from the driver.
DRIVER_JOINT_STATES = "/arm/joint_states"

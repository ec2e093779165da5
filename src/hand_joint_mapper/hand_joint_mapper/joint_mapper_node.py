"""joint_mapper: 15 human joint flexions → a URDF robot hand's ``/joint_states`` (lifecycle node).

Subscribes ``/hand/joint_flexions`` (sensor_msgs/JointState, names = contract.JOINT_NAMES,
positions = flexion 0 open … 1 closed, stamped at camera capture; QoS STREAM) and publishes
``/joint_states`` (sensor_msgs/JointState, the URDF's joint names, positions in rad/m clamped
inside the URDF limits, same stamp; QoS STREAM) for robot_state_publisher → /tf → RViz.
``/diagnostics`` (diagnostic_msgs/DiagnosticArray) once per ``diagnostics_period_s`` while active.

Lifecycle (like ros2/demos lifecycle_py):

- ``configure``: gets the URDF — the ``robot_description`` parameter, else the transient-local
  ``/robot_description`` topic (waits up to ``description_timeout_s``), else the file
  ``urdf_path`` (default: hand_description's URDF) — parses every joint limit, loads and checks
  the mapping table ``mapping_file``. Any mistake (a row naming a joint the URDF lacks, a mapped
  joint without ``<limit>``, a continuous joint without bounds, a URDF limit that differs from the
  table's expected ``limits`` …) returns FAILURE with an error log naming the joint; the node
  stays unconfigured, never half-configured. URDF joints nothing maps: one warning.
- ``activate``: starts publishing; ``deactivate`` stops; ``cleanup`` releases the mapping,
  publishers and subscription; ``shutdown`` does the same from any state.

Parameters are read at ``configure`` (change them, then cleanup + configure), except
``stamp_source`` and ``diagnostics_period_s`` which apply at once.
"""

from __future__ import annotations

import os
import sys

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.lifecycle import State, TransitionCallbackReturn
from rclpy.wait_for_message import wait_for_message
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from hand_common import contract
from hand_common.node_tools import SafeLifecycleNode, run
from hand_common.param_spec import ParamSpec
from hand_joint_mapper.joint_mapping import JointMapper, MappingError, load_table, load_urdf_file

STAMP_SOURCES = ("capture", "now")
DEFAULT_TABLE = "config/joint_map_hand.yaml"

PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("robot_description", "",
              "URDF XML. Empty: take it from the /robot_description topic, else from urdf_path. Read at configure."),
    ParamSpec("description_timeout_s", 2.0,
              "How long configure waits for the transient-local /robot_description topic when the "
              "robot_description parameter is empty; 0 skips the topic.", (0.0, 60.0)),
    ParamSpec("urdf_path", "",
              "URDF file used when neither the parameter nor the topic gives one. Empty: hand_description's URDF."),
    ParamSpec("mapping_file", DEFAULT_TABLE,
              "Mapping table YAML (URDF joint, human joint, open end, scale/offset, expected limits). "
              "Relative paths not found from the working directory are taken in hand_joint_mapper's share dir."),
    ParamSpec("publish_unmapped", True,
              "Publish movable URDF joints that no row maps at their rest position (0 clamped into their "
              "limits), so robot_state_publisher has a transform for every link."),
    ParamSpec("stamp_source", "capture",
              "'capture': /joint_states carries the camera capture stamp of the flexions (TF matches the "
              "frame it came from); 'now': stamp at publication.", live=True, choices=STAMP_SOURCES),
    ParamSpec("diagnostics_period_s", 1.0,
              "Period of the /diagnostics status while active; 0 disables it.", (0.0, 60.0), live=True),
)
_BY_NAME = {s.name: s for s in PARAMS}


def share_dir() -> str:
    """hand_joint_mapper's installed share directory (config files live there)."""
    from ament_index_python.packages import get_package_share_directory

    return get_package_share_directory("hand_joint_mapper")


def resolve_table_path(value: str) -> str:
    """``mapping_file`` → absolute path: '' → the shipped hand table; a relative path that does
    not exist from the working directory is taken relative to hand_joint_mapper's share directory."""
    value = value or DEFAULT_TABLE
    if os.path.isabs(value) or os.path.exists(value):
        return os.path.abspath(value)
    return os.path.join(share_dir(), value)


def default_urdf_path() -> str:
    """hand_description's URDF; MappingError if that package is not installed."""
    try:
        from hand_description.paths import urdf_path
    except ImportError as exc:
        raise MappingError(f"urdf_path is empty and hand_description's URDF is unavailable ({exc})") from None
    return str(urdf_path())


class JointMapperNode(SafeLifecycleNode):
    """Lifecycle node mapping /hand/joint_flexions onto /joint_states of a URDF (see module doc)."""

    def __init__(self, **kwargs):
        super().__init__(contract.JOINT_MAPPER_NODE, **kwargs)
        self.declare_params(PARAMS)
        self._mapper: JointMapper | None = None
        self._pub = None
        self._sub = None
        self._diag_pub = None
        self._diag_timer = None
        self._source = ""
        self._reset_counters()
        # node_tools.run() spins with rclpy's signal handlers off; an executor with nothing to do
        # blocks in rcl_wait and Python never runs the SIGINT handler. This idle timer wakes it 4x/s
        # so Ctrl-C / SIGINT stops an idle mapper (remove once run() spins with a timeout).
        self._wakeup = self.create_timer(0.25, lambda: None)

    # --- parameters ------------------------------------------------------------------------------
    def check_parameters(self, changes, values) -> str | None:
        """On-set: the files named must exist (the base checked ranges, choices and the
        configure-time rule)."""
        if (path := changes.get("urdf_path")) and not os.path.isfile(path):
            return f"urdf_path '{path}' is not a file"
        if "mapping_file" in changes and not os.path.isfile(resolve_table_path(changes["mapping_file"])):
            return (f"mapping_file '{changes['mapping_file']}' not found "
                    f"(resolved to {resolve_table_path(changes['mapping_file'])})")
        return None

    def apply_parameters(self, changes) -> None:
        """Post-set: a new diagnostics period restarts a running timer (stamp_source is read per message)."""
        if "diagnostics_period_s" in changes and self._diag_timer is not None:
            self._restart_diag_timer(float(changes["diagnostics_period_s"]))

    def _param(self, name: str):
        return self.get_parameter(name).value

    def _reset_counters(self) -> None:
        self._received = self._published = self._rejected = self._clamped = self._stale = 0
        self._last_stamp_ns = -1
        self._last_problem = ""
        self._warned_zero_stamp = False

    # --- URDF source -----------------------------------------------------------------------------
    def _get_urdf(self) -> tuple[str, str]:
        """(URDF XML, where it came from); MappingError when no source gives one."""
        text = self._param("robot_description")
        if text.strip():
            return text, "parameter robot_description"
        timeout = float(self._param("description_timeout_s"))
        if timeout > 0.0:
            ok, msg = wait_for_message(String, self, contract.TOPIC_ROBOT_DESCRIPTION,
                                       qos_profile=contract.qos(contract.LATCHED), time_to_wait=timeout)
            if ok and msg.data.strip():
                return msg.data, f"topic {contract.TOPIC_ROBOT_DESCRIPTION}"
            self.get_logger().info(f"nothing on {contract.TOPIC_ROBOT_DESCRIPTION} within {timeout:g} s; "
                                   f"falling back to urdf_path")
        path = self._param("urdf_path") or default_urdf_path()
        return load_urdf_file(path), f"file {os.path.abspath(path)}"

    # --- lifecycle -------------------------------------------------------------------------------
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        why = _BY_NAME["stamp_source"].problem(self._param("stamp_source"))
        if why:
            self.get_logger().error(f"configure failed: {why}")
            return TransitionCallbackReturn.FAILURE
        table_path = resolve_table_path(self._param("mapping_file"))
        try:
            urdf, source = self._get_urdf()
            table = load_table(table_path)
            mapper = JointMapper.from_urdf(urdf, table, bool(self._param("publish_unmapped")))
        except MappingError as exc:
            joint = f" [joint {exc.joint}]" if exc.joint else ""
            self.get_logger().error(f"configure failed{joint}: {exc} (mapping table {table_path})")
            return TransitionCallbackReturn.FAILURE
        for w in mapper.warnings:
            self.get_logger().warning(w)
        self._mapper, self._source = mapper, source
        self._reset_counters()
        self._pub = self.create_lifecycle_publisher(JointState, contract.TOPIC_JOINT_STATES,
                                                    contract.qos(contract.STREAM))
        self._diag_pub = self.create_lifecycle_publisher(DiagnosticArray, contract.TOPIC_DIAGNOSTICS,
                                                         contract.qos(contract.STREAM))
        self._sub = self.create_subscription(JointState, contract.TOPIC_JOINT_FLEXIONS, self._on_flexions,
                                             contract.qos(contract.STREAM))
        self.get_logger().info(
            f"configured: robot '{mapper.robot_name}' from {source}, table {table_path}: "
            f"{len(mapper.mapped)} mapped, {len(mapper.mimics)} mimic, {len(mapper.rest)} held joints; "
            + ", ".join(f"{m.name}: {m.open_pos:g}->{m.closed_pos:g}" for m in mapper.mapped))
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        self._restart_diag_timer(float(self._param("diagnostics_period_s")))
        return super().on_activate(state)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        self._restart_diag_timer(0.0)
        return super().on_deactivate(state)

    def _release(self) -> None:
        """The release hook (cleanup, shutdown, error): the mapping, publishers, subscription, timer."""
        self._restart_diag_timer(0.0)
        if self._sub is not None:
            self.destroy_subscription(self._sub)
        for pub in (self._pub, self._diag_pub):
            if pub is not None:
                self.destroy_lifecycle_publisher(pub)
        self._sub = self._pub = self._diag_pub = None
        self._mapper = None

    def _restart_diag_timer(self, period: float) -> None:
        if self._diag_timer is not None:
            self.destroy_timer(self._diag_timer)
            self._diag_timer = None
        if period > 0.0:
            self._diag_timer = self.create_timer(period, self._publish_diagnostics)

    # --- data ------------------------------------------------------------------------------------
    def _on_flexions(self, msg: JointState) -> None:
        mapper, pub = self._mapper, self._pub
        if mapper is None or pub is None or self.lifecycle_state != "active":
            return
        self._received += 1
        try:
            flex = contract.parse_flexions(msg.name, msg.position, contract.JOINT_NAMES)
            result = mapper.map(flex)
        except ValueError as exc:  # FlexionContractError is a ValueError
            self._rejected += 1
            self._last_problem = f"rejected input: {exc}"
            self.get_logger().warning(f"dropped a {contract.TOPIC_JOINT_FLEXIONS} message: {exc}",
                                      throttle_duration_sec=2.0)
            return
        stamp = msg.header.stamp
        stamp_ns = stamp.sec * 1_000_000_000 + stamp.nanosec
        if self._param("stamp_source") == "now" or stamp_ns == 0:
            if stamp_ns == 0 and not self._warned_zero_stamp:
                self._warned_zero_stamp = True
                self.get_logger().warning(f"{contract.TOPIC_JOINT_FLEXIONS} carries zero stamps; stamping "
                                          f"/joint_states with the time of publication instead")
            stamp = self.get_clock().now().to_msg()
        elif stamp_ns <= self._last_stamp_ns:
            # robot_state_publisher would silently ignore it (older than what it last published).
            self._stale += 1
            self._last_problem = f"stale stamp {stamp_ns} ns <= previous {self._last_stamp_ns} ns"
            self.get_logger().warning(f"dropped a flexion message whose stamp does not advance "
                                      f"({self._last_problem})", throttle_duration_sec=2.0)
            return
        else:
            self._last_stamp_ns = stamp_ns
        if result.clamped:
            self._clamped += 1
            self.get_logger().warning(f"clamped to URDF limits: {list(result.clamped)}", throttle_duration_sec=5.0)
        out = JointState()
        out.header.stamp = stamp
        out.name = list(mapper.names)
        out.position = [float(v) for v in result.positions]
        pub.publish(out)
        self._published += 1

    def _publish_diagnostics(self) -> None:
        if self._diag_pub is None:
            return
        problems = self._rejected + self._stale
        status = DiagnosticStatus(
            level=DiagnosticStatus.WARN if problems else DiagnosticStatus.OK,
            name=f"{self.get_name()}: flexions -> {contract.TOPIC_JOINT_STATES}",
            hardware_id=self._mapper.robot_name if self._mapper else "",
            message=self._last_problem or "mapping",
            values=[KeyValue(key=k, value=str(v)) for k, v in (
                ("urdf_source", self._source), ("received", self._received), ("published", self._published),
                ("rejected", self._rejected), ("stale_stamps_dropped", self._stale),
                ("clamped_messages", self._clamped))],
        )
        arr = DiagnosticArray(status=[status])
        arr.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(arr)


def main(args=None) -> None:
    sys.exit(run(JointMapperNode, args, events=True))  # no async callbacks: the EventsExecutor (node_tools.run)


if __name__ == "__main__":
    main()

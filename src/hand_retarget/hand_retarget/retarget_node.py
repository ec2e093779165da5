"""``dex_retarget``: tracked hand landmarks -> safe joint commands of the dexterous hand (lifecycle node).

Subscribes ``/hand/landmarks`` (hand_msgs/HandLandmarksArray, QoS STREAM): the hand chosen by
``hand`` (best score, or the operator's left/right hand) — unless the tracker's frame-quality gate
refused it (``accepted`` false with a ``rejection`` other than ``not_followed``: a miss, the target
holds) — is preprocessed (palm frame, chirality,
bone-length calibration, rejection of collapsed skeletons), retargeted with dex-retargeting
(DexPilot or vector, ``method``) onto hand_description's dexterous URDF, and becomes the safety
filter's target. The safety filter (joint limits, step, velocity and acceleration caps,
finger-crossing clamp) steps, and ``/dex_hand/joint_commands`` (sensor_msgs/JointState, URDF names,
rad) is published, as soon as a new target arrives (the command follows the camera, not the
tick) and on a timer at ``command_rate_hz`` between them; each step integrates the time elapsed
since the previous one (at most one period). A command is stamped with the capture time of the
landmarks its target came from (now, once it holds the open pose). Without an accepted frame for
``target_timeout_s`` the target becomes the open pose (reached within the same caps).

Kapandji scores (sensor_msgs/JointState, see :mod:`hand_retarget.topics`):
``/dex_hand/kapandji/human`` for every accepted frame (the operator's own geometry) and
``/dex_hand/kapandji/robot`` from forward kinematics of the newest message on ``measured_topic``
(default the dexterous twin's ``/dex_twin/joint_states``, 100 Hz), at most ``kapandji_robot_rate_hz``
times a second (a timer scores the newest state when one arrived since the last score; 0 = every
message): the twin's rate of FK and Kapandji in the node that also retargets every frame cost
~30 % of its CPU and queued ahead of the landmarks.
``/diagnostics``: frames, misses and the last miss reason, retargeting time, filter rejections,
``image_pinches`` (frames whose world thumb was moved onto the fingertip the picture showed it on,
:func:`hand_retarget.kapandji.image_pinch`).

Lifecycle: configure loads the description and builds the pipeline (dex-retargeting, pinocchio),
creates publishers; activate subscribes and starts the timer; deactivate stops them (the twin's
watchdog then opens the hand); cleanup releases everything; shutdown works from any state.
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from hand_msgs.msg import HandLandmarksArray
from rclpy.lifecycle import State, TransitionCallbackReturn
from sensor_msgs.msg import JointState

from hand_common import contract
from hand_common.node_tools import SafeLifecycleNode, run

from .params import RETARGET_PARAMS, RETARGET_RENAMED, pipeline_config
from .pipeline import DexPipeline
from .topics import (
    KAPANDJI_NAMES,
    RETARGET_NODE,
    TOPIC_JOINT_COMMANDS,
    TOPIC_KAPANDJI_HUMAN,
    TOPIC_KAPANDJI_ROBOT,
)


def stamp_seconds(stamp) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def select_hand(hands, choice: str):
    """The hand to follow from a HandLandmarksArray's ``hands`` (None if there is none)."""
    cands = list(hands) if choice == "best" else [h for h in hands if h.handedness == choice]
    if not cands:
        return None
    return max(cands, key=lambda h: h.handedness_score)


class RetargetNode(SafeLifecycleNode):
    def __init__(self, **kwargs):
        super().__init__(RETARGET_NODE, **kwargs)
        self.declare_params(RETARGET_PARAMS, annotate=True, renamed=RETARGET_RENAMED)  # choices and "Read at configure." in the text
        self._reset()

    def _reset(self) -> None:
        self.pipeline: DexPipeline | None = None
        self._pubs: list = []
        self._subs: list = []
        self._timers: list = []
        self._target: np.ndarray | None = None
        self._target_time = -math.inf
        self._target_stamp = None  # capture stamp (builtin_interfaces/Time) of the target's landmarks
        self._last_step: float | None = None  # monotonic time of the last safety-filter step
        self._frames = self._misses = 0
        self._last_miss = ""
        self._retarget_ms: deque[float] = deque(maxlen=300)
        self._robot_rejected = 0
        self._measured: tuple[np.ndarray, object] | None = None  # newest measured (q, stamp), not yet scored

    def _param(self, name: str):
        return self.get_parameter(name).value

    # --- parameters ------------------------------------------------------------------------------
    def apply_parameters(self, changes) -> None:
        """Post-set: the safety filter's caps and crossing clamp act from the next tick (the base
        checked ranges and refused the configure-time parameters while configured)."""
        if self.pipeline is None:
            return
        lim = self.pipeline.filter.limits
        if {"max_velocity", "max_acceleration", "max_step"} & set(changes):
            from .safety import SafetyLimits
            self.pipeline.filter.limits = SafetyLimits(
                lim.lower, lim.upper, float(changes.get("max_velocity", lim.max_velocity)),
                float(changes.get("max_acceleration", lim.max_acceleration)),
                float(changes.get("max_step", lim.max_step)))
        if "crossing_clamp" in changes:
            self.pipeline.filter.crossing = self._crossing if changes["crossing_clamp"] else None

    # --- lifecycle -------------------------------------------------------------------------------
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        log = self.get_logger()
        try:
            from hand_description import dex, paths

            cfg = pipeline_config({p.name: self._param(p.name) for p in RETARGET_PARAMS})
            t0 = time.monotonic()
            if self._param("robot"):
                from .robot import load_robot

                desc = load_robot(self._param("robot"), cfg.retarget.method, self._param("robot_dir") or None,
                                  self._param("robot_urdf") or None)
                urdf = desc.urdf_path
                for note in desc.warnings:
                    log.warning(note)
            else:
                desc = dex.load(self._param("description_path") or None)
                urdf = self._param("urdf_path") or str(paths.dex_urdf_path())
            pipeline = DexPipeline(desc, urdf, cfg)
        except Exception as exc:  # noqa: BLE001 - description, URDF, dex-retargeting: report, stay unconfigured
            log.error(f"configure failed: {type(exc).__name__}: {exc}")
            return TransitionCallbackReturn.FAILURE
        self.pipeline = pipeline
        from .safety import CrossingClamp
        self._crossing = pipeline.filter.crossing or (CrossingClamp(pipeline.fingers, cfg.crossing_clearance or None)
                                                      if pipeline.fingers else None)
        if not cfg.crossing_clamp:
            pipeline.filter.crossing = None
        log.info(f"{cfg.retarget.method} retargeting onto {urdf} ({len(desc.joint_names)} joints) built in "
                 f"{(time.monotonic() - t0) * 1e3:.0f} ms; commands at {self._param('command_rate_hz'):g} Hz")
        # all four are published from the subscriptions and timers that exist only while active
        stream = contract.qos(contract.STREAM)
        self.pub_cmd = self.create_lifecycle_publisher(JointState, TOPIC_JOINT_COMMANDS, stream)
        self.pub_human = self.create_lifecycle_publisher(JointState, TOPIC_KAPANDJI_HUMAN, stream)
        self.pub_robot = self.create_lifecycle_publisher(JointState, TOPIC_KAPANDJI_ROBOT, stream)
        self.pub_diag = self.create_lifecycle_publisher(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, stream)
        self._pubs = [self.pub_cmd, self.pub_human, self.pub_robot, self.pub_diag]
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        stream = contract.qos(contract.STREAM)
        self._subs = [
            self.create_subscription(HandLandmarksArray, contract.TOPIC_LANDMARKS, self._on_landmarks, stream),
            self.create_subscription(JointState, self._param("measured_topic"), self._on_measured, stream),
        ]
        self._dt = 1.0 / float(self._param("command_rate_hz"))
        self._timers = [self.create_timer(self._dt, self._on_tick),
                        self.create_timer(1.0 / float(self._param("diagnostics_rate_hz")), self._publish_diagnostics)]
        self._measured = None
        robot_rate = float(self._param("kapandji_robot_rate_hz"))
        if robot_rate > 0.0:
            self._timers.append(self.create_timer(1.0 / robot_rate, self._score_robot))
        self.get_logger().info(f"active: {contract.TOPIC_LANDMARKS} -> {TOPIC_JOINT_COMMANDS}")
        return super().on_activate(state)

    def _stop(self) -> None:
        for s in self._subs:
            self.destroy_subscription(s)
        for t in self._timers:
            self.destroy_timer(t)
        self._subs, self._timers = [], []

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        self._stop()
        return super().on_deactivate(state)

    def _release(self) -> None:
        """The release hook (cleanup, shutdown, error): subscriptions, timers, publishers, pipeline."""
        self._stop()
        for p in self._pubs:
            self.destroy_lifecycle_publisher(p)
        self._reset()

    # --- inputs ----------------------------------------------------------------------------------
    def _on_landmarks(self, msg: HandLandmarksArray) -> None:
        if self.pipeline is None:
            return
        hand = select_hand(msg.hands, self._param("hand"))
        if hand is None:
            return  # no (matching) hand in this frame: the target ages out
        self._frames += 1
        if not hand.accepted and hand.rejection not in ("", "not_followed"):
            # the tracker's frame-quality gate refused this skeleton (it holds its last good pose):
            # a miss here too, the target holds and ages out after target_timeout_s
            self._misses += 1
            self._last_miss = f"refused by the tracker's quality gate ({hand.rejection})"
            self.get_logger().warning(f"frame {hand.frame_index} {self._last_miss}", throttle_duration_sec=2.0)
            return
        world = np.array([(p.x, p.y, p.z) for p in hand.world_landmarks], dtype=float)
        image = np.array([(p.x, p.y, p.z) for p in hand.image_landmarks], dtype=float)
        size = (int(hand.image_width), int(hand.image_height))
        t = stamp_seconds(hand.header.stamp) or stamp_seconds(msg.header.stamp)
        try:   # image + size: the rest blend reads flexions on the tracker's fused skeleton
            res = self.pipeline.frame(world, hand.handedness, t, image=image, size=size)
        except ValueError as exc:  # e.g. unknown handedness label
            res = None
            reason = str(exc)
        if res is None or not res.ok:
            self._misses += 1
            self._last_miss = reason if res is None else res.reason
            self.get_logger().warning(f"frame {hand.frame_index} rejected: {self._last_miss}", throttle_duration_sec=2.0)
            return
        self._target = res.target
        self._target_time = time.monotonic()
        self._target_stamp = hand.header.stamp if stamp_seconds(hand.header.stamp) else msg.header.stamp
        self._retarget_ms.append(res.retarget_ms)
        self._publish_score(self.pub_human, res.human, hand.header.stamp)
        self._command()  # at once: the command follows the camera, not the tick

    def _on_measured(self, msg: JointState) -> None:
        if self.pipeline is None:
            return
        names = self.pipeline.joint_names
        index = {n: i for i, n in enumerate(msg.name)}
        if len(msg.name) != len(msg.position) or any(n not in index for n in names):
            self._robot_rejected += 1
            self.get_logger().warning(f"{self._param('measured_topic')}: message lacks the dexterous joints "
                                      f"(got {list(msg.name)[:4]}...)", throttle_duration_sec=5.0)
            return
        q = np.array([msg.position[index[n]] for n in names], dtype=float)
        self._measured = (q, msg.header.stamp)
        if float(self._param("kapandji_robot_rate_hz")) <= 0.0:
            self._score_robot()

    def _score_robot(self) -> None:
        """The robot's Kapandji score of the newest measured state not yet scored (if any)."""
        if self.pipeline is None or self._measured is None:
            return
        (q, stamp), self._measured = self._measured, None
        self._publish_score(self.pub_robot, self.pipeline.robot_score(q), stamp)

    def _publish_score(self, pub, result, stamp) -> None:
        js = JointState()
        js.header.stamp = stamp
        js.name = list(KAPANDJI_NAMES)
        d = np.where(np.isfinite(result.distances), result.distances, -1.0)
        js.position = [float(result.score)] + [float(x) for x in d]
        pub.publish(js)

    # --- output ----------------------------------------------------------------------------------
    def _on_tick(self) -> None:
        self._command()

    def _command(self) -> None:
        """One safety-filter step over the time since the last one (at most one period) and its
        command, stamped with the target's capture time (now when holding the open pose)."""
        if self.pipeline is None:
            return
        now = time.monotonic()
        dt = self._dt if self._last_step is None else min(self._dt, max(now - self._last_step, 1e-4))
        self._last_step = now
        fresh = now - self._target_time <= float(self._param("target_timeout_s"))
        target = self._target if fresh else self.pipeline.rest
        q = self.pipeline.tick(target, dt)
        js = JointState()
        js.header.stamp = (self._target_stamp if fresh and self._target_stamp is not None
                           else self.get_clock().now().to_msg())
        js.name = list(self.pipeline.joint_names)
        js.position = q.tolist()
        js.velocity = self.pipeline.filter.v.tolist()
        self.pub_cmd.publish(js)

    def _publish_diagnostics(self) -> None:
        if self.pipeline is None:
            return
        fresh = time.monotonic() - self._target_time <= float(self._param("target_timeout_s"))
        if self._frames == 0:
            level, message = DiagnosticStatus.WARN, "no landmarks yet: commanding the open pose"
        elif not fresh:
            level, message = DiagnosticStatus.WARN, "no accepted frame recently: commanding the open pose"
        else:
            level, message = DiagnosticStatus.OK, "retargeting"
        ms = np.array(self._retarget_ms) if self._retarget_ms else np.array([np.nan])
        pre = self.pipeline.pre
        values = {
            "frames": str(self._frames), "misses": str(self._misses), "last_miss": self._last_miss,
            "retarget_ms_p50": f"{np.percentile(ms, 50):.3f}", "retarget_ms_p95": f"{np.percentile(ms, 95):.3f}",
            "calibrated": str(pre.calibrator.done), "filter_rejected": str(self.pipeline.filter.rejected),
            "optimizer_failures": str(self.pipeline.retargeter.failures),
            "image_pinches": str(self.pipeline.image_pinches),
            "measured_rejected": str(self._robot_rejected), "method": self.pipeline.config.retarget.method,
        }
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [DiagnosticStatus(level=level, name=f"{RETARGET_NODE}: retargeting", message=message,
                                       hardware_id="dex_hand",
                                       values=[KeyValue(key=k, value=v) for k, v in values.items()])]
        self.pub_diag.publish(arr)


def main(args=None) -> None:
    # no async callbacks here: the EventsExecutor (~4x less CPU per callback; this node has ~260 a
    # second: landmarks, 100 Hz ticks, 100 Hz measured states, the robot score)
    sys.exit(run(RetargetNode, args, events=True))


if __name__ == "__main__":
    main()

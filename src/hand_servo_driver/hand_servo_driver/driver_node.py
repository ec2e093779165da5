"""``servo_driver``: lifecycle node driving SG90 tendon servos from ``/hand/target_flexions``.

Thin wiring around pure modules: parameters (:mod:`parameters`) → :class:`core.DriverCore`
(mapping, deadband, rate limit, stale check, acknowledgements) → the link from
:func:`transport.open_transport`: :class:`link.SerialLink` (pyserial, reconnection) speaking
:mod:`protocol` to the board (firmware or ``sim_board``), or :class:`transport.DryRunLink`.

Lifecycle (ros2/demos lifecycle_py style):
- on_configure: read parameters, open the port (retrying up to ``connect_timeout_s``; FAILURE
  naming the port if it never appears), create the subscription, timers and /diagnostics.
  Heartbeats start (link supervision) but no pulse is sent.
- on_activate: output enabled; the first *fresh* command starts a ramp from where the horns are.
- on_deactivate: the ramp to the safe pose starts (``detach``: sent at once); commands are
  ignored; the control tick carries the ramp on.
- on_cleanup: the ramp is finished (at most :data:`SAFE_RAMP_LIMIT_S`), port closed, everything
  created in on_configure released.
- on_shutdown / on_error (from any state): the same ramp to the safe pose if a port is open, then
  release.

Commands: each is judged by its capture stamp (``header.stamp``, ROS time) against its reception
on our ROS clock (the MessageInfo's ``received_timestamp``, not the callback's time: a backlog in
this process is not the link's delay; :class:`command_age.CommandAge`: clock offsets cancel), and
goes stale ``command_timeout_s`` after that reception (a one-shot deadline timer); frames to the
board go out as soon as a fresh command arrives, at least ``1/rate_hz`` apart. A frame not due yet
(a command held by that interval, a ramp frame between commands) goes when due
(:meth:`core.DriverCore.next_frame_at`): a one-shot timer on the steady clock, re-armed after every
step, wakes the node then, not at its next tick (:mod:`schedule` replays the same timing on a
synthetic clock). The control tick keeps the link I/O and heartbeats.

Topics: subscribes ``/hand/target_flexions`` (sensor_msgs/JointState, ``contract.COMMAND`` QoS;
``header.frame_id`` names the source, :mod:`command_sources`),
publishes ``/diagnostics`` (diagnostic_msgs/DiagnosticArray, ``contract.STREAM`` QoS).
"""

from __future__ import annotations

import sys
import time
from typing import Any

import serial
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.lifecycle import State, TransitionCallbackReturn
from sensor_msgs.msg import JointState

from hand_common import contract
from hand_common.node_tools import SafeLifecycleNode, run
from hand_common.service_callers import ServiceCallers
from hand_common.stats import percentiles_ms
from hand_servo_driver import interface as iface
from hand_servo_driver import protocol as p
from hand_servo_driver.command_age import RECEPTION_WAIT_MAX_S, reception_times, reception_usable
from hand_servo_driver.command_sources import CommandSources
from hand_servo_driver.core import DriverConfigError, DriverCore
from hand_servo_driver.driver_config import safety_problems
from hand_servo_driver.link import LinkError, SerialLink
from hand_servo_driver.parameters import PARAMS, build_config, cross_parameter_problems
from hand_servo_driver.transport import DRY_RUN_STATUS, DryRunLink, open_transport

DIAG_NAME = "servo_driver: serial link"
#: A board rejection (ERROR) or clamping (WARN) is reported for this long after it happened (s).
RECENT_S = 5.0
#: Share of frames not acknowledged (over the last ``core.LOSS_WINDOW``) that makes diagnostics
#: WARN / ERROR, once at least LOSS_MIN_FRAMES were resolved.
LOSS_WARN = 0.05
LOSS_ERROR = 0.20
LOSS_MIN_FRAMES = 20
#: The longest a cleanup/shutdown/error transition ramps to the safe pose before it sends the
#: safe frame at once (s); the default rate limit covers the SG90's whole range in 0.6 s.
SAFE_RAMP_LIMIT_S = 1.5
#: The stale deadline timer (on the steady clock: CLOCK_MONOTONIC, as the core's times) fires this
#: long after the deadline (s): past the core's strict ``age > command_timeout_s``.
DEADLINE_MARGIN_S = 0.0005
#: The shortest one-shot wait for a frame due (s): a wake that found its frame due a hair later
#: (the timer's clock against the monotonic one) re-arms at least this far out, never spins.
WAKE_MIN_S = 0.0001


class ServoDriverNode(SafeLifecycleNode):
    """See the module docstring."""

    #: how the port is opened (pyserial; the fault-injection harness wraps it)
    opener = staticmethod(serial.Serial)

    def __init__(self, **kwargs: Any):
        super().__init__(contract.SERVO_DRIVER_NODE, **kwargs)
        self.declare_params(PARAMS)
        #: every parameter set and lifecycle transition requested of this node, logged with the caller
        self.callers = ServiceCallers(self)
        self._core: DriverCore | None = None
        self._link: SerialLink | DryRunLink | None = None  # transport.open_transport
        self._parser = p.Parser()
        self._settings = None
        self._pending_config = None
        self._sub = None
        self._timer = None
        self._deadline_timer = None
        self._frame_timer = None
        self._diag_timer = None
        self._diag_pub = None
        self._ignored = 0
        self._last_ignored = ""
        self._reception_ignored = 0  # reception stamps not on our clock (reception_usable)
        self._link_was_up = False
        self._board_checked = False
        self._board_problems: list[str] = []
        self._ramp_why = ""  # a ramp to the safe pose is under way: what it is for (logged when done)
        self._sources = CommandSources()
        self._sources_warned: tuple[str, ...] = ()
        self._t0 = time.monotonic()

    # --- parameters ----------------------------------------------------------------------------------
    def _values(self, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.param_values(overrides)

    def check_parameters(self, changes, values) -> str | None:
        """On-set: the whole config must still build (cross-parameter rules, against the board's own
        channel count and watchdog once it answered). The base refuses a configure-time parameter
        while configured. While the servos are driven (active, or ramping to the safe pose) a
        change must be toward safety (:func:`driver_config.safety_problems`): e.g. a foreign
        ``safe_flexion`` raise, ``command_timeout_s`` raise or ``max_speed_dps`` raise is refused;
        deactivate, set, activate."""
        try:
            new, _ = build_config(values, *self._board_facts())
        except (DriverConfigError, ValueError, TypeError) as exc:
            return str(exc)
        if self._driving():
            try:
                old, _ = build_config(self._values(), *self._board_facts())
            except (DriverConfigError, ValueError, TypeError):
                old = self._core.config
            problems = safety_problems(old, new)
            if problems:
                return (f"while {self.lifecycle_state} only changes toward safety are accepted (deactivate, set, "
                        "activate): " + "; ".join(problems))
        return None

    def _driving(self) -> bool:
        """The servos are driven: active (or in a transition from/to it) or ramping to the safe pose."""
        core = self._core
        return core is not None and (core.active or core.going_safe or self.lifecycle_state in
                                     ("active", "activating", "deactivating"))

    def apply_parameters(self, changes) -> None:
        """Post-set: a configured driver takes the new config at its next control tick."""
        if self._core is not None:
            self._pending_config, _ = build_config(self._values(), *self._board_facts())

    def _board_facts(self) -> tuple[int | None, float | None]:
        """(channels, watchdog s) the connected board reported, or (None, None)."""
        core = self._core
        if core is None or core.board is None:
            return None, None
        return core.board.channels, core.board.watchdog_ms / 1000.0

    def _check_board_against_parameters(self) -> None:
        """Once per (re)connection: the board's own channel count and watchdog against the rules."""
        channels, watchdog = self._board_facts()
        if channels is None or self._board_checked:
            return
        self._board_checked = True
        problems = cross_parameter_problems(self._values(), channels, watchdog)
        self._board_problems = problems
        for why in problems:
            self.get_logger().error(f"the connected board contradicts the parameters: {why}")

    # --- lifecycle -------------------------------------------------------------------------------------
    def on_configure(self, state: State) -> TransitionCallbackReturn:
        try:
            cfg, settings = build_config(self._values())
        except (DriverConfigError, ValueError, TypeError) as exc:
            self.get_logger().error(f"configure failed: {exc}")
            return TransitionCallbackReturn.FAILURE
        self._settings = settings
        try:
            link = open_transport(settings, self.get_logger().info, opener=self.opener)
        except LinkError as exc:
            # the message says how many attempts over how long (connect_timeout_s is honoured)
            self.get_logger().error(f"configure failed: {exc}; connect_timeout_s {settings.connect_timeout_s:g} s")
            return TransitionCallbackReturn.FAILURE
        self._link = link
        self._link_was_up = True
        self.get_logger().info(f"opened {settings.port} at {settings.baud} baud" if link.acknowledges
                               else "dry run: no port; intended pulses are logged")
        self._core = DriverCore(cfg, expect_acks=link.acknowledges)
        self._sources = CommandSources(settings.command_source)
        self._sources_warned = ()
        self._board_checked = False
        self._board_problems = []
        self._parser = p.Parser()
        self._core.on_link_up(time.monotonic())
        self._diag_pub = self.create_publisher(DiagnosticArray, contract.TOPIC_DIAGNOSTICS, contract.qos(contract.STREAM))
        self._sub = self.create_subscription(JointState, contract.TOPIC_TARGET_FLEXIONS, self._on_command,
                                             contract.qos(contract.COMMAND))
        self._timer = self.create_timer(1.0 / settings.rate_hz, self._tick)
        # the stale check at the deadline itself, not at the next control tick: armed by every command
        # followed for its reception + command_timeout_s, one shot (see _arm_deadline)
        self._deadline_timer = self.create_timer(cfg.command_timeout_s + DEADLINE_MARGIN_S, self._on_deadline,
                                                 clock=Clock(clock_type=ClockType.STEADY_TIME), autostart=False)
        # one shot: armed for the next frame due (_arm_frame_timer), the steady clock as time.monotonic
        self._frame_timer = self.create_timer(1.0, self._on_frame_due, clock=Clock(clock_type=ClockType.STEADY_TIME),
                                              autostart=False)
        self._diag_timer = self.create_timer(settings.diagnostics_period_s, self._publish_diagnostics)
        self.get_logger().info(
            "configured: " + ", ".join(f"{s.calibration.name}→ch{s.calibration.channel} "
                                       f"{s.calibration.min_us}-{s.calibration.max_us} µs" for s in cfg.servos))
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state: State) -> TransitionCallbackReturn:
        self._core.activate()
        self.get_logger().info("active: following " + contract.TOPIC_TARGET_FLEXIONS)
        self._publish_diagnostics()
        return super().on_activate(state)

    def on_deactivate(self, state: State) -> TransitionCallbackReturn:
        sendable = self._can_send()
        now = time.monotonic()
        self._write(self._core.deactivate(now))
        if sendable:
            self._arm_frame_timer(now)  # the ramp to the safe pose: a frame every 1/rate_hz
        self._flush_log(force=True)
        if sendable:
            self._report_safe_ramp("inactive")
        else:
            self.get_logger().warning("inactive; serial link down, the board's watchdog makes it safe")
        self._publish_diagnostics()
        return super().on_deactivate(state)

    def on_shutdown(self, state: State) -> TransitionCallbackReturn:
        self._go_safe("shutdown")
        return super().on_shutdown(state)

    def on_error(self, state: State) -> TransitionCallbackReturn:
        self._go_safe("error")
        return super().on_error(state)

    def _go_safe(self, why: str) -> None:
        """Before the release of shutdown/error: the safe pose if the link (port or dry run) can take it."""
        if self._core is not None:
            if self._can_send():
                self._write(self._core.deactivate(time.monotonic()))
                self._finish_safe_ramp(why)
                self._flush_log(force=True)
                self.get_logger().info(f"{why}: safe {self._core.config.safe_mode} sent")
            elif self._link is not None:
                self.get_logger().warning(f"{why}: serial link down, cannot send the safe pose; the board's "
                                          "watchdog makes it safe")

    def _can_send(self) -> bool:
        return self._link is not None and self._link.up

    def _report_safe_ramp(self, why: str) -> None:
        """Log "<why>: safe <mode> sent" once the ramp to it is done (now or from the tick)."""
        core = self._core
        if core is not None and core.at_safe:
            self.get_logger().info(f"{why}: safe {core.config.safe_mode} sent")
            self._ramp_why = ""
        else:
            if not self._ramp_why:
                self.get_logger().info(f"{why}: ramping to the safe pose")
            self._ramp_why = why

    def _finish_safe_ramp(self, why: str) -> None:
        """Carry a ramp to the safe pose to its end before the port closes (the control tick no
        longer runs in a transition); after :data:`SAFE_RAMP_LIMIT_S` the safe frame goes at once."""
        core = self._core
        if core is None or not self._can_send():
            return
        period = 1.0 / (self._settings.rate_hz if self._settings else 50.0)
        end = time.monotonic() + SAFE_RAMP_LIMIT_S
        while not core.at_safe and time.monotonic() < end and self._can_send():
            time.sleep(period)
            self._write(core.step(time.monotonic()))
            if self._link is not None and self._link.up:
                self._link.read()  # keep the board's replies flowing (its acks are not needed here)
                self._link.flush()
        if not core.at_safe and self._can_send():
            self.get_logger().warning(f"{why}: the ramp to the safe pose did not finish within "
                                      f"{SAFE_RAMP_LIMIT_S:g} s: safe pose sent at once")
            self._write(core.finish_safe(time.monotonic()))
        if self._ramp_why:
            self._report_safe_ramp(self._ramp_why)

    def _release(self) -> None:
        """The release hook (cleanup, shutdown, error): timers, subscription, /diagnostics, the port."""
        self._finish_safe_ramp("release")
        for timer in (self._timer, self._deadline_timer, self._frame_timer, self._diag_timer):
            if timer is not None:
                self.destroy_timer(timer)
        if self._sub is not None:
            self.destroy_subscription(self._sub)
        if self._diag_pub is not None:
            self.destroy_publisher(self._diag_pub)
        if self._link is not None:
            self._link.close()
        self._timer = self._deadline_timer = self._frame_timer = self._diag_timer = self._sub = self._diag_pub = None
        self._link = None
        self._core = None

    # --- data path ---------------------------------------------------------------------------------------
    def _on_command(self, msg: JointState, info: dict[str, Any] | None) -> None:
        """Two arguments: rclpy then passes the message's MessageInfo (``received_timestamp``: when
        the middleware received it, see :func:`command_age.reception_times`)."""
        now = time.monotonic()
        clock_now = self.get_clock().now().nanoseconds * 1e-9
        core = self._core
        if core is None:
            return
        if not self._sources.admit(msg.header.frame_id, now):
            return  # another source than command_source: counted, named in diagnostics
        try:
            flexions = contract.parse_flexions(msg.name, msg.position)
        except contract.FlexionContractError as exc:
            self._ignored += 1
            self._last_ignored = str(exc)
            self.get_logger().warning(f"ignored {contract.TOPIC_TARGET_FLEXIONS}: {exc}", throttle_duration_sec=2.0)
            return
        # an unstamped message (stamp 0) is judged by its arrival alone
        stamp = (msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9) or None
        received_ns = (info or {}).get("received_timestamp")
        if received_ns and not reception_usable(clock_now, received_ns):
            self._reception_ignored += 1
            self.get_logger().warning(
                f"a reception stamp {clock_now - received_ns * 1e-9:.3f} s before the callback (over "
                f"{RECEPTION_WAIT_MAX_S:g} s: not our clock) ignored, the callback time taken "
                f"({self._reception_ignored} so far)", throttle_duration_sec=5.0)
        arrival, received = reception_times(now, clock_now, received_ns)
        if core.command(flexions, now, stamp, arrival, received):
            self._arm_deadline()
            if self._can_send():
                self._write(core.step(now))  # at once: the wire follows the command, not the tick
                self._arm_frame_timer(now)

    def _arm_frame_timer(self, now: float) -> None:
        """After a step at ``now``: wake when the core's next frame is due (nothing due: no wake)."""
        timer, core = self._frame_timer, self._core
        if timer is None or core is None:
            return
        due = core.next_frame_at()
        if due is None or due <= now:  # nothing to send, or the step at now had it and sent it
            timer.cancel()
            return
        timer.timer_period_ns = int(max(due - time.monotonic(), WAKE_MIN_S) * 1e9)
        timer.reset()

    def _on_frame_due(self) -> None:
        """The one-shot: a held command or a ramp frame is due now."""
        if self._frame_timer is not None:
            self._frame_timer.cancel()
        core = self._core
        if core is None or not self._can_send():
            return
        now = time.monotonic()
        self._write(core.step(now))
        if self._ramp_why:
            self._report_safe_ramp(self._ramp_why)
        self._arm_frame_timer(now)

    def _arm_deadline(self) -> None:
        """The deadline timer fires once, at the followed command's reception + ``command_timeout_s``
        (:meth:`DriverCore.stale_deadline`, + :data:`DEADLINE_MARGIN_S`), however late its callback
        ran: the stale decision does not wait for the 100 Hz tick, nor count from a late callback."""
        timer, core = self._deadline_timer, self._core
        deadline = core.stale_deadline() if core is not None else None
        if timer is None or deadline is None:
            return
        remaining = deadline + DEADLINE_MARGIN_S - time.monotonic()
        timer.timer_period_ns = max(int(DEADLINE_MARGIN_S * 1e9), int(remaining * 1e9))
        timer.reset()  # rcl: next call = now + period (rcl_timer_exchange_period alone does not move it)

    def _on_deadline(self) -> None:
        """The stale deadline: one shot (re-armed by the next command followed), then the tick's work."""
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        self._tick()
        core = self._core
        deadline = core.stale_deadline() if core is not None else None
        # still ahead (an early wake, a new command_timeout_s): its own time. Passed and undecided (the
        # link down: the tick does not step the core) is the control tick's once the link is back:
        # re-armed, it would wake every DEADLINE_MARGIN_S for as long as the link stays down
        if deadline is not None and deadline + DEADLINE_MARGIN_S > time.monotonic():
            self._arm_deadline()

    def _now_ms(self, now: float) -> int:
        return int((now - self._t0) * 1000.0) & 0xFFFFFFFF

    def _tick(self) -> None:
        core = self._core
        if core is None:
            return
        now = time.monotonic()
        if self._pending_config is not None:
            cfg, self._pending_config = self._pending_config, None
            try:
                core.update_config(cfg)
            except DriverConfigError as exc:
                self.get_logger().info(f"kept the running servo set: {exc}")
            self._arm_deadline()  # the new command_timeout_s
        link = self._link
        if link is not None:
            if link.maybe_reconnect(now):
                self._parser.reset()
                core.on_link_up(now)
                self._board_checked = False
                self._link_was_up = True
                self.get_logger().info(f"serial link back on {link.port} (reconnect #{link.reconnects})")
                self._publish_diagnostics()
            if link.up:
                data = link.read()
                ms = self._now_ms(now)
                for frame in self._parser.feed(data, ms) + self._parser.expire(ms):
                    core.on_frame(frame, now)
                self._check_board_against_parameters()
                link.flush()
                stalled = link.stalled_s(now)
                if stalled > link.write_timeout_s and core.board_silent(now):
                    # the port takes no bytes *and* the board stopped answering: that is a lost link
                    link.fail(f"write stalled for {stalled:.2f} s and no STATUS for more than "
                              f"{core.config.ack_timeout_s:g} s")
        if not self._can_send():
            self._check_link_down()
            return  # nothing can go out; the board's own watchdog keeps it safe
        self._flush_log()
        was_stale = core.stale
        self._write(core.step(now))
        self._arm_frame_timer(now)
        if self._ramp_why:
            self._report_safe_ramp(self._ramp_why)
        if core.stale and not was_stale:
            self.get_logger().warning(f"command older than {core.config.command_timeout_s} s: ramping to the "
                                      f"safe {core.config.safe_mode} (decided {core.stats.last_stale_late_s * 1e3:.1f} ms "
                                      "after its deadline)")
        self._check_link_down()

    def _write(self, frames: list[bytes]) -> None:
        link = self._link
        if not frames or link is None:
            return
        for fr in frames:
            if not link.write(fr):
                break
        link.flush_log()
        self._check_link_down()

    def _flush_log(self, force: bool = False) -> None:
        """A dry run's newest intended pulses, at most every transport.LOG_PERIOD_S (see DryRunLink)."""
        if self._link is not None:
            self._link.flush_log(force)

    def _check_link_down(self) -> None:
        link = self._link
        if link is not None and self._link_was_up and not link.up:
            self._link_was_up = False
            self._core.on_link_down(time.monotonic())
            self._parser.reset()
            self.get_logger().error(f"serial link down: {link.last_error}; retrying with backoff")
            self._publish_diagnostics()

    # --- diagnostics -----------------------------------------------------------------------------------------
    def diagnostic_status(self) -> DiagnosticStatus:
        core, link, settings = self._core, self._link, self._settings
        now = time.monotonic()
        st = core.stats
        level, message = DiagnosticStatus.OK, ""
        loss, loss_n = core.loss_rate()
        state = self.lifecycle_state
        sources = self._sources
        sources_warning = sources.warning(now, contract.TOPIC_TARGET_FLEXIONS)
        quality = core.quality.summary(now)
        if link is not None and not link.acknowledges:
            message = DRY_RUN_STATUS
        elif link is None or not link.up:
            level = DiagnosticStatus.ERROR
            why = link.last_error if link is not None else "port closed"
            message = f"serial link down: {why}; retrying"
        elif core.board_silent(now):
            level = DiagnosticStatus.WARN
            message = f"no STATUS from the board for more than {core.config.ack_timeout_s} s (wrong port or baud?)"
        elif loss_n >= LOSS_MIN_FRAMES and loss >= LOSS_ERROR:
            level = DiagnosticStatus.ERROR
            message = f"{loss:.0%} of the last {loss_n} frames not acknowledged (noisy or failing link)"
        elif self._board_problems:
            level = DiagnosticStatus.ERROR
            message = "board contradicts the parameters: " + "; ".join(self._board_problems)
        elif now - st.last_reject_t < RECENT_S:
            level = DiagnosticStatus.ERROR
            message = f"board rejected {st.board_rejects} frame(s), last {st.last_reject}: configuration mismatch?"
        elif core.board is not None and core.board.channels < max(core.config.channels) + 1:
            level = DiagnosticStatus.ERROR
            message = f"board has {core.board.channels} channels, driver uses channel {max(core.config.channels)}"
        elif sources_warning:
            level = DiagnosticStatus.WARN
            message = sources_warning
        elif core.stale:
            level = DiagnosticStatus.WARN
            message = f"no fresh command for more than {core.config.command_timeout_s} s: safe pose"
        elif core.board is not None and core.board.flags & p.Flag.WATCHDOG:
            level = DiagnosticStatus.WARN
            message = "board watchdog tripped: outputs at the board's safe pose"
        elif loss_n >= LOSS_MIN_FRAMES and loss >= LOSS_WARN:
            level = DiagnosticStatus.WARN
            message = f"{loss:.0%} of the last {loss_n} frames not acknowledged"
        elif now - st.last_clamp_t < RECENT_S:
            level = DiagnosticStatus.WARN
            message = "board clamped pulses: the driver's pulse range is wider than the firmware's (config.h)"
        if level == DiagnosticStatus.OK and quality.problem and core.active:
            # the lowest WARN: every other problem above names itself first
            level, message = DiagnosticStatus.WARN, quality.problem
        if not message:
            message = ("active: following " + contract.TOPIC_TARGET_FLEXIONS) if state == "active" else \
                f"{state}: outputs held safe"
        values = {
            "lifecycle": state, "link": link.state if link else "closed",
            "port": settings.port, "baud": settings.baud,
            "frames_sent": st.frames_sent, "frames_acked": st.frames_acked, "frames_unacked": st.frames_unacked,
            "last_acked_seq": core.last_acked_seq if core.last_acked_seq is not None else -1,
            "pulses_sent": st.pulses_sent, "heartbeats_sent": st.heartbeats_sent, "safe_sent": st.safe_sent,
            "board_rejects": st.board_rejects, "last_reject": st.last_reject, "clamped_acks": st.clamped_acks,
            "board_boots": st.board_boots, "watchdog_trips_seen": st.board_watchdog_trips, "resyncs": st.resyncs, "resends": st.resends,
            iface.KEY_STALE: core.stale, iface.KEY_STALE_EVENTS: st.stale_events, "commands": st.commands,
            "commands_ignored": self._ignored, "last_ignored": self._last_ignored,
            "reception_stamps_ignored": self._reception_ignored,
            "commands_inactive": st.commands_inactive, "commands_late": st.commands_late,
            "commands_out_of_order": st.commands_out_of_order, "last_refused": core.last_refused,
            iface.KEY_COMMAND_STREAM: iface.COMMAND_STREAM_DEGRADED if quality.problem else "ok",
            "command_window_arrivals": quality.arrivals, "command_window_late": quality.late,
            "command_window_out_of_order": quality.out_of_order, "command_window_gaps_over": quality.gaps_over,
            "command_window_max_gap_ms": f"{quality.max_gap * 1e3:.1f}",
            "command_window_excess_p95_ms": f"{quality.excess_p95 * 1e3:.1f}",
            "frames_capped": st.frames_capped, "ramp_frames_deferred": st.ramp_frames_deferred,
            "clock_rebases": st.clock_rebases, "going_safe": core.going_safe,
            "last_stale_late_ms": f"{st.last_stale_late_s * 1e3:.1f}",
            "last_pulses_us": " ".join(map(str, core.last_sent)) if core.last_sent else "",
            "channels": " ".join(map(str, core.config.channels)),
            "reconnects": link.reconnects if link else 0, "link_errors": link.errors if link else 0,
            "last_link_error": link.last_error if link else "",
            "bytes_out": link.bytes_out if link else 0, "bytes_in": link.bytes_in if link else 0,
            "loss_rate": f"{loss:.3f}", "loss_window_frames": loss_n, "resumes": st.resumes,
            "awaiting_status": core.awaiting_status,
            "write_stalls": link.write_stalls if link else 0, "tx_dropped": link.tx_dropped if link else 0,
            "pending_bytes": len(link.pending) if link else 0,
            "command_source": sources.source or "(any)", "command_publishers": " ".join(sources.publishers),
            "command_sources_other": " ".join(sources.others(now)), "commands_other_source": sources.refused,
            "last_other_source": sources.last_refused_source,
        }
        wire = percentiles_ms(core.wire_latency)
        values[iface.KEY_WIRE_P50] = "" if wire["p50"] is None else wire["p50"]
        values[iface.KEY_WIRE_P95] = "" if wire["p95"] is None else wire["p95"]
        values[iface.KEY_WIRE_N] = wire["n"]
        if core.board is not None:
            b = core.board
            values["board_flags"] = p.flag_names(b.flags)
            values["board_watchdog_ms"] = b.watchdog_ms
            values["board_channels"] = b.channels
            for k, v in b.counters.items():
                values[f"board_{k}"] = v
            values["board_rejected_total"] = b.rejected
        return DiagnosticStatus(level=level, name=DIAG_NAME, message=message,
                                hardware_id=link.port if link is not None else settings.port,
                                values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])

    def _check_sources(self) -> None:
        """The graph's publishers of the command topic; a change in the other sources is logged."""
        try:
            infos = self.get_publishers_info_by_topic(contract.TOPIC_TARGET_FLEXIONS)
        except Exception as exc:  # noqa: BLE001 - the graph query must never stop diagnostics
            self.get_logger().warning(f"graph query failed: {exc}", throttle_duration_sec=10.0)
            return
        self._sources.set_publishers([f"{i.node_namespace.rstrip('/')}/{i.node_name}" for i in infos])
        others = tuple(self._sources.others(time.monotonic()))
        if others != self._sources_warned:
            self._sources_warned = others
            if others:
                self.get_logger().warning(self._sources.warning(time.monotonic(), contract.TOPIC_TARGET_FLEXIONS))
            else:
                self.get_logger().info(f"one command source on {contract.TOPIC_TARGET_FLEXIONS} again")

    def _publish_diagnostics(self) -> None:
        if self._diag_pub is None or self._core is None:
            return
        self._check_sources()
        msg = DiagnosticArray()
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.status = [self.diagnostic_status()]
        self._diag_pub.publish(msg)


def main(args=None) -> None:
    sys.exit(run(ServoDriverNode, args))


if __name__ == "__main__":
    main()

"""What the servo driver sends, and when: flexions in, protocol frames out. No rclpy, no I/O.

:class:`DriverCore` is the whole driver minus ROS and the serial port; ``driver_node`` feeds it
commands, time and the board's STATUS frames and writes the frames it returns. Rules:

- Nothing is sent but heartbeats until :meth:`activate`; commands received while inactive are
  dropped, so activation never replays an old pose.
- A command maps each servo's flexion to a pulse (``ServoCalibration``), passes a per-servo
  *deadband* on the target (a change smaller than ``deadband_deg`` is ignored), then a per-servo
  *rate limiter* (``max_speed_dps``) that the output follows at every :meth:`step`. A SET_PULSES
  frame goes out only when the rounded output changed; otherwise a HEARTBEAT every
  ``heartbeat_period_s`` keeps the board's watchdog fed.
- A command's age comes from its capture stamp (:class:`CommandAge`: the transit beyond the fastest
  seen, so a clock offset between the sender and us cancels) and its *reception* (the middleware's
  timestamp, not when our callback ran: a backlog in our own executor is not the link's delay); a command that arrives older than
  ``command_timeout_s`` by its stamp, or older than the newest one followed, is refused (a burst
  queued behind a stall or a dead link is never replayed). The pose followed is therefore at most
  ``command_timeout_s`` old when it arrives and is held for at most ``command_timeout_s`` more.
- No command followed for ``command_timeout_s`` → the safe pose, reached by a ramp from where the
  horns are at ``safe_speed_dps`` (an SG90 horn's own speed by default, twice the default tracking
  limit: the open side comes soon, and no step is faster than the horn can follow) (``safe_mode: detach`` stops the pulses at once: the
  horns go limp, no jump); fresh commands ramp on from wherever that ramp got to. Deactivation
  ramps to the safe pose the same way (the node finishes the ramp before it releases the port).
- Frames to the board are paced: a SET_PULSES frame leaves no sooner than ``min_frame_interval_s``
  after the last frame (10 ms at the default 100 Hz: 4.8 frames of 24 B fit in 10 ms at 115200
  baud). A fresh command that arrives sooner is held, one deep (a newer one replaces it), and is
  due exactly the interval after the last frame; a ramp frame between commands is due the
  interval after the last frame too, whenever that falls (:meth:`DriverCore.next_frame_at`: the
  node wakes then, not at a tick phase), unless it would hold the next command past that one's
  expected arrival (:class:`arrivals.ArrivalForecast`): then it is deferred
  (``ramp_frames_deferred``) to the command's latest expected arrival + :data:`YIELD_JITTER_S`
  (at most ``max_step_s`` + the interval after the last frame), so the command goes at once when
  it comes, and the frame that carries it integrates the deferral too (the rate limiter follows
  the elapsed time; ``max_step_s`` bounds only unplanned gaps, a stall). A command that arrives
  while a ramp frame holds it therefore leaves by its expected arrival at the latest. Heartbeats
  (never sooner than ``heartbeat_period_s``) and the final safe frame always go; on the way to
  the safe pose nothing is deferred.
- The board (re)booted or tripped its watchdog → its outputs are detached (the horns stay where
  they were: the ramp restarts from the last pulses it applied) or at its safe pose (the ramp
  restarts from the safe pose).
- The link came back → no pulse goes out until the board's first STATUS says where its outputs
  are: BOOT, detached or SAFE → ramp from the safe pose; still attached → the board still holds
  the last SET_PULSES it acknowledged (:attr:`DriverCore.acked_pulses`), and the ramp resumes from
  there under the rate limit. A reconnect never jumps the servos to the safe pose.
- The command stream's quality over the last 2 s (:class:`command_quality.CommandQuality`:
  refusals, excess transit, arrival gaps): a degraded link while commands still arrive.
- Loss rate: the share of frames not acknowledged among the last :data:`LOSS_WINDOW` resolved
  frames (:meth:`DriverCore.loss_rate`), reported by the node's diagnostics.
- Capture → wire: for each followed, stamped command, the time from its capture stamp to the first
  SET_PULSES frame that carries it (its arrival time + the time until that frame is built, in the
  stamp's time base), the latest :data:`WIRE_HISTORY` in :attr:`DriverCore.wire_latency` (s). A
  command whose pulses equal what the board already has (deadband) puts nothing on the wire and
  is not counted; one replaced by a newer command before its frame left counts as the newer one.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hand_servo_driver import protocol as p
from hand_servo_driver.arrivals import ARRIVALS, DELIVERIES, YIELD_JITTER_S, ArrivalForecast
from hand_servo_driver.command_age import CommandAge
from hand_servo_driver.command_quality import FOLLOWED, LATE, OUT_OF_ORDER, CommandQuality
from hand_servo_driver.driver_config import (
    SAFE_FLEXION_MAX,
    SAFE_MODES,
    DriverConfig,
    DriverConfigError,
    ServoSettings,
    round_us,
)
from hand_servo_driver.motion import Deadband, RateLimiter

#: also importable from here (their homes: :mod:`driver_config`, :mod:`command_age`, :mod:`arrivals`)
__all__ = ["ARRIVALS", "DELIVERIES", "LOSS_WINDOW", "YIELD_JITTER_S", "WIRE_HISTORY", "SAFE_FLEXION_MAX", "SAFE_MODES", "CommandAge", "DriverConfig", "DriverConfigError",
           "DriverCore", "DriverStats", "ServoSettings", "round_us"]

#: Capture → wire latencies a core keeps (:attr:`DriverCore.wire_latency`): ~50 s of 60 fps commands.
WIRE_HISTORY = 3000
#: Frames (acknowledged or lost) over which :meth:`DriverCore.loss_rate` is computed.
LOSS_WINDOW = 100


@dataclass
class DriverStats:
    """Counters for /diagnostics."""

    frames_sent: int = 0
    pulses_sent: int = 0
    heartbeats_sent: int = 0
    safe_sent: int = 0
    frames_acked: int = 0
    frames_unacked: int = 0  #: no STATUS within ack_timeout_s (lost on the wire or rejected as corrupt)
    board_rejects: int = 0  #: STATUS with BAD_RANGE/BAD_LENGTH/BAD_TYPE for our frame
    clamped_acks: int = 0
    board_boots: int = 0
    board_watchdog_trips: int = 0
    resyncs: int = 0
    resends: int = 0  #: newest SET_PULSES lost, current pulses sent again
    stale_events: int = 0
    commands: int = 0
    commands_inactive: int = 0
    bad_frames_in: int = 0
    resumes: int = 0  #: reconnects that resumed from the board's acknowledged pulses (no jump)
    commands_late: int = 0  #: refused: older than command_timeout_s by their stamp when they arrived
    commands_out_of_order: int = 0  #: refused: stamped before the newest command followed
    frames_capped: int = 0  #: frames held back by the frame interval (sent later, merged)
    ramp_frames_deferred: int = 0  #: ramp frames deferred to a command's latest expected arrival
    clock_rebases: int = 0  #: the sender's clock stepped back (see CommandAge)
    #: the last stale decision's lateness (s) past its deadline (reception + command_timeout_s)
    last_stale_late_s: float = math.nan
    last_reject: str = ""
    last_reject_t: float = -math.inf
    last_clamp_t: float = -math.inf


class DriverCore:
    """See the module docstring. Times are seconds on a monotonic clock."""

    def __init__(self, config: DriverConfig, expect_acks: bool = True):
        self.config = config
        self.expect_acks = expect_acks
        self.seq = 0
        self.active = False
        self.flexions: dict[str, float] | None = None
        #: our monotonic time at which the newest command followed arrived (its reception)
        self.cmd_time: float | None = None
        self.cmd_stamp: float | None = None  #: capture stamp of the newest command followed (sender's clock)
        self.stale = False
        self.target: np.ndarray | None = None
        self.last_sent: tuple[int, ...] | None = None
        self.last_pulses_seq: int | None = None
        self.last_tx_t = -math.inf
        self._silence_ref = -math.inf
        self._safe_pending = False
        self._commanded_safe = False
        self._last_safe_seq: int | None = None
        self._drive_t: float | None = None  # time of the last rate-limiter step
        #: ramping to the safe pose (stale while active, or deactivated); False once there
        self.going_safe = False
        self.age = CommandAge()
        #: arrivals over a sliding window: a degraded link while commands still come (WARN)
        self.quality = CommandQuality()
        self.last_refused = ""
        self.forecast = ArrivalForecast()  # when the next command should come (ramp frames make way)
        self._arrival_deferral = 0.0  # _deferral() as it was when the newest command arrived
        #: ramp time a deferral left to integrate (s; see step), at most max_step_s
        self.ramp_carry_s = 0.0
        self._deferred = False  # a ramp frame was deferred since the last frame (counted once)
        self._cmd_pending = False  # the newest command followed has not reached the wire yet
        self.outstanding: OrderedDict[int, tuple[int, float]] = OrderedDict()
        self.board: p.Status | None = None
        self.last_status_t: float | None = None
        self.last_acked_seq: int | None = None
        #: pulses (µs) of the last SET_PULSES the board acknowledged as applied; None = unknown,
        #: detached or after a boot
        self.acked_pulses: tuple[int, ...] | None = None
        #: the last pulses sent while the link was up (kept across detach and reboots: a limp horn
        #: stays about where it was) — where a ramp restarts after the board lost its outputs. The
        #: sent pulses, not the acknowledged ones: the board applies a frame before its STATUS
        #: comes back, and a link cut between the two must not move the estimate back.
        self.horn_pulses: tuple[int, ...] | None = None
        self._link_down = False
        self._pulses_by_seq: dict[int, tuple[int, ...]] = {}
        #: after a link (re)open: no pulses until a STATUS tells where the board's outputs are
        self.awaiting_status = False
        self._outcomes: deque[bool] = deque(maxlen=LOSS_WINDOW)
        #: capture → first frame on the wire (s) per followed stamped command (see the module doc)
        self.wire_latency: deque[float] = deque(maxlen=WIRE_HISTORY)
        self._unsent: tuple[float, float, float] | None = None  # (stamp, arrival, our time) not yet on the wire
        self._frames_seen: int | None = None  # the board's ``frames`` counter in its last STATUS
        self._boot_check = False  # the first STATUS after a link (re)open may reveal a missed boot
        self.stats = DriverStats()
        self.limiter = RateLimiter(config.rates_us(), config.safe_pulses(), config.max_step_s)
        self.deadband = Deadband(config.deadbands_us())

    # --- configuration ---------------------------------------------------------------------------
    def update_config(self, config: DriverConfig) -> None:
        """Adopt tuning changes live (pulse ranges, maps, speeds, deadbands, timeouts). The servo
        set and channels must stay the same (DriverConfigError otherwise)."""
        if config.names != self.config.names or config.channels != self.config.channels:
            raise DriverConfigError("the servo set and channels change only at configure")
        self.config = config
        self.limiter.set_rates(config.rates_us())
        self.limiter.max_dt = config.max_step_s
        self.deadband = Deadband(config.deadbands_us())
        if self.flexions is not None:
            self.target = self.deadband.update(config.pulses(self.flexions))

    # --- lifecycle -------------------------------------------------------------------------------
    def activate(self) -> None:
        """Enable output. The first fresh command starts a ramp from where the horns are (the
        safe pose unless a ramp to it was cut short)."""
        self.active = True
        self.going_safe = False
        self._forget_command()
        self.age.reset()
        self.quality.reset()

    def deactivate(self, now: float) -> list[bytes]:
        """Disable output and start the ramp to the safe pose (``detach``: the SAFE frame at
        once); returns the frames to send now. :meth:`step` continues the ramp; :attr:`at_safe`
        says when it is done."""
        was_active = self.active
        self.active = False
        self._forget_command()
        if self.config.safe_mode == "detach":
            return [self.safe_frame(now)]
        self.going_safe = was_active or self.going_safe
        return self.step(now)

    @property
    def at_safe(self) -> bool:
        """The last frame sent holds the safe pose (or detached) and no ramp is under way."""
        return not self.going_safe and (self._commanded_safe or self.last_sent is None
                                        or self.last_sent == round_us(self.config.safe_pulses()))

    def _forget_command(self) -> None:
        self._unsent = None
        self.flexions = None
        self.cmd_time = None
        self.cmd_stamp = None
        self.stale = False
        self.target = None
        self._drive_t = None
        self.forecast.reset()
        self._cmd_pending = False
        self.deadband.reset()

    def safe_frame(self, now: float) -> bytes:
        """The safe pose (or detach) frame, at once, unramped: for ``detach`` (the horns go limp:
        no jump) and for a process about to end whose ramp could not finish
        (:meth:`finish_safe`)."""
        safe = self.config.safe_pulses()
        self.stats.safe_sent += 1
        self._safe_pending = False
        self._last_safe_seq = self.seq
        self.going_safe = False
        self._drive_t = None
        if self.config.safe_mode == "detach":
            self.last_sent = None
            frame = self._frame(p.MsgType.SAFE, now, p.encode_safe, p.SAFE_DETACH)
        else:
            self.limiter.reset(safe)
            pulses = round_us(safe)
            self.last_sent = pulses
            frame = self._pulses_frame(pulses, now)
        self._commanded_safe = True
        return frame

    # --- inputs ------------------------------------------------------------------------------------
    def command(self, flexions: Mapping[str, float], now: float, stamp_s: float | None = None,
                arrival_s: float | None = None, received: float | None = None) -> bool:
        """A validated flexion command (``{name: flexion}``, every servo name present), with its
        capture stamp and its arrival time in the same time base (ROS time, s; None: unstamped,
        judged by arrival). ``now``: our monotonic time as it is handled; ``received``: our
        monotonic time at which it *arrived* (the middleware's reception, <= ``now``; None: ``now``),
        the time its age, the command-stream window, the stale deadline and the capture → wire
        figure count from, so a command that waited in our own queue (an executor backlog) is
        not taken for one the link delayed, nor held longer than ``command_timeout_s`` after it
        arrived. Returns False when it is not followed: inactive (dropped), older than
        ``command_timeout_s`` by its stamp when it arrived, or stamped before the newest command
        followed (each counted, :attr:`last_refused` says why)."""
        if not self.active:
            self.stats.commands_inactive += 1
            return False
        rx = now if received is None else min(float(received), now)
        excess = 0.0
        if stamp_s is not None and arrival_s is not None:
            rebases = self.age.rebases
            excess = self.age.excess(stamp_s, arrival_s, rx, self.config.command_timeout_s)
            if self.age.rebases != rebases:
                self.stats.clock_rebases += 1
                self.forecast.reset()  # the stamps' time base moved
                # so did the newest followed stamp's: compared with it, every command of the new base
                # would be refused as out of order for as long as the step (a stamp 1 h ahead: 1 h)
                self.cmd_stamp = None
            if self.cmd_stamp is not None and stamp_s < self.cmd_stamp:
                self.stats.commands_out_of_order += 1
                self.last_refused = f"stamped {self.cmd_stamp - stamp_s:.3f} s before the newest command followed"
                self.quality.record(rx, OUT_OF_ORDER, excess)
                return False
            if excess > self.config.command_timeout_s:
                self.stats.commands_late += 1
                self.last_refused = (f"arrived {excess:.3f} s late by its stamp (command_timeout_s "
                                     f"{self.config.command_timeout_s:g})")
                self.quality.record(rx, LATE, excess)
                return False
            self.cmd_stamp = stamp_s
        self.quality.record(rx, FOLLOWED, excess if stamp_s is not None and arrival_s is not None else None)
        self.stats.commands += 1
        self.flexions = {n: float(flexions[n]) for n in self.config.names}
        self.target = self.deadband.update(self.config.pulses(self.flexions))
        self.cmd_time = rx
        # the command that went stale is no longer the one followed: this one has its own deadline
        # (stale_deadline), the next step decides on it (a stale flag left from the last one
        # hid it: the node armed no deadline for the first command after a stale period)
        self.stale = False
        self._cmd_pending = True
        self._arrival_deferral = self._deferral()  # the schedule this command arrived into
        # the handling pace (not the reception's): when the next command's callback is expected
        self.forecast.arrived(now, stamp_s)
        self._unsent = (stamp_s, arrival_s, rx) if stamp_s is not None and arrival_s is not None else None
        return True

    def stale_deadline(self) -> float | None:
        """Our monotonic time (s) at which the command followed goes stale if no other is
        followed before (its reception + ``command_timeout_s``); None when there is none to hold
        (inactive, no command yet, already stale). :meth:`step` at or after it takes the decision."""
        if not self.active or self.cmd_time is None or self.stale:
            return None
        return self.cmd_time + self.config.command_timeout_s

    def may_send(self, now: float) -> bool:
        """A SET_PULSES frame may leave at ``now``: ``min_frame_interval_s`` since the last frame."""
        return now - self.last_tx_t >= self.config.min_frame_interval_s - 1e-9

    def _ramp_due(self) -> float:
        """When the next ramp frame is due (our clock; see the module doc): the frame interval after
        the last frame, unless a frame then would hold the next command past its expected arrival:
        then its latest expected arrival + :data:`YIELD_JITTER_S`, at most ``max_step_s`` past the
        interval (should no command come by then)."""
        interval = self.config.min_frame_interval_s
        cap = self.last_tx_t + interval
        expected, latest = self.forecast.expected, self.forecast.latest
        if self.going_safe or self.stale or not self.active or expected is None or cap + interval <= expected:
            return cap
        return max(cap, min(latest + YIELD_JITTER_S, cap + self.config.max_step_s))

    def _deferral(self) -> float:
        """How long past the frame interval the ramp frame after the last frame is deferred (s)."""
        if self.last_tx_t == -math.inf:
            return 0.0
        return self._ramp_due() - (self.last_tx_t + self.config.min_frame_interval_s)

    def _frame_due(self) -> float:
        """When the next SET_PULSES frame is due: a fresh command's the frame interval after the
        last frame, a ramp frame's :meth:`_ramp_due`."""
        return self.last_tx_t + self.config.min_frame_interval_s if self._cmd_pending else self._ramp_due()

    def next_frame_at(self) -> float | None:
        """When :meth:`step` will next build a SET_PULSES frame (our clock), or None while there is
        nothing to send (no command followed, ramp done, awaiting the board's STATUS). The node
        wakes then (a one-shot timer), so a held command or a ramp frame goes out when due, not
        at a tick. Heartbeats and the stale check are the tick's."""
        if self.awaiting_status:
            return None
        if self.going_safe:
            goal = self.config.safe_pulses()
        elif self.active and not self.stale and self.target is not None and self.cmd_time is not None:
            goal = self.target
        else:
            return None
        if (not self._cmd_pending and self.last_sent is not None
                and round_us(self.limiter.value) == round_us(goal) == self.last_sent):
            return None
        due = self._frame_due()
        if self._cmd_pending and self._drive_t is not None and due <= self._drive_t:
            # overdue, but the last step's move (a command just after a step from rest) rounded to the
            # pulses the board has: due once the fastest moving servo moved 1 µs, not at the next tick
            rates = self.config.safe_rates_us() if self.going_safe else self.config.rates_us()
            moving = np.abs(np.asarray(goal, dtype=float) - self.limiter.value) >= 0.5
            due = self._drive_t + 1.0 / float(np.max(rates[moving] if moving.any() else rates))
        return due

    def step(self, now: float) -> list[bytes]:
        """Advance to ``now`` and return the frames to write (possibly none): called for each
        fresh command, at :meth:`next_frame_at` and at the control tick. A pulses frame before it
        is due (:meth:`next_frame_at`) is held for a later step: a held command counts in
        ``stats.frames_capped`` (each step), a deferred ramp frame once in ``ramp_frames_deferred``."""
        self._expire_acks(now)
        frames: list[bytes] = []
        goal = None
        if self.active and self.cmd_time is not None and self.target is not None:
            if now - self.cmd_time > self.config.command_timeout_s:
                if not self.stale:
                    self.stale = True
                    self.stats.stale_events += 1
                    # how long after its deadline the decision was taken: the caller's scheduling
                    self.stats.last_stale_late_s = now - self.cmd_time - self.config.command_timeout_s
                    if self.config.safe_mode == "detach":
                        frames.append(self.safe_frame(now))
                    else:
                        self.going_safe = True
            else:
                self.stale = False
                self.going_safe = False
                goal = self.target
        if self.going_safe:
            goal = self.config.safe_pulses()
        if goal is None:
            self._drive_t = None  # idle: the next ramp does not integrate the idle time
        elif not self.awaiting_status:
            # the elapsed time, up to max_step_s (a stall's excess is dropped) + the deferral the
            # schedule planned (_ramp_due), plus what an earlier deferral left: at most max_step_s a
            # frame (never a bigger jump), the rest carried to the next frames (max_step_s at most)
            planned = max_step = self.config.max_step_s
            planned += self._arrival_deferral if self._cmd_pending else self._deferral()
            owed = 0.0 if self._drive_t is None else self.ramp_carry_s + min(now - self._drive_t, planned)
            before, before_t, before_carry = self.limiter.value.copy(), self._drive_t, self.ramp_carry_s
            self._drive_t = now
            pulses = round_us(self.limiter.step(goal, min(owed, max_step),
                                                self.config.safe_rates_us() if self.going_safe else None))
            self.ramp_carry_s = 0.0 if pulses == round_us(goal) else min(owed - min(owed, max_step), max_step)
            if pulses != self.last_sent:
                if now >= self._frame_due() - 1e-9:
                    self.last_sent = pulses
                    frames.append(self._pulses_frame(pulses, now))
                    if self.going_safe and pulses == round_us(goal):
                        self._reached_safe()
                else:  # held back: the limiter stays with what the board has, so the next frame
                    # moves at most rate x min(time since this one, max_step_s) — never a merged jump
                    self.limiter.value, self._drive_t, self.ramp_carry_s = before, before_t, before_carry
                    if self._cmd_pending:
                        self.stats.frames_capped += 1
                    elif self.may_send(now) and not self._deferred:
                        self._deferred = True
                        self.stats.ramp_frames_deferred += 1
            elif self.going_safe and pulses == round_us(goal):
                self._reached_safe()
            elif self._cmd_pending and pulses == round_us(goal):
                # the command's pulses are what the board has: nothing for it on the wire
                self._cmd_pending = False
                self._unsent = None
        if self._safe_pending and (not self.active or self.stale) and not self.going_safe:
            frames.append(self.safe_frame(now))
        if not frames and now - self.last_tx_t >= self.config.heartbeat_period_s:
            frames.append(self._frame(p.MsgType.HEARTBEAT, now, p.encode_heartbeat))
        return frames

    def _reached_safe(self) -> None:
        """The ramp's last frame (the safe pulses) was just built."""
        self.going_safe = False
        self._drive_t = None
        self._commanded_safe = True
        self._last_safe_seq = self.last_pulses_seq
        self.stats.safe_sent += 1

    def finish_safe(self, now: float) -> list[bytes]:
        """A process about to end (shutdown, error) whose ramp could not finish in time: the
        safe frame at once (for ``pose`` a last move at the servos' own speed; the node sends
        it only after ramping for as long as it may)."""
        self.active = False
        self._forget_command()
        return [self.safe_frame(now)]

    def on_link_up(self, now: float) -> None:
        """The port (re)opened. The board may have rebooted (detached) or still hold the last
        pulses: nothing but heartbeats goes out until its first STATUS (see the module doc). If
        the last thing commanded was the safe pose/detach, it is sent again (it may have been
        lost with the link). Without acknowledgements (dry run) the ramp starts at the safe pose."""
        self._link_down = False
        self.outstanding.clear()
        self._pulses_by_seq.clear()
        self.awaiting_status = self.expect_acks  # a dry run has no board to ask
        self._boot_check = self._frames_seen is not None
        self._resync(now, count=False, at_safe=not self.expect_acks)
        self._safe_pending = self._commanded_safe
        self.last_tx_t = -math.inf  # heartbeat at once: ask for a STATUS
        self._silence_ref = now

    def on_link_down(self, now: float) -> None:
        self._link_down = True  # frames built from now on reach no board: the horn estimate stays
        self.outstanding.clear()
        self._pulses_by_seq.clear()
        self.last_sent = None

    def on_frame(self, frame: p.Frame, now: float) -> None:
        """A frame from the board (normally a STATUS)."""
        if frame.type != p.MsgType.STATUS:
            self.stats.bad_frames_in += 1
            return
        try:
            s = p.decode_status(frame.payload)
        except p.ProtocolError:
            self.stats.bad_frames_in += 1
            return
        self.board = s
        self.last_status_t = now
        self._count_missed_boot(s)
        if s.ack_type == 0:
            if s.result == p.Result.BOOT:
                self.stats.board_boots += 1
                self.acked_pulses = None
                self.awaiting_status = False
                self._resync(now)
            elif s.result == p.Result.WATCHDOG:
                self.stats.board_watchdog_trips += 1
                self.acked_pulses = None
                self.awaiting_status = False
                self._resync(now, at_safe=bool(s.flags & p.Flag.ATTACHED))  # attached: at its safe pose
            return
        if self.awaiting_status:
            self._resume_from_board(s, now)
        if s.ack_seq in self.outstanding:
            while self.outstanding:
                seq, _ = self.outstanding.popitem(last=False)
                if seq == s.ack_seq:
                    break
                self._lost(seq)
            self.stats.frames_acked += 1
            self._outcomes.append(True)
            self.last_acked_seq = s.ack_seq
            pulses = self._pulses_by_seq.pop(s.ack_seq, None)
            if pulses is not None and s.result in (p.Result.OK, p.Result.CLAMPED):
                self.acked_pulses = pulses
            elif s.ack_type == p.MsgType.SAFE and s.result == p.Result.OK:
                self.acked_pulses = None  # detached
        if s.result in (p.Result.BAD_RANGE, p.Result.BAD_LENGTH, p.Result.BAD_TYPE):
            self.stats.board_rejects += 1
            self.stats.last_reject = f"{p.Result(s.result).name} for seq {s.ack_seq} (type 0x{s.ack_type:02X})"
            self.stats.last_reject_t = now
        elif s.result == p.Result.CLAMPED:
            self.stats.clamped_acks += 1
            self.stats.last_clamp_t = now
        if (s.flags & p.Flag.WATCHDOG and self.last_pulses_seq is not None and self.last_sent is not None
                and 0 < ((s.ack_seq - self.last_pulses_seq) & 0xFFFF) < 0x8000):
            # acknowledged after our last pulses, yet the watchdog flag is set: a trip we missed
            self.stats.board_watchdog_trips += 1
            self.acked_pulses = None
            self._resync(now, at_safe=bool(s.flags & p.Flag.ATTACHED))

    def loss_rate(self) -> tuple[float, int]:
        """(share of frames lost, frames resolved) over the last :data:`LOSS_WINDOW` frames that
        were acknowledged or given up (0.0, 0 before any)."""
        n = len(self._outcomes)
        return ((n - sum(self._outcomes)) / n if n else 0.0), n

    # --- internals ---------------------------------------------------------------------------------
    def _count_missed_boot(self, s: p.Status) -> None:
        """pyserial's ``open()`` flushes the input (``serialposix.Serial.open`` calls
        ``_reset_input_buffer``), so a BOOT sent before the port opened is never read. The first
        STATUS after a reopen still tells: a board that restarted counts its frames from 0
        again, so its ``frames`` counter is below the last one seen (link down = no frames, so
        no 16-bit wrap in between)."""
        frames = s.counters.get("frames")
        if frames is None:
            return
        if s.ack_type == 0 and s.result == p.Result.BOOT:
            self._boot_check = False
        elif self._boot_check and self._frames_seen is not None and frames < self._frames_seen:
            self.stats.board_boots += 1
            self.acked_pulses = None
        self._boot_check = False
        self._frames_seen = frames

    def _resume_from_board(self, s: p.Status, now: float) -> None:
        """First STATUS after a link (re)open: start the ramp where the board's outputs are."""
        self.awaiting_status = False
        attached = bool(s.flags & p.Flag.ATTACHED)
        if attached and not s.flags & (p.Flag.SAFE | p.Flag.WATCHDOG) and self.acked_pulses is not None:
            self.limiter.reset(self.acked_pulses)
            self._drive_t = None
            self.last_sent = None  # the first frame re-states (about) the pulses the board holds
            self.stats.resumes += 1
        else:  # at its safe pose (SAFE/WATCHDOG) or detached (rebooted: the horns stay where they were)
            self._resync(now, count=False, at_safe=attached)

    def _resync(self, now: float, count: bool = True, at_safe: bool = False) -> None:
        """The board's outputs are not what we last sent: ``at_safe`` → they are at the safe
        pose; else detached (boot, detach) or unknown yet (link reopened): the horns are where
        the last applied pulses left them (:attr:`horn_pulses`; else the limiter's value). The
        next step re-sends from there under the rate limit: never a jump to the safe pose."""
        if count:
            self.stats.resyncs += 1
        self.last_sent = None
        if at_safe:
            self.limiter.reset(self.config.safe_pulses())
        elif self.horn_pulses is not None:
            self.limiter.reset(self.horn_pulses)
        self._drive_t = None

    def _pulses_frame(self, pulses: tuple[int, ...], now: float) -> bytes:
        self._cmd_pending = False
        if self._unsent is not None and self.active and not self.going_safe:
            stamp, arrival, t_arrival = self._unsent
            self.wire_latency.append(arrival + (now - t_arrival) - stamp)
            self._unsent = None
        self._commanded_safe = False
        self.stats.pulses_sent += 1
        self.last_pulses_seq = self.seq
        if not self._link_down:
            self.horn_pulses = pulses
        if self.expect_acks:
            self._pulses_by_seq[self.seq] = pulses
        return self._frame(p.MsgType.SET_PULSES, now, p.encode_set_pulses, list(zip(self.config.channels, pulses)))

    def _frame(self, msg_type: int, now: float, encoder, *args) -> bytes:
        seq = self.seq
        data = encoder(seq, *args)
        self.seq = (seq + 1) & 0xFFFF
        self.last_tx_t = now
        self._deferred = False
        if self.stats.frames_sent == 0:
            self._silence_ref = now
        self.stats.frames_sent += 1
        if msg_type == p.MsgType.HEARTBEAT:
            self.stats.heartbeats_sent += 1
        if self.expect_acks:
            self.outstanding[seq] = (msg_type, now)
        return data

    def _expire_acks(self, now: float) -> None:
        limit = self.config.ack_timeout_s
        while self.outstanding:
            seq, (_, t) = next(iter(self.outstanding.items()))
            if now - t <= limit:
                break
            self.outstanding.popitem(last=False)
            self._lost(seq)

    def _lost(self, seq: int) -> None:
        """A frame never acknowledged (corrupted on the wire, or the board missed it). If it was
        the newest SET_PULSES, the board still holds older pulses: send the current ones again."""
        self.stats.frames_unacked += 1
        self._outcomes.append(False)
        self._pulses_by_seq.pop(seq, None)
        if seq == self._last_safe_seq and (not self.active or self.stale):
            self._safe_pending = True  # the safe pose/detach itself was lost: send it again
        elif seq == self.last_pulses_seq and self.last_sent is not None:
            self.stats.resends += 1
            self.last_sent = None

    def board_silent(self, now: float) -> bool:
        """True when frames go out but no STATUS came back for longer than ack_timeout_s."""
        if not self.expect_acks or self.stats.frames_sent == 0:
            return False
        last = self.last_status_t if self.last_status_t is not None else -math.inf
        return self.last_tx_t > last and now - max(last, self._silence_ref) > self.config.ack_timeout_s

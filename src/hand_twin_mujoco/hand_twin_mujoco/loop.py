"""The twin's real-time physics loop (no rclpy): watchdog → flexor targets → steps → samples.

:class:`PhysicsLoop` owns the lock that serialises the :class:`~hand_twin_mujoco.sim.TwinSim`.
``iterate(now)`` does one pass without sleeping (tests drive it with a fake clock);
``start()`` runs it in a daemon thread paced to the wall clock, so a ROS executor is never
blocked by physics. The command watchdog has its own lock (``wd_lock``, never held across a
physics step) and, once started, its own thread that wakes at the newest command's deadline: a
trip is decided and reported ``command_timeout`` after the last command even while a physics
step (or a render snapshot) holds the sim lock for a second; the next pass applies it. Commands
are fed under ``wd_lock`` only, so the ROS executor never waits for physics either.
Everything the outside world sees goes through callbacks:

- ``on_sample(TwinState, Decision)`` at ``publish_rate`` (joint states);
- ``on_event(level, message)`` for watchdog transitions (``warn`` on timeout, ``info`` on
  resume) and instability resets (``error``).
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np

from .render import FrameMeta
from .sim import TwinSim, TwinState
from .watchdog import Command, CommandWatchdog, Decision, RealTimePacer, WatchdogState


@dataclass(frozen=True)
class LoopStats:
    """Figures for /diagnostics. Times in s; rtf = simulated / wall time."""

    real_time_factor: float  # over the pacer window (≈ 1 when keeping up)
    real_time_factor_total: float  # since start
    max_lag: float  # worst wall − sim lag seen before stepping caught up
    lag_p99: float  # 99th percentile of that lag over the last ~4 s of stepping
    dropped_time: float  # catch-up dropped because physics fell > max_lag behind
    busy_fraction: float  # share of wall time spent inside mj_step
    command_age: float  # age of the newest command (inf: none yet)
    command_received_wall: float  # wall time (s) the newest command arrived (nan: none yet)
    watchdog: WatchdogState
    resets: int
    last_reset_reason: str | None
    sim_time: float
    steps: int
    commands: int


class PhysicsLoop:
    def __init__(
        self,
        sim: TwinSim,
        watchdog: CommandWatchdog,
        publish_rate: float = 100.0,
        on_sample: Callable[[TwinState, Decision], None] = lambda s, d: None,
        on_event: Callable[[str, str], None] = lambda level, msg: None,
        max_lag: float = 0.25,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ):
        self.sim = sim
        self.watchdog = watchdog
        self.lock = threading.Lock()
        #: guards the watchdog (feed, decide); the watchdog thread waits on it for the next deadline
        self.wd_lock = threading.Condition()
        self._wd_thread: threading.Thread | None = None
        self.pacer = RealTimePacer(sim.hand.timestep, max_lag=max_lag)
        self.set_publish_rate(publish_rate)
        self.on_sample = on_sample
        self.on_event = on_event
        self.clock = clock
        self.wall_clock = wall_clock
        self.viewer_sync: Callable[[], None] | None = None
        self.viewer_period = 1.0 / 60.0
        self._next_publish = -math.inf
        self._next_viewer = -math.inf
        self._busy = 0.0
        self._max_lag = 0.0
        self._lags: deque[float] = deque(maxlen=2000)
        self._last_reset_reason: str | None = None
        self._decision: Decision | None = None
        #: the latest time a decision was taken at (decisions never go back in time, see decide)
        self._decided_at = -math.inf
        self._commands = 0
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    # --- inputs ------------------------------------------------------------------------------------
    def set_publish_rate(self, rate: float) -> None:
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"publish_rate must be positive, got {rate}")
        self.publish_period = 1.0 / rate

    def command(self, flexions: np.ndarray, stamp: float, received: float | None = None,
                hand: int | None = None) -> None:
        """Feed a validated command (flexions (5,) in [0, 1]; stamp = header stamp in s); ``hand``:
        which hand of a HandsWatchdog (two-hand twin) it is for."""
        wall = self.wall_clock()  # first: wall + timeout is never later than the trip
        cmd = Command(np.asarray(flexions, dtype=float).copy(),
                      self.clock() if received is None else received, stamp, wall)
        with self.wd_lock:
            if hand is None:
                self.watchdog.feed(cmd)
            else:
                self.watchdog.feed(cmd, hand)
            self._commands += 1
            self.wd_lock.notify_all()

    def decide(self, now: float) -> Decision:
        """The watchdog's decision at ``now``; a change of state is reported (``on_event``) by
        whichever caller — physics pass or watchdog thread — sees it first, once.

        Decisions never go back in time: each caller reads its clock before it takes ``wd_lock``,
        so the physics pass can arrive with a ``now`` older than the watchdog thread's trip that
        just ran; deciding at that older time would report the stale command as fresh again
        ("fresh flexion commands" right after the trip, then a second trip warning). The decision
        is taken at the latest time any caller has decided at."""
        with self.wd_lock:
            self._decided_at = now = max(now, self._decided_at)
            decision = self.watchdog.decide(now)
        if decision.changed:
            if decision.state is WatchdogState.TIMED_OUT:
                self.on_event("warn", f"no flexion command for {decision.age:.3f} s "
                                      f"(> command_timeout {self.watchdog.timeout:.3f} s): safe pose "
                                      f"{np.round(decision.flexions, 3).tolist()}")
            elif decision.state is WatchdogState.OK:
                self.on_event("info", "fresh flexion commands: following them")
            else:
                self.on_event("info", f"waiting for flexion commands; safe pose "
                                      f"{np.round(decision.flexions, 3).tolist()}")
        return decision

    # --- one pass ----------------------------------------------------------------------------------
    def iterate(self, now: float) -> int:
        """Apply the watchdog's decision, step what is due, publish/sync if due. Returns steps."""
        decision = self.decide(now)
        with self.lock:
            self.sim.set_flexions(decision.flexions, urgent=decision.urgent)
            self._decision = decision
            lag = (now - (self.pacer.start if self.pacer.start is not None else now)
                   - self.pacer.dropped_time) - self.pacer.steps * self.pacer.dt
            n = self.pacer.due(now)
            t0 = time.perf_counter()
            reason = self.sim.step(n)
            self._busy += time.perf_counter() - t0
            self.pacer.done(n, now)
            if n:
                self._max_lag = max(self._max_lag, lag)
                self._lags.append(lag)
            if reason is not None:
                self._last_reset_reason = f"{reason} at sim time {self.sim.time:.3f} s"
            sample = None
            if now >= self._next_publish:
                nxt = self._next_publish + self.publish_period
                self._next_publish = nxt if nxt > now else now + self.publish_period
                sample = self.sim.state()
            if self.viewer_sync is not None and now >= self._next_viewer:
                self._next_viewer = now + self.viewer_period
                self.viewer_sync()
        if reason is not None:
            self.on_event("error", f"physics unstable ({reason}): reset to keyframe 'open'")
        if sample is not None:
            self.on_sample(sample, decision)
        return n

    # --- thread ------------------------------------------------------------------------------------
    def start(self) -> None:
        """Run :meth:`iterate` in a thread, in real time, until :meth:`stop`."""
        if self._thread is not None:
            return
        self._stop.clear()
        self.pacer.begin(self.clock())
        self._busy = 0.0
        self._max_lag = 0.0
        self._lags.clear()
        self._thread = threading.Thread(target=self._run, name="twin_physics", daemon=True)
        self._thread.start()
        self._wd_thread = threading.Thread(target=self._watch, name="twin_watchdog", daemon=True)
        self._wd_thread.start()

    #: the watchdog thread re-reads the deadline at least this often (a live command_timeout change)
    WATCH_PERIOD_S = 0.1

    def _watch(self) -> None:
        """Wake at the newest command's deadline (or when a command arrives) and decide: the trip
        does not wait for the physics thread."""
        decided = -math.inf
        try:
            while not self._stop.is_set():
                with self.wd_lock:
                    deadline = self.watchdog.deadline(after=decided)
                    wait = self.WATCH_PERIOD_S if deadline is None else deadline - self.clock() + 0.0005
                    if wait > 0:
                        self.wd_lock.wait(min(wait, self.WATCH_PERIOD_S))
                if not self._stop.is_set():
                    decided = self.clock()
                    self.decide(decided)
        except Exception as exc:  # noqa: BLE001 - report, never die silently
            self.on_event("error", f"watchdog thread stopped: {type(exc).__name__}: {exc}")

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                now = self.clock()
                self.iterate(now)
                wake = min(self.pacer.next_due(), self._next_publish)
                self._stop.wait(max(wake - self.clock(), 0.0005))
        except Exception as exc:  # noqa: BLE001 - report, never die silently
            self.on_event("error", f"physics loop stopped: {type(exc).__name__}: {exc}")

    def stop(self) -> None:
        self._stop.set()
        with self.wd_lock:
            self.wd_lock.notify_all()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
        if self._wd_thread is not None:
            self._wd_thread.join(5.0)
            self._wd_thread = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # --- outputs -----------------------------------------------------------------------------------
    def stats(self) -> LoopStats:
        now = self.clock()
        with self.lock:
            wall = (now - self.pacer.start) if self.pacer.start is not None else 0.0
            return LoopStats(
                real_time_factor=self.pacer.real_time_factor(),
                real_time_factor_total=self.pacer.total_real_time_factor(),
                max_lag=self._max_lag,
                lag_p99=float(np.percentile(self._lags, 99)) if self._lags else float("nan"),
                dropped_time=self.pacer.dropped_time,
                busy_fraction=self._busy / wall if wall > 0 else float("nan"),
                command_age=self._wd(lambda: self.watchdog.age(now)),
                command_received_wall=self._wd(
                    lambda: self.watchdog.last.received_wall if self.watchdog.last is not None else math.nan),
                watchdog=self._wd(lambda: self.watchdog.state),
                resets=self.sim.resets,
                last_reset_reason=self._last_reset_reason,
                sim_time=self.sim.time,
                steps=self.pacer.steps,
                commands=self._commands,
            )

    def _wd(self, read: Callable[[], object]):
        with self.wd_lock:
            return read()

    def snapshot(self, render_data: mujoco.MjData) -> FrameMeta:
        """Copy the state into ``render_data`` (for the render thread) and describe it."""
        with self.lock:
            self.sim.copy_state_into(render_data)
            d = self._decision
            cmd = d.command if d is not None else None
            offset = self.wall_clock() - self.clock()
            return FrameMeta(
                wall_time=self.wall_clock(),
                sim_time=self.sim.time,
                command_stamp=cmd.stamp if cmd is not None else float("nan"),
                command_received=(cmd.received + offset) if cmd is not None else float("nan"),
                flexions=tuple(float(x) for x in self.sim.flexions),
                watchdog=(d.state.value if d is not None else WatchdogState.WAITING.value),
            )

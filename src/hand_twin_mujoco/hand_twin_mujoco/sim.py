"""The twin's physics: a MuJoCo model + data driven by flexion targets (no rclpy, no threads).

:class:`TwinSim` steps the hand at the model's timestep, applies flexions through the
:class:`~hand_twin_mujoco.targets.TendonMap`, detects instability (non-finite state or a MuJoCo
bad-qpos/qvel/qacc warning) and resets to the ``open`` keyframe when it happens.

Reference filter: the length target given to each flexor actuator is not the raw command but the
output of a critically damped 2nd-order filter (``ẍ = ω²(goal − x) − 2ω ẋ``, updated every
timestep, ω = 4.744 / ``reference_settle_time`` so that a step settles within 5 % in that time).
A raw step makes the actuator pull with its full force limit at once and whips the light distal
links past their joint limits (measured on the hand_description model: up to 6.5° past a limit
during a 0 → 1 step, joint speeds ≈ 60 rad/s); the smooth reference keeps every transient within
1° of the limits while the step response stays well inside the 150 ms budget. It does not change
any steady state. ``reference_settle_time = 0`` applies commands as raw steps. Moves to the
watchdog's safe pose are *urgent*: they use half the settling time (opening is limited by the
passive extensor return anyway; measured from a fist to within 3° of open in ≈ 80 ms).
:func:`build_twin` is the one place that turns a model file into a ready sim (load, measure the
tendon map, size and apply gains).
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from .gains import GainReport, apply_gains, size_gains
from .model import HandModel, combine_hands, load_hands
from .targets import TendonMap, tendon_map

#: ω·t at which a critically damped 2nd-order step response stays within 5 % of its final value.
SETTLE_5PCT_OMEGA_T = 4.744

#: MuJoCo warnings that mean the state blew up (MuJoCo has already reset the data to qpos0).
INSTABILITY_WARNINGS = (
    mujoco.mjtWarning.mjWARN_BADQPOS,
    mujoco.mjtWarning.mjWARN_BADQVEL,
    mujoco.mjtWarning.mjWARN_BADQACC,
)


@dataclass(frozen=True)
class TwinState:
    """One sample of the twin (SI units; joint arrays (15,) in JOINT_NAMES order, tendon arrays
    (5,) in FINGER_NAMES order).

    effort: generalised force of the flexor actuators on each joint (N·m, positive = flexing).
    tension: flexor tension (N, ≥ 0 = pulling); tendon_length (m), tendon_velocity (m/s).
    """

    sim_time: float
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray
    tendon_length: np.ndarray
    tendon_velocity: np.ndarray
    tension: np.ndarray
    flexions: np.ndarray


class TwinSim:
    """Physics of the twin. Not thread-safe: the caller serialises access (one lock)."""

    def __init__(self, hand: HandModel, tmap: TendonMap, reference_settle_time: float = 0.06):
        self.hand = hand
        self.model = hand.model
        self.tmap = tmap
        self.data = mujoco.MjData(self.model)
        if not (np.isfinite(reference_settle_time) and reference_settle_time >= 0.0):
            raise ValueError(f"reference_settle_time must be ≥ 0 s, got {reference_settle_time}")
        self.omega_ref = SETTLE_5PCT_OMEGA_T / reference_settle_time if reference_settle_time > 0 else 0.0
        self.flexions = np.zeros(self.tmap.l_open.size)  # 5 per hand
        self.goal = self.tmap.ctrl(self.flexions)
        self.ref = self.goal.copy()
        self.ref_vel = np.zeros(self.tmap.l_open.size)
        self._urgent: bool | np.ndarray = False
        self.resets = 0
        self.reset()

    @property
    def time(self) -> float:
        """Simulation time (s) since the last reset."""
        return float(self.data.time)

    def reset(self) -> None:
        """Back to the ``open`` keyframe at rest, warnings cleared. The current flexion command is
        kept as the goal; the reference restarts from the open lengths (the hand is open)."""
        mujoco.mj_resetDataKeyframe(self.model, self.data, self.hand.key_open)
        self.ref = self.tmap.l_open.copy() if self.omega_ref > 0 else self.goal.copy()
        self.ref_vel = np.zeros(self.tmap.l_open.size)
        self.data.ctrl[self.hand.actuator] = self.ref
        mujoco.mj_forward(self.model, self.data)
        self._warn_base = self._warning_counts()

    def set_flexions(self, flexions: np.ndarray, urgent: bool | np.ndarray = False) -> None:
        """Command flexions (5,) in [0, 1] (5·n for n hands; flexor length goals, reached through the
        reference filter); ValueError if invalid, and then nothing changes. ``urgent`` (the
        watchdog's safe pose; a bool, or one per finger) halves the reference filter's settling time
        while this goal is followed."""
        goal = self.tmap.ctrl(flexions)
        self.flexions = np.asarray(flexions, dtype=float).copy()
        self.goal = goal
        self._urgent = urgent if isinstance(urgent, np.ndarray) else bool(urgent)
        if self.omega_ref == 0.0:
            self.ref = goal.copy()
            self.data.ctrl[self.hand.actuator] = goal

    def _advance_reference(self, dt: float) -> None:
        w = self.omega_ref * np.where(self._urgent, 2.0, 1.0)
        self.ref_vel += (w * w * (self.goal - self.ref) - 2.0 * w * self.ref_vel) * dt
        self.ref += self.ref_vel * dt
        np.clip(self.ref, self.tmap.l_closed, self.tmap.l_open, out=self.ref)
        self.data.ctrl[self.hand.actuator] = self.ref

    def _warning_counts(self) -> np.ndarray:
        return np.array([self.data.warning[w].number for w in INSTABILITY_WARNINGS])

    def instability(self) -> str | None:
        """A description of why the state is unusable, or None if it is fine."""
        counts = self._warning_counts()
        if np.any(counts > self._warn_base):
            names = [w.name for w, c, b in zip(INSTABILITY_WARNINGS, counts, self._warn_base) if c > b]
            return f"MuJoCo warning {', '.join(names)}"
        d = self.data
        for name, arr in (("qpos", d.qpos), ("qvel", d.qvel), ("qacc", d.qacc)):
            if not np.all(np.isfinite(arr)):
                return f"non-finite {name}"
        return None

    def step(self, n: int = 1) -> str | None:
        """Advance ``n`` timesteps. If the state became unstable, reset to the keyframe and return
        the reason (the caller reports it); otherwise None."""
        if n <= 0:
            return None
        if self.omega_ref > 0.0:
            dt = self.hand.timestep
            for _ in range(int(n)):
                self._advance_reference(dt)
                mujoco.mj_step(self.model, self.data)
        else:
            mujoco.mj_step(self.model, self.data, nstep=int(n))
        reason = self.instability()
        if reason is not None:
            self.resets += 1
            self.reset()
        return reason

    def state(self) -> TwinState:
        """Copy of the current joint and flexor state."""
        d, h = self.data, self.hand
        force = d.actuator_force[h.actuator]
        return TwinState(
            sim_time=float(d.time),
            position=d.qpos[h.qpos_adr].copy(),
            velocity=d.qvel[h.dof_adr].copy(),
            effort=d.qfrc_actuator[h.dof_adr].copy(),
            tendon_length=d.ten_length[h.flexor_tendon].copy(),
            tendon_velocity=d.ten_velocity[h.flexor_tendon].copy(),
            tension=-force.copy(),
            flexions=self.flexions.copy(),
        )

    def copy_state_into(self, other: mujoco.MjData) -> None:
        """Copy what rendering needs (qpos, qvel, act, ctrl, time) into another MjData of the model."""
        other.qpos[:] = self.data.qpos
        other.qvel[:] = self.data.qvel
        if self.model.na:
            other.act[:] = self.data.act
        other.ctrl[:] = self.data.ctrl
        other.time = self.data.time


@dataclass(frozen=True)
class TwinBuild:
    hand: HandModel
    tmap: TendonMap
    gains: GainReport
    notes: tuple[str, ...]
    reference_settle_time: float = 0.06
    #: Two-hand scenes: each hand alone and its gain report (``hand``/``tmap`` then cover all hands).
    hands: tuple[HandModel, ...] = ()
    gain_reports: tuple[GainReport, ...] = ()

    def sim(self) -> TwinSim:
        """A fresh TwinSim on this model (open keyframe, at rest)."""
        return TwinSim(self.hand, self.tmap, self.reference_settle_time)


def build_twin(
    path: str | None = None,
    camera: str = "front",
    integrator: str = "implicitfast",
    settle_time: float = 0.10,
    damping_ratio: float = 1.0,
    reach: float = 0.95,
    reference_settle_time: float = 0.06,
    prefixes: tuple[str, ...] = ("",),
) -> TwinBuild:
    """Load the model, measure the flexion → length map and size/apply the gains.

    Raises ModelContractError for a model that breaks the interface. ``notes`` collects the
    warnings of gain sizing and actuator preparation (to be logged by the caller). ``prefixes``:
    one per hand of the scene (two-hand scene: ``("left_", "right_")``); with more than one, the
    sim drives all hands at once (5 flexions per hand, in this order) and each hand's gains are
    sized on its own.
    """
    hands = load_hands(path, prefixes, camera=camera, integrator=integrator)
    tmaps, reports, notes = [], [], []
    for hand in hands:
        tmap = tendon_map(hand)
        report = size_gains(hand, tmap, settle_time=settle_time, damping_ratio=damping_ratio, reach=reach)
        notes += list(report.warnings) + list(apply_gains(hand, tmap, report))
        tmaps.append(tmap)
        reports.append(report)
    if len(hands) == 1:
        return TwinBuild(hand=hands[0], tmap=tmaps[0], gains=reports[0], notes=tuple(notes),
                         reference_settle_time=reference_settle_time)
    return TwinBuild(hand=combine_hands(hands), tmap=TendonMap.concat(tmaps), gains=reports[0], notes=tuple(notes),
                     reference_settle_time=reference_settle_time, hands=tuple(hands), gain_reports=tuple(reports))

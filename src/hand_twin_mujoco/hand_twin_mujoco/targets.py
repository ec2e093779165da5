"""Flexion → flexor tendon length target (no rclpy).

Each digit's flexor actuator is a MuJoCo position actuator whose ``ctrl`` is a *length* target for
the flexor tendon. Flexion ``f`` in [0, 1] maps linearly between two lengths measured on the
compiled model at load time (never hard-coded)::

    ctrl = L_open + f · (L_closed − L_open)

``L_open``: flexor length with every joint at 0 (the keyframe ``open``); ``L_closed``: flexor length
with the digit's three joints at their upper (closed) limits. The flexor shortens as the digit
flexes, so ``L_closed < L_open`` (checked). Because the controller tracks a length, not a force,
the steady state is an equilibrium between the actuator's stiffness and the passive extensor /
joint springs at every flexion, which is what makes the curl proportional instead of binary.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from hand_common.contract import FINGER_JOINTS, FINGER_NAMES, JOINT_NAMES

from .model import HandModel, ModelContractError


@dataclass(frozen=True)
class TendonMap:
    """Per-digit flexor lengths (m), shape (5,) in FINGER_NAMES order (5·n, hand by hand, for
    several hands: :meth:`concat`)."""

    l_open: np.ndarray
    l_closed: np.ndarray

    @property
    def excursion(self) -> np.ndarray:
        """L_open − L_closed (m, > 0): flexor shortening from open to fully closed."""
        return self.l_open - self.l_closed

    def ctrl(self, flexions: np.ndarray) -> np.ndarray:
        """Length targets (m) for flexions (5,) in [0, 1]; ValueError if non-finite or out of range."""
        f = np.asarray(flexions, dtype=float)
        if f.shape != self.l_open.shape:
            raise ValueError(f"expected {self.l_open.size} flexions, got shape {f.shape}")
        if not np.all(np.isfinite(f)):
            raise ValueError(f"non-finite flexion in {f.tolist()}")
        if np.any(f < 0.0) or np.any(f > 1.0):
            raise ValueError(f"flexion outside [0, 1] in {f.tolist()}")
        return self.l_open + f * (self.l_closed - self.l_open)

    @staticmethod
    def concat(maps: list[TendonMap]) -> TendonMap:
        """The maps of several hands, hand by hand."""
        return TendonMap(np.concatenate([m.l_open for m in maps]), np.concatenate([m.l_closed for m in maps]))

    def flexion_of_length(self, lengths: np.ndarray) -> np.ndarray:
        """Inverse map (unclipped): the flexion whose target equals the given flexor lengths."""
        return (self.l_open - np.asarray(lengths, dtype=float)) / self.excursion


def digit_closed_qpos(hand: HandModel, finger: str, base: np.ndarray) -> np.ndarray:
    """``base`` qpos with the joints of ``finger`` set to their upper (closed) limits."""
    q = base.copy()
    for j in FINGER_JOINTS[finger]:
        i = JOINT_NAMES.index(j)
        q[hand.qpos_adr[i]] = hand.joint_upper[i]
    return q


def tendon_map(hand: HandModel) -> TendonMap:
    """Measure L_open / L_closed of every flexor on a scratch MjData (mj_forward).

    Raises ModelContractError if a flexor does not shorten by at least 1 mm from open to closed
    (a flexor routed on the dorsal side, or sites that do not cross the joints).
    """
    m = hand.model
    d = mujoco.MjData(m)
    open_q = m.key_qpos[hand.key_open].copy()
    open_q[hand.qpos_adr] = 0.0
    d.qpos[:] = open_q
    mujoco.mj_forward(m, d)
    l_open = d.ten_length[hand.flexor_tendon].copy()
    l_closed = np.empty(len(FINGER_NAMES))
    for k, f in enumerate(FINGER_NAMES):
        d.qpos[:] = digit_closed_qpos(hand, f, open_q)
        mujoco.mj_forward(m, d)
        l_closed[k] = d.ten_length[hand.flexor_tendon[k]]
    short = l_open - l_closed
    for f, s in zip(FINGER_NAMES, short):
        if s < 1e-3:
            raise ModelContractError(
                f"flexor '{f}_flexor' shortens by only {s * 1e3:.2f} mm from open to closed "
                "(must shorten: route it on the palmar side of every joint)")
    return TendonMap(l_open=l_open, l_closed=l_closed)

"""Flexor position-actuator gains sized from the compiled model (no rclpy).

Reasoning (per digit, evaluated on the model at load time, nothing hard-coded):

1. **Passive stiffness.** At the digit poses ``q = s · upper`` for s in {0, 0.5, 1} (other digits
   open, zero velocity), the joint-space stiffness ``K_q = −∂(qfrc_passive − qfrc_bias)/∂q``
   (3×3, central differences) collects the extensor tendon spring, any joint springs and gravity.
   The flexor's tendon Jacobian ``J = ∂L/∂q`` (1×3) by the same central differences.
2. **One-DOF reduction.** A quasi-static shortening of the flexor moves the joints along the mode
   ``u = K_q⁻¹ Jᵀ / (J K_q⁻¹ Jᵀ)`` (the springs decide how the shortening is shared). Projected on
   it: tendon-space stiffness ``K_t = uᵀ K_q u = 1 / (J K_q⁻¹ Jᵀ)`` (N/m), inertia ``m_t = uᵀ M u``
   (kg, joint armature included, ``mj_fullM``) and passive damping ``d_t = uᵀ D u`` (N·s/m,
   ``D = −∂qfrc_passive/∂q̇``). Worst case (largest) of the three poses is used for each.
3. **Closed loop.** With the position actuator ``F = kp (ctrl − L) − kv L̇`` the tendon shortening
   ``x`` obeys ``m_t ẍ + (d_t + kv) ẋ + (K_t + kp) x = kp x*``. Its steady state is
   ``x = x* · kp / (kp + K_t)``: to reach a fraction ``reach`` of every target (so the curl spans
   the joint ranges) ``kp ≥ K_t · reach / (1 − reach)``.
4. **Speed.** ``kv = max(0, 2 ζ √((K_t + kp) m_t) − d_t)``; ``kp`` is raised (doubling, then
   bisection) until the 2nd-order step response settles within 5 % in ``settle_time``
   (closed-form response of the reduced model). If the passive damping alone overdamps the
   digit, this raises ``kp`` until ``(K_t + kp) / d_t`` is fast enough.
5. **Integrator limit.** ``kp`` is capped so that ``ω_n · timestep ≤ max_omega_dt`` (stiffness is
   integrated explicitly even with ``implicitfast``); hitting the cap is reported as a warning
   naming the model parameter to change (joint armature or timestep).
6. **Force limit.** The tension needed to hold the digit closed against its passive elements
   (least squares on the static torque balance at the closed pose) is compared with the
   actuator's ``Fmax``; a shortfall is reported with the number needed.

The reduced model ignores the internal modes (how the shortening is shared among MCP/PIP/DIP);
``sweep`` measures the full model.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

from hand_common.contract import FINGER_JOINTS, FINGER_NAMES, JOINT_NAMES

from .model import HandModel
from .targets import TendonMap

SETTLE_TOL = 0.05


@dataclass(frozen=True)
class DigitGains:
    """Gains and the model quantities they came from, for one digit (SI units)."""

    finger: str
    k_tendon: float  # passive stiffness seen by the flexor, N/m
    m_tendon: float  # inertia seen by the flexor, kg
    d_tendon: float  # passive damping seen by the flexor, N·s/m
    kp: float  # N/m
    kv: float  # N·s/m
    reach: float  # steady-state fraction of the length target reached, kp / (kp + K_t)
    omega_n: float  # closed-loop natural frequency, rad/s
    zeta: float  # closed-loop damping ratio
    settle_time: float  # predicted 5 % settling time of the reduced model, s
    tension_closed: float  # tension needed to hold the digit closed, N
    f_max: float  # actuator force limit, N
    stiffness_eigs: tuple[float, ...]  # eigenvalues of K_q at mid-flexion, N·m/rad
    k_tendon_poses: tuple[float, ...]  # K_t at 0, 0.5 and 1 × the closed pose, N/m


@dataclass(frozen=True)
class GainReport:
    digits: tuple[DigitGains, ...]
    warnings: tuple[str, ...] = field(default_factory=tuple)

    def lines(self) -> list[str]:
        """Human-readable summary, one line per digit then the warnings."""
        out = []
        for g in self.digits:
            out.append(
                f"{g.finger}: K_t={g.k_tendon:.1f} N/m m_t={g.m_tendon * 1e3:.2f} g d_t={g.d_tendon:.3f} N·s/m"
                f" → kp={g.kp:.0f} N/m kv={g.kv:.2f} N·s/m (reach {g.reach:.3f}, ω_n {g.omega_n:.0f} rad/s,"
                f" ζ {g.zeta:.2f}, t5% {g.settle_time * 1e3:.0f} ms; tension closed {g.tension_closed:.1f} N"
                f" of Fmax {g.f_max:.1f} N)")
        return out + [f"WARNING: {w}" for w in self.warnings]


def step_response(m: float, c: float, k: float, t: np.ndarray) -> np.ndarray:
    """Unit-step response of m ẍ + c ẋ + k x = k u (closed form, x(0) = ẋ(0) = 0)."""
    disc = complex(c * c - 4.0 * m * k)
    s1 = (-c + np.sqrt(disc)) / (2.0 * m)
    s2 = (-c - np.sqrt(disc)) / (2.0 * m)
    if abs(s1 - s2) <= 1e-9 * abs(s1):  # critically damped
        w = -s1.real
        return 1.0 - (1.0 + w * t) * np.exp(-w * t)
    y = 1.0 - (s2 * np.exp(s1 * t) - s1 * np.exp(s2 * t)) / (s2 - s1)
    return y.real


def _settle_time(m: float, c: float, k: float, horizon: float) -> float:
    """Time after which the unit-step response of m ẍ + c ẋ + k x = k u stays within 5 %."""
    t = np.linspace(0.0, horizon, 4001)
    y = step_response(m, c, k, t)
    outside = np.nonzero(np.abs(y - 1.0) > SETTLE_TOL)[0]
    if len(outside) == 0:
        return 0.0
    if outside[-1] == len(t) - 1:
        return float("inf")
    return float(t[outside[-1] + 1])


def _passive(m: mujoco.MjModel, d: mujoco.MjData) -> np.ndarray:
    mujoco.mj_forward(m, d)
    return d.qfrc_passive - d.qfrc_bias


def _digit_quantities(hand: HandModel, d: mujoco.MjData, k: int, qpos: np.ndarray, h: float = 1e-5):
    """K_q (3×3), D_q (3×3), M (3×3 block incl. armature), J (3,), passive force f (3,) at qpos."""
    m = hand.model
    f = FINGER_NAMES[k]
    idx = [JOINT_NAMES.index(j) for j in FINGER_JOINTS[f]]
    qadr, dadr = hand.qpos_adr[idx], hand.dof_adr[idx]
    d.qvel[:] = 0.0
    t = hand.flexor_tendon[k]
    K = np.zeros((3, 3))
    J = np.zeros(3)
    for c, qa in enumerate(qadr):
        d.qpos[:] = qpos
        d.qpos[qa] += h
        fp = _passive(m, d)[dadr]
        lp = d.ten_length[t]
        d.qpos[qa] -= 2 * h
        fm = _passive(m, d)[dadr]
        lm = d.ten_length[t]
        K[:, c] = -(fp - fm) / (2 * h)
        J[c] = (lp - lm) / (2 * h)
    d.qpos[:] = qpos
    D = np.zeros((3, 3))
    for c, da in enumerate(dadr):
        d.qvel[:] = 0.0
        d.qvel[da] = h
        fp = _passive(m, d)[dadr]
        d.qvel[da] = -h
        fm = _passive(m, d)[dadr]
        D[:, c] = -(fp - fm) / (2 * h)
    d.qvel[:] = 0.0
    f0 = _passive(m, d)[dadr]
    full_m = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, full_m)  # MuJoCo 4 signature (m, d, dst); includes joint armature
    M = full_m[np.ix_(dadr, dadr)]
    return K, D, M, J, f0


def size_gains(
    hand: HandModel,
    tmap: TendonMap,
    settle_time: float = 0.10,
    damping_ratio: float = 1.0,
    reach: float = 0.95,
    max_omega_dt: float = 0.5,
) -> GainReport:
    """Compute kp/kv per digit from the model (see the module docstring for the reasoning).

    settle_time: target 5 % settling time of the reduced model (s); damping_ratio: ζ of the
    closed loop; reach: steady-state fraction of each length target; max_omega_dt: cap on
    ω_n · timestep. Returns a GainReport (the model is not modified; see :func:`apply_gains`).
    """
    m = hand.model
    d = mujoco.MjData(m)
    base = m.key_qpos[hand.key_open].copy()
    base[hand.qpos_adr] = 0.0
    dt = hand.timestep
    warnings: list[str] = []
    digits = []
    for k, f in enumerate(FINGER_NAMES):
        idx = [JOINT_NAMES.index(j) for j in FINGER_JOINTS[f]]
        ks, ms, ds, eig_mid, t_closed = [], [], [], (), 0.0
        for s in (0.0, 0.5, 1.0):
            q = base.copy()
            q[hand.qpos_adr[idx]] = s * hand.joint_upper[idx]
            K, D, M, J, f0 = _digit_quantities(hand, d, k, q)
            Ks = 0.5 * (K + K.T)
            eig = np.linalg.eigvalsh(Ks)
            if s == 0.5:
                eig_mid = tuple(float(e) for e in eig)
            if eig[0] <= 1e-3 * eig[-1]:
                warnings.append(
                    f"{f}: passive joint stiffness at {s:.1f}·closed is (near-)singular, eigenvalues "
                    f"{np.round(eig, 5).tolist()} N·m/rad: the flexor alone cannot decide how flexion is "
                    "shared among the 3 joints; give every joint its own return spring (joint stiffness) "
                    "or extensor moment arms that differ in ratio from the flexor's")
                Ks = Ks + (1e-3 * eig[-1] - min(eig[0], 0.0)) * np.eye(3)
            kinv_j = np.linalg.solve(Ks, J)
            c = float(J @ kinv_j)
            u = kinv_j / c
            ks.append(float(u @ Ks @ u))
            ms.append(float(u @ M @ u))
            ds.append(float(u @ (0.5 * (D + D.T)) @ u))
            if s == 1.0:
                # static balance J^T F + f0 = 0 in least squares; tension = −F (pull)
                t_closed = float(J @ f0 / (J @ J))
        k_t, m_t, d_t = max(ks), max(ms), max(ds)
        f_max = float(-m.actuator_forcerange[hand.actuator[k], 0])

        def kv_for(kp: float, k_t=k_t, m_t=m_t, d_t=d_t) -> float:
            return max(0.0, 2.0 * damping_ratio * np.sqrt((k_t + kp) * m_t) - d_t)

        def settle(kp: float, k_t=k_t, m_t=m_t, d_t=d_t) -> float:
            return _settle_time(m_t, d_t + kv_for(kp), k_t + kp, horizon=max(1.0, 20 * settle_time))

        kp_cap = max(m_t * (max_omega_dt / dt) ** 2 - k_t, 0.0)
        kp = k_t * reach / (1.0 - reach)
        if settle(kp) > settle_time:
            lo, hi = kp, kp
            while settle(hi) > settle_time and hi < 1e3 * kp_cap + 1e9:
                lo, hi = hi, hi * 2.0 + 1.0
            for _ in range(30):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if settle(mid) > settle_time else (lo, mid)
            kp = hi
        if kp > kp_cap:
            warnings.append(
                f"{f}: kp {kp:.0f} N/m needed for {settle_time * 1e3:.0f} ms settling exceeds the integrator cap "
                f"{kp_cap:.0f} N/m (ω_n·dt ≤ {max_omega_dt} with inertia {m_t * 1e3:.3f} g at the tendon, "
                f"timestep {dt * 1e3:.1f} ms): raise joint armature or lower opt.timestep; capped")
            kp = kp_cap
        kv = kv_for(kp)
        omega = float(np.sqrt((k_t + kp) / m_t))
        zeta = float((d_t + kv) / (2.0 * np.sqrt((k_t + kp) * m_t)))
        g = DigitGains(
            finger=f, k_tendon=k_t, m_tendon=m_t, d_tendon=d_t, kp=float(kp), kv=float(kv),
            reach=float(kp / (kp + k_t)), omega_n=omega, zeta=zeta, settle_time=settle(kp),
            tension_closed=t_closed, f_max=f_max, stiffness_eigs=eig_mid,
            k_tendon_poses=tuple(ks))
        needed = t_closed / g.reach if g.reach > 0 else float("inf")
        if needed > f_max:
            warnings.append(
                f"{f}: holding the digit closed needs ≈{needed:.1f} N of flexor tension but the "
                f"actuator's forcerange allows {f_max:.1f} N: raise {f}_flexor forcerange to ≥ "
                f"{1.2 * needed:.1f} N or soften the extensor/joint springs")
        digits.append(g)
    return GainReport(digits=tuple(digits), warnings=tuple(warnings))


def apply_gains(hand: HandModel, tmap: TendonMap, report: GainReport) -> list[str]:
    """Write kp/kv into the position actuators (gainprm[0] = kp, biasprm = [0, −kp, −kv]).

    Also makes sure ``ctrlrange`` covers [L_closed, L_open] when the actuator is ctrl-limited
    (widened on this in-memory copy, with a returned warning). Returns the warnings.
    """
    m = hand.model
    notes = []
    for k, g in enumerate(report.digits):
        a = hand.actuator[k]
        m.actuator_gainprm[a, :] = 0.0
        m.actuator_biasprm[a, :] = 0.0
        m.actuator_gainprm[a, 0] = g.kp
        m.actuator_biasprm[a, 1] = -g.kp
        m.actuator_biasprm[a, 2] = -g.kv
        if m.actuator_ctrllimited[a]:
            lo, hi = m.actuator_ctrlrange[a]
            need_lo, need_hi = float(tmap.l_closed[k]), float(tmap.l_open[k])
            if lo > need_lo or hi < need_hi:
                m.actuator_ctrlrange[a] = (min(lo, need_lo), max(hi, need_hi))
                notes.append(
                    f"{g.finger}_flexor ctrlrange [{lo:.4f}, {hi:.4f}] m did not cover the flexor lengths "
                    f"[{need_lo:.4f}, {need_hi:.4f}] m: widened in the twin (fix it in hand_description)")
    return notes

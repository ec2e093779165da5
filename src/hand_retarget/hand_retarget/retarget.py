"""Retargeting onto the dexterous hand with dex-retargeting (no rclpy).

:class:`Retargeter` builds a ``dex_retargeting`` optimizer (``RetargetingConfig.from_dict(...).build()``,
a ``SeqRetargeting`` warm-started from the previous solution) over the URDF that
:mod:`hand_description.dex` generates, and maps 21 landmarks in the robot's palm frame (from
:class:`hand_retarget.preprocess.Preprocessor`) to the 20 joint angles in
:attr:`hand_description.dex.DexHandDescription.joint_names` order (DIPs filled in by the URDF's
mimic coupling).

Methods (``method``):

- ``dexpilot`` (default): DexPilot (Handa et al. 2020) as dex-retargeting implements it: the 10
  vectors between the wrist and the 5 fingertips and between every pair of fingertips; a
  thumb-finger vector shorter than ``project_dist`` is replaced by a 0.1 mm one (pinch prior,
  released beyond ``escape_dist``), weighted 200x.
- ``vector``: the 10 vectors from the wrist to the 5 tips and to the 5 middle joints (thumb IP,
  finger PIP), all equally weighted: faithful to the operator's geometry, no pinch prior.

``fast_objective`` (default) evaluates the optimizer's objective and gradient with
:mod:`hand_retarget.fast_objective` (identical values, about 3x cheaper); the optimizer, its
projection logic and the mimic adaptor stay dex-retargeting's.

dex-retargeting's own low-pass filter is off: :mod:`hand_retarget.safety` does the smoothing and
limiting. ``scaling`` multiplies the human vectors (1.0 when the preprocessor already scaled them).

Any other robot hand (:class:`hand_retarget.robot.RobotHand`, e.g. LEAP or Allegro) is retargeted
through its own dex-retargeting configuration file: its type (DexPilot, vector, position), link
names, target joints and human indices are used as written; only ``urdf_path`` (resolved),
``low_pass_alpha`` (off), ``scaling_factor`` (``scaling``: the preprocessor already scaled the
human to the robot) and, for DexPilot, ``project_dist``/``escape_dist`` are set from here. The
joint order is then the robot's (``RobotHand.joint_names``, the URDF's movable joints; ``<mimic>`` joints by their equation, within
their limits: :meth:`~hand_retarget.robot.RobotHand.couple`). ``position``
(offline configs) has no fast objective.
"""

from __future__ import annotations

import contextlib
import io
import math
from dataclasses import dataclass

import numpy as np

from hand_common.contract import FINGER_NAMES

METHODS = ("dexpilot", "vector", "position")
DIGITS = FINGER_NAMES  # the contract's digit names, thumb first
#: vector method: human landmarks of the task links (5 tips, then thumb IP and finger PIPs)
VECTOR_HUMAN = (4, 8, 12, 16, 20, 3, 6, 10, 14, 18)


@dataclass(frozen=True)
class RetargetConfig:
    method: str = "dexpilot"
    scaling: float = 1.0
    project_dist: float = 0.03       # m (dexpilot)
    escape_dist: float = 0.04        # m (dexpilot)
    normal_delta: float = 4e-3       # vector: weight of the smoothness term
    huber_delta: float = 2e-2        # vector: Huber loss knee (m)
    fast_objective: bool = True      # evaluate the same objective with hand_retarget.fast_objective

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        for name in ("scaling", "project_dist", "escape_dist", "normal_delta", "huber_delta"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v}")
        if self.escape_dist < self.project_dist:
            raise ValueError(f"escape_dist ({self.escape_dist}) must be >= project_dist ({self.project_dist})")


class Retargeter:
    """dex-retargeting over the dexterous hand. ``desc``: the DexHandDescription, ``urdf_path``: its URDF."""

    def __init__(self, desc, urdf_path: str, config: RetargetConfig = RetargetConfig()):
        from dex_retargeting.retargeting_config import RetargetingConfig

        from .robot import RobotHand

        self.desc = desc
        self.config = config
        if isinstance(desc, RobotHand):
            cfg = dict(desc.retargeting)
            cfg.update(urdf_path=desc.urdf_path, low_pass_alpha=-1.0, scaling_factor=config.scaling)
            if str(cfg.get("type", "")).lower() == "dexpilot":
                cfg.update(project_dist=config.project_dist, escape_dist=config.escape_dist)
            names = desc.joint_names
        else:
            cfg = self._dex_hand_config(desc, urdf_path, config)
            names = desc.joint_names
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                self._seq = RetargetingConfig.from_dict(cfg).build()
        except ValueError as exc:  # dex-retargeting names the link/joint; add which files
            where = getattr(desc, "config_file", "hand_description's dex_hand.yaml")
            raise ValueError(f"{exc} (names from {where}, URDF {cfg['urdf_path']})") from exc
        self._joint_names = tuple(names)
        if config.fast_objective and str(cfg.get("type", "")).lower() != "position":
            from .fast_objective import accelerate

            accelerate(self._seq.optimizer)
        indices = np.asarray(self._seq.optimizer.target_link_human_indices)
        if indices.ndim == 1:    # position: absolute positions of the human landmarks
            self._origin, self._task = None, indices
        else:
            self._origin, self._task = indices[0], indices[1]
        pin_names = list(self._seq.joint_names)
        missing = [n for n in names if n not in pin_names]
        if missing:
            raise ValueError(f"joints {missing} are not in the URDF {cfg['urdf_path']}")
        self._order = np.array([pin_names.index(n) for n in names])
        self.failures = 0

    @staticmethod
    def _dex_hand_config(desc, urdf_path: str, config: RetargetConfig) -> dict:
        if config.method == "position":
            raise ValueError("method 'position' needs a robot with a dex-retargeting position config")
        tips = [desc.digit(d).tip_link for d in DIGITS]
        free = [j.name for j in desc.joints if j.mimic is None]
        cfg = dict(type=config.method, urdf_path=str(urdf_path), low_pass_alpha=-1.0,
                   scaling_factor=config.scaling, target_joint_names=free)
        if config.method == "dexpilot":
            cfg.update(wrist_link_name=desc.palm_link, finger_tip_link_names=tips,
                       project_dist=config.project_dist, escape_dist=config.escape_dist)
        else:
            mids = [desc.digit(d).landmark_links[2] if d == "thumb" else desc.digit(d).landmark_links[1]
                    for d in DIGITS]
            cfg.update(target_origin_link_names=[desc.palm_link] * 10, target_task_link_names=tips + mids,
                       target_link_human_indices=np.array([[0] * 10, list(VECTOR_HUMAN)]),
                       normal_delta=config.normal_delta, huber_delta=config.huber_delta)
        return cfg

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self._joint_names

    def reference(self, landmarks: np.ndarray) -> np.ndarray:
        """The optimizer's reference vectors (k, 3) from (21, 3) landmarks in the robot palm frame."""
        p = np.asarray(landmarks, dtype=float)
        if self._origin is None:
            return p[self._task]
        return p[self._task] - p[self._origin]

    def retarget(self, landmarks: np.ndarray) -> np.ndarray:
        """(n,) rad in ``joint_names`` order for (21, 3) landmarks (m, robot palm frame).

        ValueError for non-finite/malformed input. If the optimizer returns non-finite values the
        warm start is restored and the previous solution is returned (``failures`` counts it)."""
        p = np.asarray(landmarks, dtype=float)
        if p.shape != (21, 3) or not np.all(np.isfinite(p)):
            raise ValueError("retargeting needs 21x3 finite landmarks")
        previous = self._seq.last_qpos.copy()
        with contextlib.redirect_stdout(io.StringIO()):
            q = self._seq.retarget(self.reference(p))
        if not np.all(np.isfinite(q)):
            self.failures += 1
            self._seq.last_qpos = previous
            q = self._seq.get_qpos()
            q = self._couple_pin(q)
        q = np.asarray(q, dtype=float)[self._order]
        couple = getattr(self.desc, "couple", None)
        # mimic joints by the URDF's equation, inside their own limits (dex-retargeting's adaptor
        # leaves them unclipped: Ability's q2 = 1.0585 q1 + 0.7235 passes its 2.6586 limit); nlopt's
        # bounds are met to ~1e-5 rad only: clipped into the URDF limits
        if couple is None:
            return q
        return couple(np.clip(q, self.desc.lower, self.desc.upper))

    def _couple_pin(self, q: np.ndarray) -> np.ndarray:
        adaptor = self._seq.optimizer.adaptor
        return adaptor.forward_qpos(q) if adaptor is not None else q

    def reset(self, q: np.ndarray | None = None) -> None:
        """Restart the warm start (at ``q`` (20,) in ``joint_names`` order, default mid-range)."""
        self._seq.reset()
        if q is not None:
            full = np.zeros(len(self._order))
            full[self._order] = np.asarray(q, dtype=float)
            self._seq.set_qpos(full)

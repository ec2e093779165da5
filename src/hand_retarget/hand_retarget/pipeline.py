"""The whole dexterous chain as plain Python (no rclpy): what ``retarget_node`` wires to topics, and
what the tests, the benchmark and the demo run in-process.

landmarks (21, 3) + handedness (+ image landmarks: a pinch the picture shows moves the world
                                   thumb there, :func:`~hand_retarget.kapandji.image_pinch`)
                                   ▼
                                   :class:`~hand_retarget.preprocess.Preprocessor` ─► miss (reason)
                                   │ robot palm frame, mirrored, calibrated, scaled
                                   ├─► human Kapandji score (on the operator's own geometry, and
                                   │   the picture's in-plane distances where the palm faces the camera)
                                   ▼
                     :mod:`~hand_retarget.rest_blend`: open digits -> the robot's rest landmarks
                                   ▼  (all open: the target is the rest pose, no optimizer call)
                     :class:`~hand_retarget.retarget.Retargeter` (dex-retargeting) ─► target (20,) rad
                                   ▼  every control tick
                     :class:`~hand_retarget.safety.SafetyFilter` ─► joint command (20,) rad

The robot's Kapandji score comes from :meth:`DexPipeline.robot_score` on *measured* joint angles
(the twin's), through the description's forward kinematics; for the dexterous hand a site also
counts as touched when the thumb tip is within contact distance of it (the two phalanges' radii,
:func:`~hand_retarget.kapandji.contact_distances`): a twin whose thumb rests on a fingertip keeps
its tip points 13-15 mm (0.23-0.26 palm widths) apart, on the edge of the 0.25 ``touch`` radius.

``desc`` is either hand_description's DexHandDescription (``urdf_path``: its URDF) or any
:class:`hand_retarget.robot.RobotHand` (``urdf_path`` ignored: the robot knows its URDF): joint
limits come from its URDF, the crossing clamp's abduction table from its kinematics
(:meth:`~hand_retarget.robot.RobotHand.finger_geometry`), the Kapandji sites from its site table
(levels it cannot express are reported as ``unreachable``), the open pose from its rest pose.
An underactuated robot's ``<mimic>`` joints follow their equation in the target (dex-retargeting's
mimic adaptor), in every command (the safety filter's ``coupling``:
:meth:`~hand_retarget.robot.RobotHand.couple`) and in the robot score's forward kinematics.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from .kapandji import (
    KapandjiConfig,
    KapandjiResult,
    contact_distances,
    image_pinch,
    image_site_distances,
    kapandji,
    robot_kapandji,
)
from .preprocess import PreprocessConfig, Preprocessor
from .rest_blend import RestBlendConfig, blend, blend_weights, default_windows, digit_flexions
from .retarget import RetargetConfig, Retargeter
from .safety import CrossingClamp, SafetyFilter, SafetyLimits, finger_geometry

OPEN_POSE_CHOICES = ("on", "off")


@dataclass(frozen=True)
class PipelineConfig:
    preprocess: PreprocessConfig = field(default_factory=PreprocessConfig)
    retarget: RetargetConfig = field(default_factory=RetargetConfig)
    kapandji: KapandjiConfig = field(default_factory=KapandjiConfig)
    max_velocity: float = 10.0         # rad/s
    max_acceleration: float = 500.0    # rad/s^2
    max_step: float = 0.1              # rad per tick
    crossing_clamp: bool = True
    crossing_clearance: float = 0.0    # m across the palm; 0 = the sum of the phalanx radii
    open_pose: str = "off"             # open-hand calibration (preprocess.PreprocessConfig.open_pose)
    rest_blend: RestBlendConfig = field(default_factory=RestBlendConfig)   # open hand -> rest pose

    def __post_init__(self) -> None:
        if not (math.isfinite(self.crossing_clearance) and self.crossing_clearance >= 0):
            raise ValueError(f"crossing_clearance must be >= 0 m, got {self.crossing_clearance}")
        if self.open_pose not in OPEN_POSE_CHOICES:
            raise ValueError(f"open_pose must be one of {OPEN_POSE_CHOICES}, got {self.open_pose!r}")


@dataclass(frozen=True)
class FrameResult:
    """One landmark frame. ok False = a miss (reason); otherwise ``target`` (20,) rad, ``human`` score
    and ``landmarks`` (21, 3) m in the robot palm frame (the retargeting input). ``pinch``: the
    Kapandji level (3-6) of the fingertip the picture showed the thumb on while the world landmarks
    had it apart (the world thumb was moved there, :func:`~hand_retarget.kapandji.image_pinch`), 0 if
    none."""

    ok: bool
    reason: str = ""
    target: np.ndarray | None = None
    human: KapandjiResult | None = None
    landmarks: np.ndarray | None = None
    retarget_ms: float = float("nan")
    pinch: int = 0


class DexPipeline:
    """Preprocessing + retargeting + safety filter + Kapandji for one dexterous hand.

    desc: :class:`hand_description.dex.DexHandDescription`; urdf_path: its generated URDF.
    """

    def __init__(self, desc, urdf_path: str, config: PipelineConfig = PipelineConfig()):
        import time

        self._clock = time.perf_counter
        self.desc = desc
        self.config = config
        from .robot import RobotHand

        self.robot = desc if isinstance(desc, RobotHand) else None
        pre_cfg = config.preprocess
        if config.open_pose == "on":
            pre_cfg = dataclasses.replace(pre_cfg, open_pose=True)
        if self.robot is not None:   # the dex-urdf convention: MANO wrist frame, the config's scaling
            # scaled in the optimizer (as dex-retargeting does: DexPilot's pinch distances stay human)
            # and the robot's own side (RobotHand.side): an operator's other hand is mirrored onto it
            pre_cfg = dataclasses.replace(pre_cfg, frame="mano", scale=1.0, robot_side=self.robot.side)
            scaling = (pre_cfg_scale := config.preprocess.scale) or self.robot.scaling
            del pre_cfg_scale
            config = dataclasses.replace(config, retarget=dataclasses.replace(config.retarget, scaling=scaling))
            self.config = config
        self.pre = Preprocessor(desc.landmarks(), pre_cfg)
        self.retargeter = Retargeter(desc, urdf_path, config.retarget)
        self.fingers = self.robot.finger_geometry() if self.robot is not None else finger_geometry(desc)
        crossing = None
        if config.crossing_clamp and self.fingers:
            crossing = CrossingClamp(self.fingers, config.crossing_clearance or None)
        self.limits = SafetyLimits(desc.lower, desc.upper, config.max_velocity, config.max_acceleration,
                                   config.max_step)
        self.rest = self.robot.rest if self.robot is not None else np.zeros(len(desc.joint_names))
        coupling = self.robot.couple if self.robot is not None and self.robot.mimic else None
        self.filter = SafetyFilter(self.limits, self.rest, crossing, coupling)
        self.contact = contact_distances(desc) if self.robot is None else None
        # the robot's rest landmarks in the retargeting input's frame and units (the optimizer
        # multiplies the input by ``scaling``)
        rest_lm = self.robot.landmarks(self.rest) if self.robot is not None else np.asarray(desc.landmarks(), float)
        self.rest_landmarks = (rest_lm - rest_lm[0]) / config.retarget.scaling
        self._windows = config.rest_blend.windows or default_windows()
        #: whether the rest blend runs (RestBlendConfig.enabled; None: on, for every hand)
        self.rest_blend = config.rest_blend.enabled if config.rest_blend.enabled is not None else True
        #: per-digit blend weights of the last accepted frame (thumb..pinky), NaN before the first
        self.last_weights = np.full(5, np.nan)
        #: accepted frames whose world thumb was moved onto the fingertip the picture showed it on
        self.image_pinches = 0

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.retargeter.joint_names

    def frame(self, world: np.ndarray, handedness: str, t: float, image: np.ndarray | None = None,
              size: tuple[int, int] | None = None) -> FrameResult:
        """Preprocess and retarget one hand's world landmarks (21, 3) m seen at ``t`` s. ``image``
        (21, 3) normalised image landmarks and ``size`` (width, height) px, when given, let the
        rest blend read the digits' flexions on the tracker's fused skeleton (as the tracker does),
        and the picture's thumb - site distances count where world depth disagrees with them
        (:mod:`~hand_retarget.kapandji`: the human score, and a fingertip pinch the picture shows
        moves the world thumb there before preprocessing)."""
        kcfg = self.config.kapandji
        seen, pinch, world_in = None, 0, world
        if image is not None and size is not None:
            seen, _ = image_site_distances(image, size, kcfg)
            moved = image_pinch(world, image, size, kcfg)
            pinch, world_in = moved.level, moved.world
        pre = self.pre.process(world_in, handedness, t)
        if not pre.ok:
            return FrameResult(False, pre.reason)
        self.image_pinches += bool(pinch)
        human = kapandji(pre.raw, kcfg, image=seen)
        t0 = self._clock()
        x = pre.landmarks
        rb = self.config.rest_blend
        if self.rest_blend:
            flex = digit_flexions(world, self._windows, image, size)
            w = blend_weights(flex, human.distances, rb, self.config.kapandji.touch)
            self.last_weights = w
            if np.all(w >= 1.0):   # every digit open: the target is the rest pose
                self.retargeter.reset(self.rest)
                return FrameResult(True, "", self.rest.copy(), human, self.rest_landmarks.copy(),
                                   (self._clock() - t0) * 1e3, pinch)
            x = blend(x, self.rest_landmarks, w)
        try:
            target = self.retargeter.retarget(x)
        except ValueError as exc:
            return FrameResult(False, f"retargeting failed: {exc}", human=human, pinch=pinch)
        return FrameResult(True, "", target, human, x, (self._clock() - t0) * 1e3, pinch)

    def tick(self, target: np.ndarray | None, dt: float) -> np.ndarray:
        """One control tick of the safety filter towards ``target`` (None/NaN holds)."""
        return self.filter.step(target, dt)

    def robot_score(self, q: np.ndarray) -> KapandjiResult:
        """Kapandji score of the robot at joint angles ``q`` (n,) rad (measured), ``joint_names`` order."""
        q = np.asarray(q, dtype=float)
        if q.shape != (len(self.joint_names),) or not np.all(np.isfinite(q)):
            return kapandji(np.full((21, 3), np.nan))
        if self.robot is not None:
            return robot_kapandji(self.robot, q, self.config.kapandji)
        return kapandji(self.desc.landmarks(q), self.config.kapandji, contact=self.contact, occlusion=True)

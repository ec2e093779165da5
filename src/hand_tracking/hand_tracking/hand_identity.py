"""Two hands with stable identities: track association over frames, handedness as evidence. No rclpy.

MediaPipe's handedness label is a per-frame classifier output: near the image edges, in side
views and with two similar hands it flips, sometimes for dozens of frames and with a high score
(measured on the two-hand test clip: 24 of 1242 hand detections labelled with the wrong side, in
runs of up to 22 frames, scores up to 0.82). Routing each detection by its label would make a
robot hand jump to the other operator hand. :class:`HandIdentity` therefore keeps *tracks*:

1. **Association by continuity.** Every frame, the detections are matched to the existing tracks
   by the Hungarian method (``scipy.optimize.linear_sum_assignment``) on a cost of
   ``|wrist_det − wrist_track| / palm_track / (1 + missed)`` (image, pixels; the palm size is the
   mean wrist→MCP distance of index, middle and pinky) ``+ size_weight · (|log(palm_det /
   palm_track)|`` in the image ``+ |log|`` of the same in world landmarks, m). A pair costing more
   than ``gate`` is not matched. The label plays no part in the association.
2. **Handedness as evidence.** Each track accumulates the signed label evidence of its detections,
   ``e ← e · 2^(−Δt / evidence_half_life) + s · min(logit(score), max_label_logit)`` (s = +1 for a
   'right' label, −1 for 'left'; Δt = media time since the track's last update). Sides are
   decided from the evidence of *all* tracks: with two tracks, sides (A right, B left) are swapped
   only when ``e_B − e_A > swap_margin`` (the other way round is better supported by that margin);
   a single track changes side only when its evidence contradicts its side by ``swap_margin``.
   A one-frame flip, even at score 1.0 (logit capped at ``max_label_logit``), can never swap.
3. **New tracks** take the free side: the only free one, or, when both are free, by their label
   evidence (two at once: the more 'right' one is right).
4. **Misses.** A track without a detection keeps its place for ``max_missed_frames`` frames (its
   gate widens with each miss), then it is dropped and its side freed. The other track is not
   touched. :class:`TwoHandCore` (below) runs one :class:`~hand_tracking.tracker_core.TrackerCore`
   per side, which holds the side's last pose during those frames and then stops (``lost``).

Detections whose wrist lies within ``duplicate_distance`` palm lengths of a better-scored one are
dropped as duplicates; detections with non-finite image landmarks cannot be associated and are
ignored (the side core counts a miss).

Frames: image landmarks are normalised (x / width, y / height) and converted to pixels with the
frame size given to :meth:`HandIdentity.update`; world landmarks in metres.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import linear_sum_assignment

from hand_common.contract import HAND_SIDES
from hand_tracking.landmarks import HandObservation
from hand_tracking.tracker_core import TrackerConfig, TrackerCore, TrackOutput

#: Landmarks whose distance to the wrist (0) measures the palm: index (5), middle (9), pinky (17) MCP.
_PALM_LANDMARKS = (5, 9, 17)
_BIG = 1e9


@dataclass(frozen=True)
class IdentityConfig:
    """Settings of :class:`HandIdentity` (validated on construction, ValueError naming the field).

    max_hands: 1 or 2 tracks at most. max_missed_frames: frames a track survives without a
    detection. gate: largest association cost (≈ wrist displacement in palm lengths per frame).
    size_weight: weight of the palm-size terms of the cost. evidence_half_life: s of media time.
    max_label_logit: cap of one frame's label evidence (logit 4 = score 0.982). swap_margin:
    evidence against the current sides needed to change them. duplicate_distance: palm lengths.
    world_size_weight: weight of the world-landmark palm-size term (None: ``size_weight``; 0 leaves
    MediaPipe's world scale out, which shrinks the palm 3-10x on close-ups and backs of hands).
    """

    max_hands: int = 2
    max_missed_frames: int = 10
    gate: float = 2.5
    size_weight: float = 1.0
    evidence_half_life: float = 2.0
    max_label_logit: float = 4.0
    swap_margin: float = 8.0
    duplicate_distance: float = 0.35
    world_size_weight: float | None = None

    def __post_init__(self) -> None:
        if self.max_hands not in (1, 2):
            raise ValueError(f"max_hands must be 1 or 2, got {self.max_hands}")
        if self.max_missed_frames < 0:
            raise ValueError(f"max_missed_frames must be >= 0, got {self.max_missed_frames}")
        for name in ("gate", "evidence_half_life", "max_label_logit", "swap_margin"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"{name} must be a positive number, got {v}")
        for name in ("size_weight", "duplicate_distance", "world_size_weight"):
            v = getattr(self, name)
            if v is None and name == "world_size_weight":
                continue
            if not (math.isfinite(v) and v >= 0):
                raise ValueError(f"{name} must be >= 0, got {v}")


@dataclass
class Track:
    """One followed hand. wrist: (2,) px; palm_px: px; palm_m: m (nan if unknown); evidence:
    accumulated label evidence, > 0 = 'right'; missed: consecutive frames without a detection."""

    track_id: int
    side: str
    wrist: np.ndarray
    palm_px: float
    palm_m: float
    evidence: float
    last_t: float
    missed: int = 0
    frames: int = 1

    @property
    def confidence(self) -> float:
        """How strongly the accumulated evidence supports the track's side, 0.5 … 1."""
        e = self.evidence if self.side == "right" else -self.evidence
        return 1.0 / (1.0 + math.exp(-min(max(e, -50.0), 50.0)))


@dataclass
class IdentityFrame:
    """Result of one frame.

    hands: side → the detection followed on that side this frame (``handedness`` = the side,
    ``score`` = the track's identity confidence, ``hand_id`` = the track id), or None.
    tracks: the live tracks after this frame. events: what changed ('new', 'swap', 'relabel',
    'dropped'), as text. disagreements: detections this frame whose raw label differs from the side
    they were given.
    """

    hands: dict[str, HandObservation | None]
    tracks: list[Track]
    events: list[str] = field(default_factory=list)
    disagreements: int = 0
    swapped: tuple[str, ...] = ()  # sides whose hand changed by a swap/relabel this frame


def palm_size(points: np.ndarray) -> float:
    """Mean wrist → index/middle/pinky MCP distance of (21, 2|3) points (their unit); nan if unusable."""
    p = np.asarray(points, dtype=float)
    with np.errstate(all="ignore"):
        d = float(np.mean([np.linalg.norm(p[i] - p[0]) for i in _PALM_LANDMARKS]))
    return d if math.isfinite(d) and d > 0 else math.nan


def label_logit(hand: HandObservation, cap: float) -> float:
    """Signed evidence of one detection's label: +logit(score) for 'right', − for 'left', |·| ≤ cap.
    A score at or below 0.5 carries no evidence."""
    p = min(max(float(hand.score), 1e-6), 1.0 - 1e-9)
    mag = min(max(math.log(p / (1.0 - p)), 0.0), cap)
    return mag if hand.handedness == "right" else -mag


class HandIdentity:
    """Track association and side assignment (see module docstring). Not thread-safe."""

    def __init__(self, config: IdentityConfig | None = None):
        self.config = config or IdentityConfig()
        self.tracks: list[Track] = []
        self._next_id = 0
        self.swaps = 0
        self.disagreements = 0

    def reset(self) -> None:
        """Forget every track (identities restart from the next frame's labels)."""
        self.tracks = []

    # --- helpers ---------------------------------------------------------------------------------
    @staticmethod
    def _measure(hand: HandObservation, width: int, height: int) -> tuple[np.ndarray, float, float] | None:
        px = hand.image[:, :2] * np.array([max(width, 1), max(height, 1)], dtype=float)
        wrist = px[0]
        palm = palm_size(px)
        if not (np.isfinite(wrist).all() and math.isfinite(palm)):
            return None
        return wrist.copy(), palm, palm_size(hand.world)

    def _cost(self, t: Track, wrist: np.ndarray, palm_px: float, palm_m: float) -> float:
        cfg = self.config
        c = float(np.linalg.norm(wrist - t.wrist)) / t.palm_px / (1.0 + t.missed)
        c += cfg.size_weight * abs(math.log(palm_px / t.palm_px))
        world = cfg.size_weight if cfg.world_size_weight is None else cfg.world_size_weight
        if world and math.isfinite(palm_m) and math.isfinite(t.palm_m):
            c += world * abs(math.log(palm_m / t.palm_m))
        return c

    def _decay(self, t: Track, now: float) -> None:
        dt = max(now - t.last_t, 0.0)
        t.evidence *= 0.5 ** (dt / self.config.evidence_half_life)
        t.last_t = now

    # --- one frame ---------------------------------------------------------------------------------
    def update(self, hands: list[HandObservation], t: float, width: int = 1, height: int = 1) -> IdentityFrame:
        """Associate this frame's detections (any order) at media time ``t`` (s); ``width``/
        ``height``: image size (px)."""
        cfg = self.config
        events: list[str] = []
        # measurable detections, best score first, duplicates removed
        dets: list[tuple[HandObservation, np.ndarray, float, float]] = []
        for h in sorted(hands, key=lambda h: -h.score):
            m = self._measure(h, width, height)
            if m is None:
                continue
            if any(np.linalg.norm(m[0] - d[1]) < cfg.duplicate_distance * d[2] for d in dets):
                continue
            dets.append((h, *m))
        for tr in self.tracks:
            self._decay(tr, t)
        # association (labels play no part)
        matched: dict[int, int] = {}  # track index -> detection index
        if self.tracks and dets:
            cost = np.array([[self._cost(tr, w, pp, pm) for (_, w, pp, pm) in dets] for tr in self.tracks])
            gated = np.where(cost <= cfg.gate, cost, _BIG)
            rows, cols = linear_sum_assignment(gated)
            matched = {int(r): int(c) for r, c in zip(rows, cols) if gated[r, c] < _BIG}
        for i, tr in enumerate(self.tracks):
            if i in matched:
                h, w, pp, pm = dets[matched[i]]
                tr.wrist, tr.palm_px, tr.missed = w, pp, 0
                tr.palm_m = pm if math.isfinite(pm) else tr.palm_m
                tr.evidence += label_logit(h, cfg.max_label_logit)
                tr.frames += 1
            else:
                tr.missed += 1
        # drop tracks missed too long
        kept = []
        for tr in self.tracks:
            if tr.missed > cfg.max_missed_frames:
                events.append(f"dropped track {tr.track_id} ({tr.side}) after {tr.missed - 1} missed frames")
            else:
                kept.append(tr)
        dropped_ids = {tr.track_id for tr in self.tracks} - {tr.track_id for tr in kept}
        matched = {kept.index(tr): matched[i] for i, tr in enumerate(self.tracks)
                   if i in matched and tr.track_id not in dropped_ids}
        self.tracks = kept
        # new tracks for unmatched detections, while there is room
        used = set(matched.values())
        fresh = [j for j in range(len(dets)) if j not in used][: cfg.max_hands - len(self.tracks)]
        if fresh:
            evid = {j: label_logit(dets[j][0], cfg.max_label_logit) for j in fresh}
            free = [s for s in HAND_SIDES if s not in {tr.side for tr in self.tracks}]
            if cfg.max_hands == 1:
                order = [(fresh[0], "right" if evid[fresh[0]] >= 0 else "left")]
            elif len(fresh) == 2:  # both sides free: the more 'right' one is right
                a, b = sorted(fresh, key=lambda j: -evid[j])
                order = [(a, "right"), (b, "left")]
            elif len(free) == 1:
                order = [(fresh[0], free[0])]
            else:
                order = [(fresh[0], "right" if evid[fresh[0]] >= 0 else "left")]
            for j, side in order:
                h, w, pp, pm = dets[j]
                self.tracks.append(Track(self._next_id, side, w, pp, pm, evid[j], t))
                matched[len(self.tracks) - 1] = j
                events.append(f"new track {self._next_id} → {side} (label {h.handedness} {h.score:.2f})")
                self._next_id += 1
        # sides from the accumulated evidence of all tracks
        swapped: tuple[str, ...] = ()
        if len(self.tracks) == 2:
            r, lft = (self.tracks if self.tracks[0].side == "right" else self.tracks[::-1])
            if lft.evidence - r.evidence > cfg.swap_margin:
                r.side, lft.side = "left", "right"
                swapped = HAND_SIDES
                self.swaps += 1
                events.append(f"swap: track {lft.track_id} → right, track {r.track_id} → left "
                              f"(evidence {lft.evidence:+.1f} vs {r.evidence:+.1f})")
        elif len(self.tracks) == 1:
            tr = self.tracks[0]
            against = -tr.evidence if tr.side == "right" else tr.evidence
            if against > cfg.swap_margin:
                old, tr.side = tr.side, ("left" if tr.side == "right" else "right")
                swapped = (old, tr.side)
                self.swaps += 1
                events.append(f"relabel: track {tr.track_id} {old} → {tr.side} (evidence {tr.evidence:+.1f})")
        out: dict[str, HandObservation | None] = dict.fromkeys(HAND_SIDES)
        disagree = 0
        for i, j in matched.items():
            tr = self.tracks[i]
            h = dets[j][0]
            disagree += int(h.handedness != tr.side)
            out[tr.side] = replace(h, handedness=tr.side, score=tr.confidence, hand_id=tr.track_id)
        self.disagreements += disagree
        return IdentityFrame(out, list(self.tracks), events, disagree, swapped)


# --- the tracker core for two hands -------------------------------------------------------------------

@dataclass
class TwoHandOutput:
    """Result of one frame of :class:`TwoHandCore`: per side a :class:`TrackOutput`, plus the
    identity result. ``status``/``reason``/``raw_angles`` summarise both sides for diagnostics and
    calibration (``raw_angles``: the right hand's, else the left hand's, else None)."""

    sides: dict[str, TrackOutput]
    identity: IdentityFrame

    @property
    def status(self) -> str:
        states = {o.status for o in self.sides.values()}
        return "tracked" if "tracked" in states else "held" if "held" in states else "lost"

    @property
    def reason(self) -> str:
        return "; ".join(f"{s}: {o.reason}" for s, o in self.sides.items() if o.reason)

    @property
    def raw_angles(self) -> np.ndarray | None:
        for s in ("right", "left"):
            if self.sides[s].raw_angles is not None:
                return self.sides[s].raw_angles
        return None

    @property
    def publishable(self) -> bool:
        return any(o.publishable for o in self.sides.values())


class TwoHandCore:
    """Two hands: :class:`HandIdentity` assigns each frame's detections to the sides, and one
    :class:`TrackerCore` per side (angles → 1€ filter → flexions, hold for ``max_missed_frames``
    then lost) processes its side. A side whose hand changed by a swap is reset first, so no
    filter blends two hands. ``hand_preference`` does not apply (each side takes its own hand).
    Same interface as TrackerCore (``config``, ``reset``, ``update``). Not thread-safe."""

    def __init__(self, config: TrackerConfig | None = None, identity: IdentityConfig | None = None):
        cfg = (config or TrackerConfig()).with_changes(hand_preference="any")
        self._config = cfg
        self.identity = HandIdentity(identity or IdentityConfig(max_missed_frames=cfg.max_missed_frames))
        self.cores = {s: TrackerCore(cfg) for s in HAND_SIDES}

    @property
    def config(self) -> TrackerConfig:
        return self._config

    @config.setter
    def config(self, cfg: TrackerConfig) -> None:
        cfg = cfg.with_changes(hand_preference="any")
        self._config = cfg
        for core in self.cores.values():
            core.config = cfg
        self.identity.config = replace(self.identity.config, max_missed_frames=cfg.max_missed_frames)

    def reset(self) -> None:
        for core in self.cores.values():
            core.reset()
        self.identity.reset()

    def update(self, hands: list[HandObservation], t: float, width: int = 1, height: int = 1) -> TwoHandOutput:
        """Process one frame's hands at media time ``t`` (s); ``width``/``height``: image size (px)."""
        ident = self.identity.update(hands, t, width, height)
        for s in ident.swapped:
            self.cores[s].reset()
        sides = {}
        for s in HAND_SIDES:
            h = ident.hands[s]
            sides[s] = self.cores[s].update([h] if h is not None else [], t, width, height)
        return TwoHandOutput(sides, ident)


# --- one hand, one identity ------------------------------------------------------------------------

class OneHandCore(TrackerCore):
    """One hand (``hands: one``) that keeps its identity: a :class:`TrackerCore` fed only the
    detections of the hand it follows, never silently another one.

    :class:`HandIdentity` (labels play no part in association; world scale left out:
    ``world_size_weight`` 0) keeps a track for each hand seen among those matching
    ``hand_preference``; the core follows one track:

    - with no hand followed, it takes up the best-scored detection (event ``following hand N``);
    - while the followed hand is missed, the core holds its last pose for ``max_missed_frames``
      frames as usual, whatever other hand is in view (it is not the followed hand);
    - when the followed track is dropped (missed more than ``max_missed_frames``), that frame is
      ``lost`` (no output) and announced (``lost hand N``); another hand is taken up from the next
      frame on, announced as a switch and counted in :attr:`switches`. The same hand coming back
      after a loss is a new track too (identity cannot be told across a loss) and counts as well.

    :attr:`events`: the last frame's events (text); :attr:`followed`: the followed track id or None.
    Same interface as TrackerCore. Not thread-safe.
    """

    def __init__(self, config: TrackerConfig | None = None, identity: IdentityConfig | None = None):
        super().__init__(config)
        self.identity = HandIdentity(identity or IdentityConfig(
            max_hands=2, max_missed_frames=self.config.max_missed_frames, world_size_weight=0.0))
        self.followed: int | None = None
        self._followed_side = ""
        self._previous: int | None = None  # the last hand followed since the last reset
        self.switches = 0
        self.events: list[str] = []

    @property
    def config(self) -> TrackerConfig:
        return self._config

    @config.setter
    def config(self, cfg: TrackerConfig) -> None:
        TrackerCore.config.fset(self, cfg)
        self.identity.config = replace(self.identity.config, max_missed_frames=cfg.max_missed_frames)

    def reset(self) -> None:
        """Forget the pose, the filter state and every identity (the next hand is taken up afresh)."""
        super().reset()
        self.identity.reset()
        self.followed = None
        self._previous = None

    @property
    def followed_label(self) -> str:
        """'N (side)' of the followed hand, or 'none' (diagnostics)."""
        return f"{self.followed} ({self._followed_side})" if self.followed is not None else "none"

    def update(self, hands: list[HandObservation], t: float, width: int = 1, height: int = 1) -> TrackOutput:
        """Process one frame's hands at media time ``t`` (s); ``width``/``height``: image size (px)."""
        pref = self._config.hand_preference
        cands = [h for h in hands if pref == "any" or h.handedness == pref]
        ident = self.identity.update(cands, t, width, height)
        # the detection behind each matched track (the identity layer relabels a copy)
        by_track: dict[int, HandObservation] = {}
        for obs in ident.hands.values():
            if obs is not None:
                by_track[obs.hand_id] = next(h for h in cands if h.image is obs.image)
        self.events = []
        lost_now = False
        if self.followed is not None and all(tr.track_id != self.followed for tr in self.identity.tracks):
            self.events.append(f"lost hand {self.followed} ({self._followed_side}): not seen for "
                               f"{self._config.max_missed_frames + 1} frames")
            self.followed, lost_now = None, True
        if self.followed is None and not lost_now and by_track:
            # the best score; on a tie the first detection (as TrackerCore.select)
            tid = max(sorted(by_track, key=lambda k: next(i for i, h in enumerate(cands) if h is by_track[k])),
                      key=lambda k: by_track[k].score)
            h = by_track[tid]
            self.followed, self._followed_side = tid, h.handedness
            if self._previous is not None and self._previous != tid:
                self.switches += 1
                self.events.append(f"switch: following hand {tid} ({h.handedness}, score {h.score:.2f}) "
                                   f"instead of hand {self._previous}, after a lost frame")
            else:
                self.events.append(f"following hand {tid} ({h.handedness}, score {h.score:.2f})")
            self._previous = tid
        hand = by_track.get(self.followed) if self.followed is not None else None
        out = super().update([hand] if hand is not None else [], t, width, height)
        if hand is None and out.reason == "no hand" and cands:
            out.reason = f"followed hand {self._previous} not seen" if self._previous is not None else out.reason
        return out

"""Acceptance on the shared video: MediaPipe landmarks (once per session, hand_tracking's cache, the
tracker's own model_complexity 1) -> preprocessing -> DexPilot -> safety filter at 100 Hz -> the
dexterous twin's MuJoCo physics (in-process, simulated time) -> Kapandji on the human and on the
twin's measured joint angles."""

import pathlib
import sys

import numpy as np
import pytest

from hand_description import dex, paths
from hand_retarget.dex_sim import DexSim
from hand_retarget.pipeline import DexPipeline, PipelineConfig

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "hand_tracking" / "test"))
from tracker_video_cache import video_landmarks  # noqa: E402

pytestmark = pytest.mark.slow
RATE = 100.0
#: The thumb-to-little-fingertip pinch of the shared video (after index, middle and ring pinches).
LITTLE_PINCH = range(420, 480)
#: The four thumb-fingertip pinches (model_complexity 1: the frames where the human score is >= 3
#: and the named fingertip is the one nearest the thumb's, 6-30 mm away; the other three >= 45 mm).
PINCHES = {"index": (range(310, 334), 3), "middle": (range(360, 379), 4), "ring": (range(410, 427), 5),
           "little": (range(454, 476), 6)}


@pytest.fixture(scope="module")
def replay(video_path):
    v = video_landmarks(video_path)
    desc = dex.load()
    pipe = DexPipeline(desc, str(paths.dex_urdf_path()), PipelineConfig())
    sim = DexSim(desc.joint_names)
    dt = 1.0 / RATE
    n = len(v.world)
    human = np.full(n, -1)
    robot = np.full(n, -1)
    thumb_tip = np.full((n, 4), np.nan)
    commands, misses, ms, measured = [], [], [], []
    target, ticks = None, 0
    for i in range(n):
        if v.handedness[i]:
            res = pipe.frame(v.world[i], v.handedness[i], float(v.media_time[i]), image=v.image[i],
                             size=(v.width, v.height))
            if res.ok:
                target = res.target
                human[i] = res.human.score
                lm = res.landmarks
                thumb_tip[i] = np.linalg.norm(lm[[8, 12, 16, 20]] - lm[4], axis=1)
                ms.append(res.retarget_ms)
            else:
                misses.append((i, res.reason))
        while (ticks + 1) * dt <= v.media_time[i] + 1.0 / v.fps + 1e-9:   # physics up to the next frame
            q = pipe.tick(target, dt)
            commands.append(q)
            sim.set_command(q)
            assert sim.advance(dt) is None
            ticks += 1
        measured.append(sim.state().position)
        robot[i] = pipe.robot_score(measured[-1]).score
    return dict(human=human, robot=robot, thumb_tip=thumb_tip, commands=np.array(commands), misses=misses,
                ms=np.array(ms), desc=desc, measured=np.array(measured), limits=pipe.limits, sim=sim)


def test_the_video_is_accepted_frame_by_frame(replay):
    assert len(replay["misses"]) <= 0.03 * len(replay["human"]), replay["misses"][:5]


def test_human_score_reaches_6_in_the_little_finger_pinch(replay):
    h = replay["human"][list(LITTLE_PINCH)]
    assert h.max() >= 6
    # it is the little finger the thumb touches there: its tip is the nearest of the four
    for i in np.nonzero(h >= 6)[0] + LITTLE_PINCH.start:
        assert np.argmin(replay["thumb_tip"][i]) == 3, (i, replay["thumb_tip"][i])
    # and the index pinch earlier scores 3, the open hand at the start 0
    assert np.median(replay["human"][:12]) == 0


def test_the_twins_score_follows_the_humans(replay):
    h, r = replay["human"], replay["robot"]
    sel = h >= 3
    follow = np.abs(r[sel] - h[sel]) <= 1
    print(f"robot within +-1 of the human on {follow.mean():.1%} of {sel.sum()} frames with human score >= 3; "
          f"human max {h.max()}, robot max {r.max()}")
    assert sel.sum() >= 50
    assert follow.mean() >= 0.80
    assert r[list(LITTLE_PINCH)].max() >= 6


@pytest.mark.parametrize("finger", PINCHES)
def test_each_pinch_reaches_its_level_on_the_human_and_the_twin(replay, finger):
    frames, level = PINCHES[finger]
    h, r = replay["human"][list(frames)], replay["robot"][list(frames)]
    nearest = np.argmin(replay["thumb_tip"][list(frames)], axis=1)
    print(f"{finger} pinch {frames.start}-{frames.stop - 1}: human max {h.max()}, robot max {r.max()}, "
          f"robot within +-1 on {np.mean(np.abs(r - h) <= 1):.0%}")
    assert h.max() >= level >= 3
    assert np.mean(nearest == list(PINCHES).index(finger)) >= 0.9
    assert abs(int(r.max()) - int(h.max())) <= 1 and r.max() >= level


def test_commands_stay_within_limits_and_caps(replay):
    q, lim = replay["commands"], replay["limits"]
    assert np.all(np.isfinite(q))
    assert np.all(q >= lim.lower - 1e-9) and np.all(q <= lim.upper + 1e-9)
    v = np.diff(q, axis=0) * RATE
    assert np.abs(v).max() <= lim.max_velocity + 1e-6
    assert np.abs(np.diff(v, axis=0)).max() * RATE <= lim.max_acceleration * (1 + 1e-6)
    assert replay["sim"].resets == 0


def test_the_fist_is_a_fist(replay):
    """Fist plateau (frames 262-274): every finger curled on the twin, the thumb not left pinching the index."""
    names = replay["desc"].joint_names
    q = replay["measured"][262:275]
    for f in ("index", "middle", "ring", "pinky"):
        assert q[:, names.index(f"{f}_mcp")].min() > 1.0, f
        assert q[:, names.index(f"{f}_pip")].min() > 1.4, f
    lm = [replay["desc"].landmarks(x) for x in q]
    assert min(np.linalg.norm(p[8] - p[4]) for p in lm) > 0.02


def _lift_thumb(world, apart, tip=8, depth=0.5):
    """The thumb chain turned about its CMC until its tip is ``apart`` m from landmark ``tip`` (what
    MediaPipe's world head did on held-back pinches of other operators): about an axis between the
    palm normal (an in-plane swing) and the palm's long axis (a swing out of the palm plane),
    ``depth`` = the long axis' share."""
    from scipy.spatial.transform import Rotation

    long = 0.5 * (world[5] + world[17]) - world[0]
    normal = np.cross(world[5] - world[0], world[17] - world[0])
    axis = depth * long / np.linalg.norm(long) + (1 - depth) * normal / np.linalg.norm(normal)
    axis /= np.linalg.norm(axis)
    for step in range(1, 600):
        r = Rotation.from_rotvec(0.005 * step * axis).as_matrix()
        out = world.copy()
        out[2:5] = world[1] + (world[2:5] - world[1]) @ r.T
        if np.linalg.norm(out[4] - out[tip]) >= apart:
            return out
    raise AssertionError("cannot lift the thumb that far")


def test_a_pinch_the_world_head_lost_is_read_from_the_picture(video_path):
    """Issue 22: the index pinch (310-333) with the world thumb tip lifted 41-70 mm from the index tip
    (the picture as recorded: its tips touch). The human score and the retargeted robot pinch as on
    the unaltered video."""
    v = video_landmarks(video_path)
    desc = dex.load()
    frames = PINCHES["index"][0]
    apart = (0.041, 0.055, 0.070)
    world = v.world.copy()
    for n, i in enumerate(frames):
        world[i] = _lift_thumb(v.world[i], apart[n % 3], depth=(0.0, 0.5)[n % 2])

    def run(use_image, w):
        pipe = DexPipeline(desc, str(paths.dex_urdf_path()), PipelineConfig())
        human, gap, moved = {}, {}, 0
        for i in range(frames.stop):
            res = pipe.frame(w[i], v.handedness[i], float(v.media_time[i]),
                             image=v.image[i] if use_image else None, size=(v.width, v.height))
            if i in frames and res.ok:
                human[i] = res.human.score
                lm = desc.landmarks(res.target)
                gap[i] = float(np.linalg.norm(lm[4] - lm[8]))
                moved += res.pinch == 3
        return np.array(list(human.values())), np.array(list(gap.values())) * 1e3, moved

    h0, g0, _ = run(True, v.world)
    hw, gw, _ = run(False, world)
    h1, g1, moved = run(True, world)
    print(f"index pinch {frames.start}-{frames.stop - 1}, world thumb tip lifted 41-70 mm: human Kapandji "
          f">= 3 on {np.mean(hw >= 3):.0%} (world only) -> {np.mean(h1 >= 3):.0%} (with the picture; unaltered "
          f"{np.mean(h0 >= 3):.0%}); robot thumb-index tips (FK of the targets) median {np.median(gw):.1f} mm -> "
          f"{np.median(g1):.1f} mm (unaltered {np.median(g0):.1f}); thumb moved on {moved}/{len(frames)} frames")
    assert len(h1) == len(frames)
    assert np.mean(hw >= 3) <= 0.2 and np.median(gw) > 20.0          # the failure, reproduced
    # the picture's thumb-index distance is within touch (0.25) on 23 of 24 frames (333: at 0.25, the release)
    assert np.mean(h1 >= 3) >= 0.9 and moved >= 0.9 * len(frames)
    assert np.median(g1) <= max(np.median(g0), 5.0) + 2.0 and np.percentile(g1, 90) < 10.0

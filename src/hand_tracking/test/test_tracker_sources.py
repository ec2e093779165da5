"""Frame sources and landmark replay: indices, stamps, media time, loop, pacing, clear errors."""

import os
import sys
import time

import cv2
import numpy as np
import pytest

from hand_tracking.landmarks import HandObservation
from hand_tracking.replay import BagLandmarkSource, read_landmark_frames, write_landmark_bag
from hand_tracking.sources import (
    CameraSource,
    FrameError,
    ImageFolderSource,
    PrefetchSource,
    SourceError,
    SourceSpec,
    VideoFileSource,
    open_frame_source,
    parse_source,
)

sys.path.insert(0, os.path.dirname(__file__))
from tracker_video_cache import video_landmarks  # noqa: E402


def write_video(path, n, fps=30.0, size=(64, 48)):
    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, size)
    assert w.isOpened()
    for k in range(n):
        img = np.full((size[1], size[0], 3), 10 * k, np.uint8)  # brightness encodes the frame
        w.write(img)
    w.release()


def brightness(frame) -> int:
    return int(round(float(frame.image.mean()) / 10))


def read_all(src, limit=1000):
    out = []
    while len(out) < limit and (f := src.read()) is not None:
        out.append(f)
    return out


def test_parse_source_forms_and_errors():
    assert parse_source("camera:0") == SourceSpec("camera", "0")
    assert parse_source("camera") == SourceSpec("camera", "0")
    assert parse_source(" video:/a b/c.mp4 ") == SourceSpec("video", "/a b/c.mp4")
    assert parse_source("camera:/dev/video2").target == "/dev/video2"
    assert parse_source("topic") == SourceSpec("topic", "/hand/landmarks")
    assert str(parse_source("bag:/x/y")) == "bag:/x/y"
    for bad, msg in (("webcam:0", "unknown source"), ("video:", "needs a path"),
                     ("camera:front", "V4L2 index"), ("topic:hand", "absolute topic"), ("", "unknown")):
        with pytest.raises(ValueError, match=msg):
            parse_source(bad)
    with pytest.raises(ValueError, match="not a frame source"):
        open_frame_source(parse_source("topic:/hand/landmarks"))


def test_missing_camera_fails_with_an_actionable_message():
    with pytest.raises(SourceError) as e:
        CameraSource(57)
    msg = str(e.value)
    assert "/dev/video57 does not exist" in msg and ("video devices present" in msg or "no /dev/video*" in msg)
    with pytest.raises(SourceError, match="/dev/video99 does not exist"):
        open_frame_source(parse_source("camera:/dev/video99"))


def test_video_frames_carry_index_stamp_and_media_time(tmp_path):
    path = tmp_path / "clip.avi"
    write_video(path, 6, fps=25.0)
    clock = iter(np.arange(100.0, 200.0, 0.5))
    src = VideoFileSource(path, realtime=False, clock=lambda: float(next(clock)))
    assert src.fps == pytest.approx(25.0)
    frames = read_all(src)
    src.close()
    assert [f.index for f in frames] == list(range(6))
    assert [brightness(f) for f in frames] == list(range(6))
    assert [f.stamp for f in frames] == [100.0, 100.5, 101.0, 101.5, 102.0, 102.5]
    np.testing.assert_allclose([f.media_time for f in frames], np.arange(6) / 25.0)
    assert all(f.image.shape == (48, 64, 3) and f.decode_ms >= 0 for f in frames)
    with pytest.raises(SourceError, match="after close"):
        src.read()


def test_video_loop_restarts_indices_and_keeps_media_time_increasing(tmp_path):
    path = tmp_path / "clip.avi"
    write_video(path, 4)
    src = VideoFileSource(path, realtime=False, loop=True)
    frames = read_all(src, limit=10)
    src.close()
    assert [f.index for f in frames] == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    assert [brightness(f) for f in frames] == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    np.testing.assert_allclose([f.media_time for f in frames], np.arange(10) / 30.0)


def test_realtime_pacing_is_never_faster_than_the_file(tmp_path):
    path = tmp_path / "clip.avi"
    write_video(path, 7, fps=30.0)
    src = VideoFileSource(path, realtime=True)
    t0 = time.monotonic()
    frames = read_all(src)
    elapsed = time.monotonic() - t0
    src.close()
    assert len(frames) == 7
    assert elapsed >= 6 / 30.0 * 0.95  # a lower bound only: pacing sleeps, never skips ahead
    gaps = np.diff([f.stamp for f in frames])
    assert gaps.min() > 0.5 / 30.0


def test_bad_video_files_are_named(tmp_path):
    with pytest.raises(SourceError, match="does not exist"):
        VideoFileSource(tmp_path / "nope.mp4")
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video at all" * 100)
    with pytest.raises(SourceError, match="junk.mp4"):
        VideoFileSource(junk)


def test_image_folder_in_name_order_with_a_corrupt_file(tmp_path):
    for k in (2, 0, 1):
        cv2.imwrite(str(tmp_path / f"f{k}.png"), np.full((8, 8, 3), 10 * k, np.uint8))
    (tmp_path / "f1b.png").write_bytes(b"broken")
    (tmp_path / "notes.txt").write_text("ignored")
    src = ImageFolderSource(tmp_path, fps=10.0, loop=False)
    assert src.files == ["f0.png", "f1.png", "f1b.png", "f2.png"]
    got = [src.read(), src.read()]
    with pytest.raises(FrameError, match="f1b.png: not a readable image"):
        src.read()
    got.append(src.read())
    assert src.read() is None
    assert [brightness(f) for f in got] == [0, 1, 2]
    assert [f.index for f in got] == [0, 1, 3]
    np.testing.assert_allclose([f.media_time for f in got], [0.0, 0.1, 0.3])
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SourceError, match="holds no image"):
        ImageFolderSource(empty)
    with pytest.raises(SourceError, match="does not exist"):
        ImageFolderSource(tmp_path / "missing")


def test_prefetch_keeps_order_passes_errors_and_ends(tmp_path):
    for k in range(5):
        cv2.imwrite(str(tmp_path / f"f{k}.png"), np.full((8, 8, 3), 10 * k, np.uint8))
    (tmp_path / "f2x.png").write_bytes(b"broken")
    pre = PrefetchSource(ImageFolderSource(tmp_path), depth=2, drop_old=False)
    seen, errors = [], []
    while True:
        try:
            f = pre.read(timeout=5)
        except FrameError as exc:
            errors.append(str(exc))
            continue
        if f is None:
            break
        seen.append(brightness(f))
    assert seen == [0, 1, 2, 3, 4] and len(errors) == 1 and "f2x.png" in errors[0]
    assert pre.read(timeout=1) is None  # stays at the end
    pre.close()


def test_prefetch_drop_old_serves_fresh_frames_in_order(tmp_path):
    path = tmp_path / "clip.avi"
    write_video(path, 20)
    pre = PrefetchSource(VideoFileSource(path, realtime=False), depth=1, drop_old=True)
    time.sleep(0.3)  # a slow consumer: the reader ran ahead and dropped the older frames
    got = []
    while (f := pre.read(timeout=5)) is not None:
        got.append(f.index)
    pre.close()
    assert got[-1] == 19 and got == sorted(got) and len(got) < 20
    assert pre.dropped == 20 - len(got)


def test_prefetch_reopens_a_source_that_failed(tmp_path):
    class Flaky:
        name, fps = "flaky", 30.0

        def __init__(self, fail_after):
            self.n, self.fail_after = 0, fail_after

        def read(self):
            self.n += 1
            if self.n > self.fail_after:
                raise SourceError("flaky: device vanished")
            return self.n

        def close(self):
            pass

    opened = []

    def reopen():
        opened.append(1)
        if len(opened) < 2:
            raise SourceError("flaky: still gone")
        return Flaky(100)

    pre = PrefetchSource(Flaky(2), depth=4, reopen=reopen, retry_period=0.01)
    items = []
    while len([i for i in items if isinstance(i, int)]) < 4:
        try:
            items.append(pre.read(timeout=5))
        except SourceError as exc:
            items.append(str(exc))
    pre.close()
    assert items == [1, 2, "flaky: device vanished", "flaky: still gone", 1, 2]


# --- replay of recorded landmarks ----------------------------------------------------------------

def test_bag_replay_gives_back_what_was_recorded(tmp_path, video_path):
    lm = video_landmarks(video_path)
    frames = [(1000.0 + i / 30.0, i, lm.hands(i)) for i in range(40)]
    frames[10] = (frames[10][0], 10, [])  # a frame without a hand
    n = write_landmark_bag(tmp_path / "bag", frames, width=lm.width, height=lm.height)
    assert n == 40
    got = read_landmark_frames(tmp_path / "bag")
    assert len(got) == 40
    assert [g.index for g in got] == list(range(40))
    assert got[10].hands == []
    np.testing.assert_allclose([g.recorded_stamp for g in got], [f[0] for f in frames], atol=1e-6)
    np.testing.assert_allclose([g.media_time for g in got], np.arange(40) / 30.0, atol=1e-6)
    for i in (0, 5, 39):
        h = got[i].hands[0]
        assert h.handedness == "right" and h.score == pytest.approx(lm.scores[i], abs=1e-6)
        np.testing.assert_array_equal(h.world, lm.world[i])  # float64 round trip
        np.testing.assert_array_equal(h.image, lm.image[i])
        assert (got[i].width, got[i].height) == (1280, 720)


def test_bag_replay_loop_and_realtime(tmp_path):
    hand = HandObservation(np.zeros((21, 3)), np.zeros((21, 3)), "left", 0.9)
    write_landmark_bag(tmp_path / "bag", [(5.0 + i / 20.0, i, [hand]) for i in range(3)], width=10, height=10)
    src = BagLandmarkSource(tmp_path / "bag", realtime=True, loop=True)
    t0 = time.monotonic()
    got = [src.read() for _ in range(7)]
    elapsed = time.monotonic() - t0
    src.close()
    assert [g.index for g in got] == [0, 1, 2, 0, 1, 2, 0]
    media = np.array([g.media_time for g in got])
    assert (np.diff(media) > 0).all()
    assert elapsed >= 0.9 * (media[-1] - media[0])


def test_bag_errors_are_named(tmp_path):
    with pytest.raises(SourceError, match="not a rosbag2 directory"):
        BagLandmarkSource(tmp_path)
    from hand_common.bag import BagWriter

    with BagWriter(tmp_path / "other") as w:
        w.add("/joint_states", "sensor_msgs/msg/JointState")
    with pytest.raises(SourceError, match=r"no topic /hand/landmarks; it holds: /joint_states"):
        BagLandmarkSource(tmp_path / "other")


def test_bag_with_a_corrupt_record_skips_it(tmp_path):
    from hand_common.bag import BagWriter
    from hand_tracking.replay import LANDMARKS_TYPE, landmark_array

    hand = HandObservation(np.ones((21, 3)), np.ones((21, 3)), "right", 0.5)
    with BagWriter(tmp_path / "bag") as w:
        w.add("/hand/landmarks", LANDMARKS_TYPE)
        for i in range(3):
            if i == 1:
                w.write("/hand/landmarks", 10**9 + i, b"\x00\x01\x00\x00garbage")
                continue
            msg = landmark_array(w.store, [hand], stamp=1.0 + i / 30, frame_index=i, width=4, height=4)
            w.write("/hand/landmarks", 10**9 + i, w.store.serialize_cdr(msg, LANDMARKS_TYPE))
    src = BagLandmarkSource(tmp_path / "bag", realtime=False)
    assert src.read().index == 0
    with pytest.raises(FrameError, match="undecodable message"):
        src.read()
    assert src.read().index == 2
    assert src.read() is None
    src.close()
    assert [f.index for f in read_landmark_frames(tmp_path / "bag")] == [0, 2]


# --- playback rate: a recording served as a faster (or slower) camera ------------------------------

class FakeTime:
    """Stands in for the ``time`` module of a source: monotonic time advances only by the sleeps
    the source asks for (plus ``work`` s per read), so pacing is asserted on exact numbers."""

    def __init__(self, work: float = 0.0):
        self.now = 1000.0
        self.work = work
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.sleeps.append(s)
        self.now += s


def test_video_playback_rate_serves_a_30_fps_file_as_a_60_fps_camera(tmp_path, monkeypatch):
    import hand_tracking.sources as sources

    path = tmp_path / "clip.avi"
    write_video(path, 8, fps=30.0)
    fake = FakeTime()
    monkeypatch.setattr(sources, "time", fake)
    src = VideoFileSource(path, realtime=True, loop=True, clock=fake.monotonic, playback_rate=2.0)
    assert (src.native_fps, src.fps) == (pytest.approx(30.0), pytest.approx(60.0))
    frames = read_all(src, limit=12)
    src.close()
    # every frame once, in order, looping: nothing skipped to reach the rate
    assert [f.index for f in frames] == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3]
    assert [brightness(f) for f in frames] == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3]
    # stamped like a 60 fps camera: reads paced 1/60 s apart, media time 1/60 s a frame
    np.testing.assert_allclose(np.diff([f.stamp for f in frames]), 1 / 60.0, rtol=1e-9)
    np.testing.assert_allclose([f.media_time for f in frames], np.arange(12) / 60.0, rtol=1e-9, atol=1e-12)
    # at 1.0 the same file is the 30 fps camera it always was
    fake1 = FakeTime()
    monkeypatch.setattr(sources, "time", fake1)
    src = VideoFileSource(path, realtime=True, clock=fake1.monotonic)
    frames = read_all(src)
    src.close()
    assert src.fps == pytest.approx(30.0) and len(frames) == 8
    np.testing.assert_allclose(np.diff([f.stamp for f in frames]), 1 / 30.0, rtol=1e-9)


def test_video_playback_rate_unpaced_keeps_the_faster_timeline(tmp_path):
    path = tmp_path / "clip.avi"
    write_video(path, 6, fps=25.0)
    src = open_frame_source(parse_source(f"video:{path}"), realtime=False, playback_rate=0.5)
    frames = read_all(src)
    src.close()
    assert src.fps == pytest.approx(12.5)
    np.testing.assert_allclose([f.media_time for f in frames], np.arange(6) / 12.5)


def test_image_folder_playback_rate(tmp_path, monkeypatch):
    import hand_tracking.sources as sources

    for k in range(4):
        cv2.imwrite(str(tmp_path / f"{k:03d}.png"), np.full((8, 8, 3), 10 * k, np.uint8))
    fake = FakeTime()
    monkeypatch.setattr(sources, "time", fake)
    src = ImageFolderSource(tmp_path, fps=20.0, realtime=True, clock=fake.monotonic, playback_rate=3.0)
    frames = read_all(src)
    assert src.fps == pytest.approx(60.0) and [brightness(f) for f in frames] == [0, 1, 2, 3]
    np.testing.assert_allclose(np.diff([f.stamp for f in frames]), 1 / 60.0, rtol=1e-9)
    np.testing.assert_allclose([f.media_time for f in frames], np.arange(4) / 60.0)


def test_playback_rate_errors():
    with pytest.raises(ValueError, match="applies to recordings"):
        open_frame_source(parse_source("camera:/dev/video99"), playback_rate=2.0)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="playback_rate must be a positive number"):
            open_frame_source(parse_source("video:/nonexistent.mp4"), playback_rate=bad)


def test_bag_playback_rate_paces_and_filters_on_the_played_timeline(tmp_path, monkeypatch):
    import hand_tracking.replay as replay

    hand = HandObservation(np.zeros((21, 3)), np.zeros((21, 3)), "left", 0.9)
    rec = [5.0 + i / 30.0 for i in range(6)]
    write_landmark_bag(tmp_path / "bag", [(t, i, [hand]) for i, t in enumerate(rec)], width=10, height=10)
    fake = FakeTime()
    monkeypatch.setattr(replay, "time", fake)
    src = BagLandmarkSource(tmp_path / "bag", realtime=True, loop=True, clock=fake.monotonic, playback_rate=2.0)
    got = [src.read() for _ in range(9)]
    src.close()
    assert [g.index for g in got] == [0, 1, 2, 3, 4, 5, 0, 1, 2]
    assert src.native_fps == pytest.approx(30.0, rel=0.05) and src.fps == pytest.approx(2 * src.native_fps)
    # the recorded stamps are kept as recorded ...
    np.testing.assert_allclose([g.recorded_stamp for g in got], rec + rec[:3], atol=1e-6)
    # ... and the stream is played, paced and filtered 1/60 s apart, across the loop too
    media = np.array([g.media_time for g in got])
    np.testing.assert_allclose(media[:6], np.arange(6) / 60.0, atol=1e-6)
    np.testing.assert_allclose(np.diff(media), 1 / 60.0, atol=1e-6 + 0.002)  # loop gap: 1 / est. fps
    np.testing.assert_allclose(np.diff([g.stamp for g in got]), np.diff(media), atol=1e-6)
    np.testing.assert_allclose([g.filter_time for g in got], rec[0] + media, atol=1e-6)
    # at 1.0 the filter runs on the recorded stamps exactly (a replay reproduces the live run)
    src = BagLandmarkSource(tmp_path / "bag", realtime=False)
    one = [src.read() for _ in range(6)]
    src.close()
    assert src.fps == src.native_fps
    assert [g.filter_time for g in one] == [g.recorded_stamp for g in one]
    assert all(g.capture_time is None for g in one)

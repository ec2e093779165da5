"""The tracker's operator preview (hand_tracking.preview): rate limit, one-slot mailbox that
replaces rather than queues, downscale + JPEG on its own thread."""

import threading

import numpy as np
import pytest

from hand_tracking.preview import (
    PreviewFrame,
    PreviewMailbox,
    PreviewOutlet,
    PreviewWorker,
    downscale,
    encode_jpeg,
)


def _image(w=640, h=480):
    img = np.zeros((h, w, 3), np.uint8)
    img[:, : w // 2] = (0, 0, 255)  # left half red (BGR)
    return img


def test_mailbox_rate_limit_on_the_callers_clock():
    box = PreviewMailbox(10.0)
    taken = [t for t in np.arange(0.0, 1.0, 1 / 30) if box.offer(PreviewFrame(_image(8, 8), t, 0), t)]
    assert len(taken) == 10  # 30 fps camera, 10 Hz preview
    assert not PreviewMailbox(0.0).due(0.0)  # 0 disables the preview


def test_mailbox_replaces_a_waiting_frame_and_counts_it():
    box = PreviewMailbox(1000.0)
    for k in range(3):
        box.offer(PreviewFrame(_image(8, 8), float(k), k), float(k))
    item = box.take(0.0)
    assert item is not None and item.index == 2
    assert (box.offered, box.replaced, box.taken) == (3, 2, 1)
    assert box.take(0.0) is None


def test_downscale_keeps_the_aspect_and_jpeg_round_trips():
    import cv2

    small = downscale(_image(), 320)
    assert small.shape == (240, 320, 3)
    assert downscale(small, 640) is small
    with pytest.raises(ValueError):
        downscale(small, 4)
    back = cv2.imdecode(np.frombuffer(encode_jpeg(small), np.uint8), cv2.IMREAD_COLOR)
    assert back.shape == small.shape
    assert back[120, 40, 2] > 200 and back[120, 280, 2] < 40  # red left, black right


def test_worker_publishes_downscaled_jpeg_off_the_offering_thread():
    box = PreviewMailbox(1000.0)
    got = []
    done = threading.Event()

    def publish(data, frame, size):
        got.append((data[:2], frame.index, size, threading.current_thread().name))
        done.set()

    worker = PreviewWorker(box, publish, width=160).start()
    try:
        box.offer(PreviewFrame(_image(), 1.5, 7), 0.0)
        assert done.wait(10.0)
    finally:
        worker.stop()
    assert got == [(b"\xff\xd8", 7, (160, 120), "tracker preview")]
    assert worker.published == 1 and worker.errors == 0


def test_worker_survives_a_failing_publish():
    box = PreviewMailbox(1000.0)
    calls = threading.Event()

    def publish(*_):
        calls.set()
        raise RuntimeError("publisher gone")

    worker = PreviewWorker(box, publish).start()
    try:
        box.offer(PreviewFrame(_image(), 0.0, 0), 0.0)
        assert calls.wait(10.0)
    finally:
        worker.stop()
    assert worker.errors == 1 and "publisher gone" in worker.last_error


def test_outlet_offers_only_to_subscribers_and_counts():
    sent, done = [], threading.Event()

    def publish(jpeg, frame, size):
        sent.append((frame.index, size))
        done.set()

    subscribers = [0]
    outlet = PreviewOutlet(publish, lambda: subscribers[0], max_rate_hz=1000.0, width_px=64)
    try:
        image = np.zeros((120, 160, 3), np.uint8)
        outlet.offer(image, 0.0, 0)  # nobody subscribes: not even handed over
        assert outlet.box.take(0.0) is None
        subscribers[0] = 1
        outlet.set_width(32)
        outlet.offer(image, 0.1, 1)
        assert done.wait(5.0)
        assert sent == [(1, (32, 24))]
        assert outlet.values() == {"preview_published": "1", "preview_replaced": "0", "preview_errors": "0"}
    finally:
        outlet.stop()

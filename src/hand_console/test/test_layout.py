"""The console's pictures (hand_console.layout): landmarks drawn where they are, the plot's lines."""

import numpy as np

from hand_console.layout import (
    ACCEPTED_RGB,
    DIGIT_RGB,
    REFUSED_RGB,
    blank_frame,
    decode_jpeg_rgb,
    draw_landmarks,
    plot_history,
)
from hand_console.state import GateView, HandInfo


def _hand(accepted: bool) -> HandInfo:
    pts = np.stack([np.linspace(0.2, 0.8, 21), np.full(21, 0.5)], axis=1)
    return HandInfo("right", 0.97, accepted, 0.9, "" if accepted else "motion", pts)


def test_landmarks_are_drawn_at_their_pixels_in_the_gate_colour():
    img = blank_frame(320, 240)
    out = draw_landmarks(img, [_hand(True)], GateView("tracked", "", "right", 0.97, 0.9))
    assert out.shape == img.shape and (img == 32).all()  # the input is not modified
    # a bone between landmark 5 (x 0.38) and 6 (x 0.41) at y 0.5: accepted colour on the row
    row = out[120, int(0.39 * 320) - 1: int(0.39 * 320) + 2]
    assert any(np.abs(px.astype(int) - ACCEPTED_RGB).sum() < 60 for px in row)
    assert (out[5, 300] != 32).any()  # the gate banner
    refused = draw_landmarks(img, [_hand(False)])
    row = refused[120, int(0.39 * 320) - 1: int(0.39 * 320) + 2]
    assert any(np.abs(px.astype(int) - REFUSED_RGB).sum() < 60 for px in row)
    nan = HandInfo("left", 0.5, False, 0.0, "degenerate", np.full((21, 2), np.nan))
    assert (draw_landmarks(img, [nan]) == img).all()  # nothing drawn for a degenerate detection


def test_plot_history_draws_each_digit_at_its_level():
    t = np.linspace(-10, 0, 50)
    v = np.tile([0.0, 0.25, 0.5, 0.75, 1.0], (50, 1))
    img = plot_history(t, v, 10.0, 320, 140)
    top, bottom = 6, 140 - 18
    for d, level in enumerate([0.0, 0.25, 0.5, 0.75, 1.0]):
        y = int(round(bottom - level * (bottom - top)))
        band = img[max(y - 1, 0): y + 2, 100:200].reshape(-1, 3).astype(int)
        assert (np.abs(band - DIGIT_RGB[d]).sum(axis=1) < 80).any(), f"digit {d} not at {level}"


def test_decode_jpeg_gives_rgb_and_rejects_garbage():
    import cv2
    import pytest

    bgr = np.zeros((16, 16, 3), np.uint8)
    bgr[:] = (255, 0, 0)  # blue in BGR
    ok, buf = cv2.imencode(".jpg", bgr)
    rgb = decode_jpeg_rgb(buf.tobytes())
    assert rgb[8, 8, 2] > 200 and rgb[8, 8, 0] < 40
    with pytest.raises(ValueError):
        decode_jpeg_rgb(b"not a jpeg")


def test_the_3d_view_frames_the_robots():
    """The initial camera looks at the robots' box from about its size away (viser's default view
    from 5 m shows a 0.2 m hand as a speck)."""
    import socket

    import yourdfpy

    from hand_console.page import ConsolePage
    from hand_description.paths import urdf_path

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    page = ConsolePage("127.0.0.1", port)
    try:
        assert page.frame_robots() is None
        urdf = yourdfpy.URDF.load(str(urdf_path("right")), load_meshes=True, build_scene_graph=True)
        page.add_urdf("hand", urdf, (0.0, 0.15, 0.0))
        lo, hi = np.asarray(urdf.scene.bounds) + [0.0, 0.15, 0.0]
        look_at, position = np.asarray(page.server.initial_camera.look_at), np.asarray(page.server.initial_camera.position)
        assert np.allclose(look_at, (lo + hi) / 2, atol=1e-6)
        assert 0.05 < np.linalg.norm(position - look_at) < 1.0
    finally:
        page.close()


def test_a_taken_port_is_refused_not_moved_to_the_next_one():
    """viser serves on the next free port when the one asked for is taken: the printed address
    (--console-port) would show another program's page. The page refuses instead."""
    import socket

    import pytest

    from hand_console.page import ConsolePage

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=rf"^port {port} on 127\.0\.0\.1 is in use \(viser would have served on "):
            ConsolePage("127.0.0.1", port)


def test_the_page_prints_no_second_address(capfd):
    """viser's own banner (a random port for make demo's screenshot) is not printed: the runner and
    the replay print the one address to open."""
    from hand_console.page import ConsolePage

    page = ConsolePage("127.0.0.1", 0)
    try:
        assert page.port > 0
        out = capfd.readouterr().out
        assert "Websocket" not in out and f"127.0.0.1:{page.port}" not in out
    finally:
        page.close()

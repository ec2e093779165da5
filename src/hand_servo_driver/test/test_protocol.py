"""The serial protocol in Python: the shared vectors, CRC against an independent implementation,
every single-bit error and every truncation detected, chunking independence, payload codecs."""

import binascii
import os
import random
import struct

import pytest

from hand_servo_driver import protocol as p
from hand_servo_driver import vectors

VECTORS = os.path.join(os.path.dirname(__file__), "..", "firmware", "test_vectors.txt")


def test_shared_vectors_pass_in_python():
    rep = vectors.run_file(VECTORS)
    assert rep.failures == []
    # every section is exercised (the firmware host test must report the same totals)
    assert (rep.crc, rep.frame, rep.stream, rep.board) == (4, 5, 12, 7)
    assert rep.checks > 200


def test_vector_runner_catches_a_wrong_expectation(tmp_path):
    text = open(VECTORS).read().replace("status 1 01 0 1 frames=1", "status 1 01 0 1 frames=2")
    bad = tmp_path / "vectors.txt"
    bad.write_text(text)
    rep = vectors.run_file(str(bad))
    assert len(rep.failures) == 1 and "status counter frames=1 != 2" in rep.failures[0]


def test_crc_matches_binascii_crc_hqx():
    rng = random.Random(7)
    for n in (0, 1, 2, 7, 24, 56, 300):
        data = bytes(rng.randrange(256) for _ in range(n))
        want = binascii.crc_hqx(data, 0xFFFF)  # CRC-CCITT, init 0xFFFF = CRC-16/CCITT-FALSE
        assert p.crc16(data) == want
        assert p.crc16_fast(data) == want


def _frames():
    return [p.encode_set_pulses(513, [(0, 1000), (1, 1250), (2, 1500), (3, 1750), (4, 2000)]),
            p.encode_heartbeat(7), p.encode_safe(65535, p.SAFE_DETACH),
            p.encode_frame(p.MsgType.STATUS, 3, bytes(range(p.STATUS_LEN)))]


@pytest.mark.parametrize("frame", _frames(), ids=["pulses", "heartbeat", "safe", "status"])
def test_every_single_bit_flip_is_rejected_and_the_next_frame_survives(frame):
    follow = p.encode_heartbeat(4242)
    for bit in range(len(frame) * 8):
        bad = bytearray(frame)
        bad[bit // 8] ^= 1 << (bit % 8)
        parser = p.Parser()
        got = parser.feed(bytes(bad) + follow, 0) + parser.expire(1000)
        assert got == [p.Frame(p.MsgType.HEARTBEAT, 4242)], f"bit {bit}"
        c = parser.counters()
        assert c["crc_errors"] + c["length_errors"] + c["garbage_bytes"] + c["timeouts"] >= 1


@pytest.mark.parametrize("frame", _frames(), ids=["pulses", "heartbeat", "safe", "status"])
def test_every_truncation_is_rejected_and_the_next_frame_survives(frame):
    follow = p.encode_heartbeat(4242)
    for keep in range(1, len(frame)):
        parser = p.Parser()
        got = parser.feed(frame[:keep], 0)  # the rest never comes ...
        got += parser.feed(follow, 10)  # ... the next frame does, 10 ms later
        got += parser.expire(200)
        assert got == [p.Frame(p.MsgType.HEARTBEAT, 4242)], f"kept {keep} bytes"


def test_chunking_does_not_change_the_result():
    rng = random.Random(3)
    stream = b"".join(_frames()) + bytes([0xA5, 0x00, 0x13]) + b"".join(_frames())
    whole = p.Parser()
    ref = whole.feed(stream, 0)
    for _ in range(50):
        parser = p.Parser()
        got, i = [], 0
        while i < len(stream):
            n = rng.randint(1, 9)
            got += parser.feed(stream[i:i + n], 0)
            i += n
        assert got == ref and parser.counters() == whole.counters()
    assert len(ref) == 8 and whole.garbage_bytes == 3


def test_random_line_noise_never_becomes_a_command():
    rng = random.Random(11)
    parser = p.Parser()
    noise = bytes(rng.randrange(256) for _ in range(200_000))
    frames = parser.feed(noise, 0)
    # a random frame passes a 16-bit CRC with odds 2^-16 per candidate header; the sync + length
    # checks make candidates rare, so 200 kB of noise yields (almost surely) nothing
    assert len(frames) <= 1
    assert parser.garbage_bytes > 190_000


def test_status_round_trip_and_rejected_total():
    s = p.Status(ack_seq=300, ack_type=p.MsgType.SET_PULSES, result=p.Result.CLAMPED, flags=p.Flag.ATTACHED,
                 channels=5, watchdog_ms=500, counters={k: i + 1 for i, k in enumerate(p.COUNTER_NAMES)})
    payload = p.encode_status_payload(s)
    assert len(payload) == p.STATUS_LEN == 26
    assert p.decode_status(payload) == s
    # crc 2 + length 3 + range 4 + type 5 + timeouts 6 + garbage 7
    assert s.rejected == 27
    with pytest.raises(p.ProtocolError) as e:
        p.decode_status(payload[:-1])
    assert e.value.kind == "length"


def test_set_pulses_codec_and_validation():
    frame = p.encode_set_pulses(1, [(4, 2500), (0, 500)])
    (f,) = p.Parser().feed(frame, 0)
    assert p.decode_set_pulses(f.payload, 5) == [(4, 2500), (0, 500)]
    assert f.payload == bytes([2]) + struct.pack("<BHBH", 4, 2500, 0, 500)
    for bad, kind in (([(0, 499)], "range"), ([(0, 2501)], "range"), ([(16, 1500)], "range"),
                      ([(1, 1500), (1, 1500)], "range"), ([], "length")):
        with pytest.raises(p.ProtocolError) as e:
            p.encode_set_pulses(1, bad)
        assert e.value.kind == kind
    with pytest.raises(p.ProtocolError, match="board has 3 channels"):
        p.decode_set_pulses(p.pack_pulses([(0, 1500)] * 4), 3)
    with pytest.raises(p.ProtocolError, match="unknown"):
        p.decode_set_pulses(p.pack_pulses([(3, 1500)]), 3)
    with pytest.raises(p.ProtocolError):
        p.encode_frame(1, 0, bytes(p.MAX_PAYLOAD + 1))
    with pytest.raises(p.ProtocolError):
        p.encode_safe(0, 2)


def test_describe_and_cli(capsys):
    frames = _frames()
    text = p.describe(p.Parser().feed(frames[0], 0)[0])
    assert text == "SET_PULSES seq=513 ch0=1000us ch1=1250us ch2=1500us ch3=1750us ch4=2000us"
    assert p.flag_names(5) == "ATTACHED|SAFE" and p.flag_names(0) == "none"
    assert p.main([frames[1].hex(), "00"]) == 0
    out = capsys.readouterr().out
    assert "HEARTBEAT seq=7" in out and "'garbage_bytes': 1" in out

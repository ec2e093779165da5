"""Two hosts over a bad link, on this machine: the operator runner (MediaPipe tracker on the shared
video, paced like a camera) in one network namespace, the robot runner (servo driver + simulated
board) in another, DDS only over an emulated link between them (hand_bringup.netlink: TAP devices and
a forwarding process; this kernel has no netem). A short subset of the acceptance of issue 27 (the
whole list, repeated, is ``bench_link``): one 2 s outage and one phase of 20 % loss, the whole run
with the operator's clock 2 s behind (the link moves every command's capture stamp). Judged on the
order of events and on pulses, never on timing (the figures are bench_link's). About 60-90 s.
Skipped with the reason when not root or without network namespaces / TAP devices.
"""

from __future__ import annotations

import os
import time

import pytest

from hand_bringup import two_host_rig as rig
from hand_bringup.netlink import (
    LinkFaults,
    joint_state_in_frame,
    joint_states_in_frame,
    shift_joint_state_stamp,
)

VIDEO = "/work/shared/media/human_hand_video.mp4"
_WHY = rig.problem()

COMMAND_TIMEOUT_S = 0.15  # servo_driver.yaml
RATE_US_PER_S = 300.0 * rig.US_PER_DEG  # max_speed_dps 300
BOUND = rig.step_bound_us(300.0, 0.02)
SAFE_BOUND = rig.step_bound_us(600.0, 0.02)  # safe_speed_dps 600: the ramp to the safe pose


def _video() -> str:
    root = os.environ.get("HAND_TELEOP_ROOT", "")
    for p in (os.path.join(root, "..", "shared", "media", "human_hand_video.mp4"), VIDEO):
        if os.path.exists(p):
            return os.path.abspath(p)
    pytest.skip("the shared hand video is missing")


@pytest.mark.slow
@pytest.mark.skipif(_WHY is not None, reason=f"two-namespace link: {_WHY}")
def test_two_hosts_over_a_bad_link(tmp_path):
    # the operator's clock is 2 s behind the robot's for the whole run (the link moves every command's
    # capture stamp by -2 s: each looks 2 s old): nothing below may change for it
    # the video loops like a camera (a finite video whose late frames the tracker drops fails the run:
    # "the run lost messages"), and the run ends with Ctrl-C after the faults
    r = rig.TwoHostRig(tmp_path, _video(), loop=True, stamp_offset_s=-2.0)
    try:
        r.start()
        time.sleep(3.0)
        t_down, t_up = r.outage(2.0, settle_s=3.0)
        l0, l1 = r.phase(LinkFaults(loss=0.2), 4.0, settle_s=3.0)
    finally:
        codes = r.stop()
    assert codes.get("operator") == 0, (tmp_path / "operator.out").read_text()[-3000:]
    assert codes.get("robot") == 0, (tmp_path / "robot.out").read_text()[-3000:]
    assert not [ns for ns in r.net.ns.values() if os.path.exists(f"/run/netns/{ns}")]  # namespaces removed

    crossed, frames, records, stale = r.crossings(), r.board_frames(), r.board_records(), r.stale_decisions()
    # (how many of the tracker's commands the driver follows depends on the load: on a loaded machine it
    # refuses most as late, see the README's figures; only the order of events is judged here)
    assert len(crossed) > 20 and len(frames) >= 3, (len(crossed), len(frames))
    # the outage: after the last command that crossed, the driver declares the command stale and the
    # horns reach the safe (open) pulses, both before the link returns; commands cross again after it
    # and servo frames follow them; no per-frame change beyond the limiter's bound (timing: bench_link)
    o = rig.outage_figures(2.0, t_down, t_up, crossed, frames, records, stale, rig.safe_pulses(), RATE_US_PER_S,
                           BOUND, SAFE_BOUND)
    assert not [t for _, t in crossed if t_down + 0.005 < t < t_up], "a command crossed a link that was down"
    assert o.safe_ms is not None, o  # stale_ms is None when the driver was already stale (a loaded tracker)
    assert o.resume_cmd_ms is not None and [f for f in frames if f["mono"] > t_up], o
    assert o.jumps == 0 and o.largest_track_step_us <= BOUND and o.largest_step_us <= SAFE_BOUND, o
    # 20 % loss: commands still cross, no jump (the frame cap is bench_link's figure: the board's stamps
    # are its reads, which a loaded machine bunches)
    diags = r.driver_diagnostics()
    assert diags, "no servo driver diagnostics in the robot's bag"
    loss = rig.phase_figures("loss 20%", l0, l1, crossed, records, stale, COMMAND_TIMEOUT_S, BOUND,
                             r.wall_minus_mono, diags, safe_step_bound_us=SAFE_BOUND)
    assert loss.crossed >= 1 and loss.jumps == 0, loss
    # the clock offset: commands were followed (a driver that compared the two clocks would refuse every
    # one of them as 2 s late, > command_timeout_s). How many are refused as late depends on the load
    # (the tracker's own latency varies by hundreds of ms on a loaded machine): bench_link's figures.
    last = diags[-1][2]
    assert int(last["commands"]) >= 3, last
    # the offset is there from the first command: no clock ever stepped, so no rebase. (A fresh clone at
    # load ~3 once counted 1: the driver took its callback's time as the arrival, and a steady backlog of
    # its own executor looked like the sender's clock stepped back; it now takes the middleware's
    # reception time, test_core_link's test_a_steady_executor_backlog_is_not_taken_for_a_sender_clock_step.)
    print(f"\nclock offset -2 s: commands {last['commands']}, late {last['commands_late']}, "
          f"clock_rebases {last['clock_rebases']}, load {os.getloadavg()}")
    assert int(last["clock_rebases"]) == 0, last
    steps = rig.pulse_steps(records, rig.safe_pulses())
    assert steps and rig.count_jumps(steps, BOUND, SAFE_BOUND) == 0


def _frame(*payloads: bytes) -> bytes:
    import struct

    rtps = b"RTPS" + bytes([2, 3, 1, 15]) + bytes(12)
    sub = b""
    for payload in payloads:  # one DATA submessage each (the last one's length may be 0: "to the end")
        body = struct.pack("<HH", 0, 16) + bytes(4) + bytes([0, 0, 1, 0x03]) + struct.pack("<iI", 0, 1) + payload
        sub += bytes([0x15, 0x05]) + struct.pack("<H", len(body)) + body
    udp_len = 8 + len(rtps) + len(sub)
    ip = bytes([0x45, 0]) + struct.pack("!H", 20 + udp_len) + bytes(4) + bytes([64, 17]) + bytes(2) + bytes(8)
    udp = struct.pack("!HHHH", 7400, 7411, udp_len, 0xBEEF)
    return bytes(12) + b"\x08\x00" + ip + udp + rtps + sub


def _joint_state(sec: int, nsec: int, names) -> bytes:
    import struct

    out = bytearray(b"\x00\x01\x00\x00")

    def align():
        while (len(out) - 4) % 4:
            out.append(0)

    out += struct.pack("<iI", sec, nsec)
    out += struct.pack("<I", 1) + b"\0"  # frame_id ""
    align()
    out += struct.pack("<I", len(names))
    for n in names:
        align()
        out += struct.pack("<I", len(n) + 1) + n.encode() + b"\0"
    return bytes(out)


def test_joint_state_found_and_its_stamp_shifted_in_an_rtps_frame():
    from hand_common import contract

    frame = _frame(_joint_state(1000, 250_000_000, contract.FINGER_NAMES))
    stamp, at, end = joint_state_in_frame(frame)
    assert stamp == pytest.approx(1000.25) and end == "<"
    shifted = shift_joint_state_stamp(frame, 2.0)
    assert joint_state_in_frame(shifted)[0] == pytest.approx(1002.25)
    assert shifted[14 + 20 + 6:14 + 20 + 8] == b"\0\0"  # UDP checksum "none"
    back = shift_joint_state_stamp(frame, -2.5)
    assert joint_state_in_frame(back)[0] == pytest.approx(997.75)
    # other joint names, a builtin writer, a truncated frame: not a command
    assert joint_state_in_frame(_frame(_joint_state(1, 0, ["a", "b", "c", "d", "e"]))) is None
    builtin = bytearray(frame)
    builtin[frame.index(bytes([0, 0, 1, 0x03])) + 3] = 0xC2
    assert joint_state_in_frame(bytes(builtin)) is None
    assert joint_state_in_frame(frame[:70]) is None
    assert shift_joint_state_stamp(frame[:70], 2.0) == frame[:70]
    # a datagram with several DATA submessages (Fast DDS resends a backlog so): every stamp moves
    batch = _frame(*(_joint_state(1000 + i, 0, contract.FINGER_NAMES) for i in range(3)))
    assert [s for s, _, _ in joint_states_in_frame(batch)] == [1000.0, 1001.0, 1002.0]
    assert [s for s, _, _ in joint_states_in_frame(shift_joint_state_stamp(batch, -2.0))] == [998.0, 999.0, 1000.0]
    assert joint_state_in_frame(batch)[0] == 1000.0


def _fragment(frame: bytes, size: int) -> list[bytes]:
    """``frame`` (Ethernet + IPv4 + UDP) cut into IP fragments of ``size`` payload bytes (a multiple of 8)."""
    import struct

    head, payload = frame[:34], frame[34:]
    out = []
    for off in range(0, len(payload), size):
        part = payload[off:off + size]
        h = bytearray(head)
        more = off + size < len(payload)
        struct.pack_into("!H", h, 20, (0x2000 if more else 0) | off // 8)
        struct.pack_into("!H", h, 16, 20 + len(part))
        out.append(bytes(h) + part)
    return out


def test_a_datagram_in_ip_fragments_is_joined_and_every_stamp_in_it_shifted():
    """Fast DDS resends an outage's backlog as one datagram of several samples, larger than the MTU:
    IP fragments it. The forwarder joins the fragments, finds every JointState, moves each stamp where
    its bytes lie (across a fragment boundary too) and sends the fragments on (bench_link's clock
    session: unjoined, the backlog crossed with the real stamps, the driver followed one 2 s 'newer' at
    -2 s and refused the stream after it as out of order, then late, until a clock rebase)."""
    from hand_bringup.netlink import FragmentJoiner, fragments_joint_states, shift_fragments_stamps
    from hand_common import contract

    whole = _frame(*(_joint_state(1000 + i, 500_000_000, contract.FINGER_NAMES) for i in range(6)))
    for size in (96, 104, 200):  # cuts at many places, stamps straddling boundaries among them
        frags = _fragment(whole, size)
        assert len(frags) >= 3 and joint_state_in_frame(frags[0]) is None  # a fragment alone: not found
        for order in (frags, frags[::-1], frags[1:] + frags[:1]):
            j = FragmentJoiner()
            got = [j.add(f, 0.0) for f in order]
            assert all(g == [] for g in got[:-1]) and got[-1] == frags  # all at once, in offset order
        assert fragments_joint_states(frags) == [1000.5 + i for i in range(6)]
        shifted = shift_fragments_stamps(frags, -2.0)
        assert fragments_joint_states(shifted) == [998.5 + i for i in range(6)]
        assert shifted[0][34 + 6:34 + 8] == b"\0\0"  # UDP checksum "none"
        assert [len(f) for f in shifted] == [len(f) for f in frags]
    # not a fragment: goes alone; an incomplete datagram is let go after max_age_s
    j = FragmentJoiner(max_age_s=0.5)
    assert j.add(whole, 0.0) is None
    first = _fragment(whole, 104)[0]
    assert j.add(first, 0.0) == [] and j.add(whole, 1.0) == [first, whole]
    assert fragments_joint_states([whole]) == [1000.5 + i for i in range(6)]


def test_link_policy_is_seeded_and_does_what_it_is_told():
    from hand_bringup.netlink import LinkPolicy

    def fates(seed, faults, n=2000):
        p = LinkPolicy(seed, faults)
        return [p.decide(10.0) for _ in range(n)]

    lossy = fates(1, LinkFaults(loss=0.2))
    assert fates(1, LinkFaults(loss=0.2)) == lossy
    assert 0.17 < sum(f is None for f in lossy) / len(lossy) < 0.23
    delayed = [f - 10.0 for f in fates(2, LinkFaults(delay_s=0.1, jitter_s=0.05))]
    assert min(delayed) >= 0.05 and max(delayed) <= 0.15 and 0.095 < sum(delayed) / len(delayed) < 0.105
    held = [f - 10.0 for f in fates(3, LinkFaults(reorder=0.25, reorder_gap_s=0.05))]
    assert 0.2 < sum(h == pytest.approx(0.05) for h in held) / len(held) < 0.3
    assert all(f is None for f in fates(4, LinkFaults(down=True), 50))
    for bad in ({"loss": 1.5}, {"delay_s": -1.0}, {"delay_s": 0.01, "jitter_s": 0.05}):
        with pytest.raises(ValueError):
            LinkFaults(**bad)
    with pytest.raises(ValueError, match="unknown"):
        LinkFaults.from_dict({"los": 0.2})


def test_outage_figures_from_synthetic_records():
    # commands cross every 33 ms until 10.0, the link is down 10.0-12.0; the driver goes stale at 10.16,
    # the board ramps 1300 -> 1000 us in 67 us steps, commands cross again from 12.05, a frame at 12.06
    crossed = [(1000.0 + i / 30, 9.0 + i / 30) for i in range(31)] + [(1003.1, 12.05), (1003.13, 12.08)]
    frames, t, pos = [], 9.9, 1300
    frames.append({"mono": t, "t": t, "outputs": [pos] * 5})
    t = 10.17
    while pos > 1000:
        pos = max(1000, pos - 67)
        frames.append({"mono": t, "t": t, "outputs": [pos] * 5})
        t += 0.02
    frames.append({"mono": 12.06, "t": 12.06, "outputs": [1050] * 5})
    o = rig.outage_figures(2.0, 10.0, 12.0, crossed, frames, frames, [10.16], rig.safe_pulses(), RATE_US_PER_S, BOUND)
    assert o.stale_ms == pytest.approx(160.0) and o.ramp_ms == pytest.approx(90.0)
    assert o.safe_ms == pytest.approx(250.0, abs=1) and o.resume_cmd_ms == pytest.approx(50.0)
    assert o.resume_frame_ms == pytest.approx(60.0) and o.jumps == 0 and o.largest_step_us == 67
    assert o.largest_track_step_us == 50  # 1000 -> 1050 on resuming; the 67 us steps went toward the safe pose
    frames.append({"mono": 12.1, "t": 12.1, "outputs": [1250] * 5})  # a 200 us jump
    o = rig.outage_figures(2.0, 10.0, 12.0, crossed, frames, frames, [10.16], rig.safe_pulses(), RATE_US_PER_S, BOUND)
    assert o.jumps == 1 and o.largest_step_us == 200 and o.watchdog_trips == 0
    # the board's watchdog puts the outputs safe at once (the firmware's action, counted apart); the
    # driver's next frame is judged against what the watchdog left
    frames[-1] = {"mono": 12.1, "t": 12.1, "event": "watchdog", "outputs": [1000] * 5}
    frames.append({"mono": 12.2, "t": 12.2, "event": "frame", "outputs": [1060] * 5})
    o = rig.outage_figures(2.0, 10.0, 12.0, crossed, [f for f in frames if f.get("event") != "watchdog"], frames,
                           [10.16], rig.safe_pulses(), RATE_US_PER_S, BOUND)
    assert o.jumps == 0 and o.largest_step_us == 67 and o.watchdog_trips == 1


def test_jumps_are_judged_by_their_own_limiter_bound():
    """A step toward the safe pose may be as large as the safe ramp's bound (safe_speed_dps), any
    other only the tracking one (max_speed_dps); a step that moves one servo away from the safe
    pulse is tracking whatever the others do."""
    recs = [{"mono": 0.0, "outputs": [1500] * 5},
            {"mono": 0.02, "outputs": [1367] * 5},  # 133 us toward 1000: the safe ramp
            {"mono": 0.04, "outputs": [1234] * 4 + [1300]},  # 133 toward, one servo 67 us toward too
            {"mono": 0.06, "outputs": [1234] * 4 + [1400]},  # 100 us away from the safe pulse: tracking
            {"mono": 0.08, "outputs": [1300] * 4 + [1600]}]  # 66 us away, 200 us away: tracking
    steps = rig.pulse_steps(recs, rig.safe_pulses())
    assert steps == [(133, True), (133, True), (100, False), (200, False)]
    assert rig.count_jumps(steps, BOUND, SAFE_BOUND) == 2  # the 100 and the 200 us tracking steps
    assert rig.count_jumps(steps, BOUND) == 4  # one bound for every frame: the 133 us steps too


def test_stale_decisions_and_their_lateness_read_from_the_driver_log(tmp_path):
    """The driver logs each stale decision with how long after its deadline (reception +
    command_timeout_s) it was taken; the rig reads both (wall stamps converted to CLOCK_MONOTONIC)."""
    r = rig.TwoHostRig(tmp_path, VIDEO)
    logs = r.robot_dir / "logs"
    logs.mkdir(parents=True)
    w = r.wall_minus_mono
    (logs / "servo_driver.log").write_text(
        f"[INFO] [{w + 10.0:.6f}] [servo_driver]: active: following /hand/target_flexions\n"
        f"[WARN] [{w + 12.5:.6f}] [servo_driver]: command older than 0.15 s: ramping to the safe pose "
        "(decided 3.2 ms after its deadline)\n"
        f"[WARN] [{w + 20.0:.6f}] [servo_driver]: command older than 0.15 s: ramping to the safe pose "
        "(decided 0.0 ms after its deadline)\n")
    assert r.stale_decisions() == pytest.approx([12.5, 20.0], abs=1e-5)
    late = r.stale_lateness()
    assert [t for t, _ in late] == pytest.approx([12.5, 20.0], abs=1e-5) and [ms for _, ms in late] == [3.2, 0.0]

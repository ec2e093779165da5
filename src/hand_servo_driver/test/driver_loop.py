"""The servo driver core's test harness: DriverCore wired to the Python board logic in one process on a
synthetic clock (:class:`Loop`), configs and the step checks the core tests share (test_core,
test_core_link)."""



from hand_common.contract import FINGER_NAMES
from hand_servo_driver import protocol as p
from hand_servo_driver.board import Board, BoardConfig
from hand_servo_driver.calibration import SG90_US_PER_DEGREE, ServoCalibration
from hand_servo_driver.core import DriverConfig, DriverCore, ServoSettings
from hand_servo_driver.driver_config import SG90_HORN_DPS

RATE_DPS = 180.0
RATE_US = RATE_DPS * SG90_US_PER_DEGREE  # 2000 µs/s
DT = 0.02
#: the ramp to the safe pose: safe_speed_dps (default: an SG90 horn's 600 °/s) = 6667 µs/s, 133 µs a 20 ms step
SAFE_US = SG90_HORN_DPS * SG90_US_PER_DEGREE
SAFE_PULSE = 1000  # every servo's pulse at safe_flexion 0


def _split_steps(outputs) -> tuple[int, int]:
    """(largest change of a frame that moved some servo away from the safe pulse or not toward it,
    largest change of a frame that moved every changed servo toward it) over consecutive output
    lists (µs; None entries, detached outputs, skipped). Tracking is bounded by max_speed_dps, a
    ramp to the safe pose by safe_speed_dps."""
    track, safe, prev = 0, 0, None
    for out in outputs:
        if prev is not None and out is not None:
            pairs = [(a, b) for a, b in zip(prev, out) if a is not None and b is not None and a != b]
            if pairs:
                step = max(abs(b - a) for a, b in pairs)
                if all(abs(b - SAFE_PULSE) < abs(a - SAFE_PULSE) for a, b in pairs):
                    safe = max(safe, step)
                else:
                    track = max(track, step)
        prev = out
    return track, safe


def config(**kw) -> DriverConfig:
    servo_kw = {k: kw.pop(k) for k in ("max_speed_dps", "deadband_deg") if k in kw}
    servo_kw.setdefault("max_speed_dps", RATE_DPS)
    servo_kw.setdefault("deadband_deg", 2.0)
    servos = tuple(ServoSettings(ServoCalibration(n, i), **servo_kw) for i, n in enumerate(FINGER_NAMES))
    return DriverConfig(servos=servos, **kw)


def flex(*values):
    return dict(zip(FINGER_NAMES, values))


class Loop:
    """Core → bytes → board → STATUS → core, with a clock in seconds; ``corrupt`` marks seqs to
    flip a bit in before the board sees them."""

    def __init__(self, cfg: DriverConfig, board_cfg: BoardConfig | None = None):
        self.core = DriverCore(cfg)
        self.board = Board(board_cfg or BoardConfig(channels=5), 0)
        self.parser = p.Parser()
        self.t = 0.0
        self.sent: list[p.Frame] = []
        self.sent_t: list[float] = []
        self.corrupt: set[int] = set()
        self.connected = True
        self.waiting: list[bytes] = []
        self.core.on_link_up(self.t)
        self._deliver(self.board.boot_replies())

    def ms(self) -> int:
        return int(round(self.t * 1000))

    def _deliver(self, replies):
        for r in replies:
            for f in self.parser.feed(r, self.ms()):
                self.core.on_frame(f, self.t)

    def send(self, frames):
        for fr in frames:
            f = p.Parser().feed(fr, 0)[0]
            self.sent.append(f)
            self.sent_t.append(self.t)
            if not self.connected:
                continue
            if f.seq in self.corrupt:
                b = bytearray(fr)
                b[8] ^= 0x10
                fr = bytes(b)
            self._deliver(self.board.poll(self.ms()) + self.board.receive(fr, self.ms()))

    def run(self, seconds: float, command=None, board_only: bool = False):
        """Step both sides every DT; ``board_only``: the driver is frozen (replies wait for it)."""
        end = self.t + seconds
        while self.t < end - 1e-9:
            self.t = round(self.t + DT, 6)
            if board_only:
                self.waiting += self.board.poll(self.ms())
                continue
            self._deliver(self.waiting)
            self.waiting = []
            if command is not None:
                self.core.command(command, self.t)
            self.send(self.core.step(self.t))
            self._deliver(self.board.poll(self.ms()))

    def pulses_frames(self):
        return [f for f in self.sent if f.type == p.MsgType.SET_PULSES]


def _pulse_series(lp):
    return [(t, [u for _, u in p.decode_set_pulses(f.payload)])
            for f, t in zip(lp.sent, lp.sent_t) if f.type == p.MsgType.SET_PULSES]


def _largest_step(series):
    return max((max(abs(b - a) for a, b in zip(x, y)) for (_, x), (_, y) in zip(series, series[1:])), default=0)


def _within_limits(series_or_outputs, dt: float = DT) -> bool:
    """Every frame's change within its limit: tracking max_speed_dps x dt, toward the safe pose
    safe_speed_dps x dt (+1 µs of rounding each)."""
    outs = [x[1] if isinstance(x, tuple) else x for x in series_or_outputs]
    track, safe = _split_steps(outs)
    return track <= RATE_US * dt + 1 and safe <= SAFE_US * dt + 1


def _board_jumps(board_events, limit):
    """Largest per-frame output change between accepted frames (µs), detached outputs skipped."""
    worst, prev = 0, None
    for ev in board_events:
        out = ev.outputs
        if prev is not None and out is not None:
            worst = max([worst] + [abs(b - a) for a, b in zip(prev, out) if a is not None and b is not None])
        prev = out
    return worst

"""The servo driver's parameters as data, and their translation into configs. No rclpy.

:data:`PARAMS` is the single list the node declares (with descriptors) and that tests compare with
``config/servo_driver.yaml``. :func:`build_config` turns a ``{name: value}`` dict into the
:class:`~hand_servo_driver.driver_config.DriverConfig` and :class:`LinkSettings`, raising
:class:`~hand_servo_driver.driver_config.DriverConfigError` with the parameter's name on any bad value.

Per-servo parameters are ``<finger>.<field>`` for each finger of ``contract.FINGER_NAMES``
(one tendon servo per digit): ``thumb.channel``, ``index.max_pulse_us``, …
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hand_common.contract import FINGER_NAMES
from hand_common.param_spec import ParamSpec
from hand_servo_driver.calibration import (
    SG90_SAFE_MAX_US,
    SG90_SAFE_MIN_US,
    SG90_US_PER_DEGREE,
    CalibrationError,
    ServoCalibration,
)
from hand_servo_driver.driver_config import (
    SAFE_FLEXION_MAX,
    SG90_HORN_DPS,
    DriverConfig,
    DriverConfigError,
    ServoSettings,
)

GLOBAL_PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("port", "/dev/ttyACM0", "Serial device of the board (a pty link for sim_board). Applies at configure."),
    ParamSpec("baud", 115200, "Serial bit rate; must match the firmware's HSB_BAUD. Applies at configure.",
              (1200, 4000000)),
    ParamSpec("write_timeout_s", 0.05, "Bytes the OS has not taken for this long are a write stall (counted); "
              "the link is declared lost only if the board also sent no STATUS for ack_timeout_s (s).",
              (0.001, 5.0)),
    ParamSpec("connect_timeout_s", 3.0, "on_configure keeps trying to open the port this long before it fails; "
              "the last attempt is made when it has passed (s).", (0.0, 60.0)),
    ParamSpec("reconnect_min_s", 0.2, "First retry delay after the link went down (s); doubles up to reconnect_max_s.",
              (0.01, 60.0)),
    ParamSpec("reconnect_max_s", 2.0, "Longest retry delay while the device is gone (s).", (0.01, 600.0)),
    ParamSpec("rate_hz", 100.0, "Control loop rate: rate limiter steps, heartbeats, stale check, link I/O, and the "
              "pacing of frames to the board (at least 1/rate_hz apart; a fresh command's frame goes out at once or "
              "exactly 1/rate_hz after the last frame). 100 Hz = at most one "
              "SET_PULSES (5 servos, 24 bytes, 2.1 ms at 115200 baud) per 10 ms: 21 % of the link. "
              "Applies at configure.", (1.0, 500.0)),
    ParamSpec("command_timeout_s", 0.15, "A command older than this is stale: the servos go to the safe pose (s). "
              "Default: 4.5 frame periods at 30 Hz, so the safe pose is out within 0.2 s; at least two control "
              "periods (1/rate_hz).", (0.02, 60.0), live=True),
    ParamSpec("heartbeat_period_s", 0.1, "Longest silence on the wire; at most half the board watchdog (s).",
              (0.01, 10.0), live=True),
    ParamSpec("ack_timeout_s", 0.5, "A frame without STATUS within this counts as unacknowledged (s).",
              (0.01, 10.0), live=True),
    ParamSpec("max_step_s", 0.02, "Longest time step the rate limiter honours (s): after a stalled loop the ramp "
              "resumes by at most max_speed_dps x max_step_s (2 ticks at 100 Hz: 67 µs at 300 °/s), never a "
              "jump; at least 1/rate_hz.", (0.001, 1.0), live=True),
    ParamSpec("safe_mode", "pose", "What 'safe' means: 'pose' (each servo at safe_flexion) or 'detach' "
              "(the board stops the pulses; SG90s go limp).", live=True),
    ParamSpec("safe_flexion", 0.0, "Flexion of the safe pose (0 = open hand, tendons slack); at most "
              f"{SAFE_FLEXION_MAX} (the open side, whatever is asked).", (0.0, SAFE_FLEXION_MAX), live=True),
    ParamSpec("safe_speed_dps", SG90_HORN_DPS, "Speed of a ramp to the safe pose (degrees/s of horn): faster "
              "than tracking so the hand opens soon after the commands stop (the ramp is part of 'safe within "
              "0.2 s'), at most an SG90 horn's own speed (faster pulses would be a jump); a servo with a higher "
              "max_speed_dps ramps at that.", (1.0, SG90_HORN_DPS), live=True),
    ParamSpec("us_per_degree", SG90_US_PER_DEGREE, "Pulse µs per degree of horn travel (SG90: 2000 µs / 180°), "
              "converts max_speed_dps and deadband_deg.", (1.0, 50.0), live=True),
    ParamSpec("dry_run", False, "No port: log the pulses that would be sent. Applies at configure."),
    ParamSpec("board_watchdog_s", 0.5, "The board's watchdog (firmware HSB_WATCHDOG_MS; 0 = disabled), checked "
              "against heartbeat_period_s when set; the board's own STATUS value takes over once it answered (s).",
              (0.0, 65.535), live=True),
    ParamSpec("board_channels", 5, "Servo outputs of the board (firmware HSB_CHANNELS); every channel must be "
              "below it. The board's own STATUS value takes over once it answered.", (1, 16), live=True),
    ParamSpec("diagnostics_period_s", 1.0, "Period of /diagnostics (also published on every link change) (s).",
              (0.05, 60.0)),
    ParamSpec("command_source", "", "The node whose commands are followed (fully qualified, e.g. /hand_tracker: "
              "commands whose header.frame_id names another node are refused and counted); '' follows every "
              "publisher. Either way a second publisher of the topic is named in a diagnostics WARN. "
              "Applies at configure."),
)


def servo_params(name: str, channel: int) -> tuple[ParamSpec, ...]:
    """The per-servo parameters of one finger (defaults: conservative SG90 range)."""
    return (
        ParamSpec(f"{name}.enabled", True, f"Drive the {name} servo. Applies at configure."),
        ParamSpec(f"{name}.channel", channel, f"Board output channel of the {name} servo. Applies at configure.",
                  (0, 15)),
        ParamSpec(f"{name}.min_pulse_us", SG90_SAFE_MIN_US, f"{name}: pulse at the open end (µs). SG90 conservative "
                  "1000, full range about 500 (check the linkage first).", (500, 2500), live=True),
        ParamSpec(f"{name}.max_pulse_us", SG90_SAFE_MAX_US, f"{name}: pulse at the closed end (µs). SG90 conservative "
                  "2000, full range about 2500.", (500, 2500), live=True),
        ParamSpec(f"{name}.inverted", False, f"{name}: flexion 1 at min_pulse_us (servo mounted mirrored).", live=True),
        ParamSpec(f"{name}.map_flexion", [0.0, 1.0], f"{name}: flexion breakpoints, strictly rising 0.0 … 1.0.",
                  array_type=float, live=True),
        ParamSpec(f"{name}.map_fraction", [0.0, 1.0], f"{name}: fraction of the pulse range at each breakpoint, "
                  "non-decreasing in [0, 1].", array_type=float, live=True),
        ParamSpec(f"{name}.max_speed_dps", 300.0, f"{name}: rate limit of the horn (degrees/s; SG90 no-load ≈ 600).",
                  (1.0, 5000.0), live=True),
        ParamSpec(f"{name}.deadband_deg", 1.0, f"{name}: target changes smaller than this are not sent (degrees).",
                  (0.0, 45.0), live=True),
    )


PARAMS: tuple[ParamSpec, ...] = GLOBAL_PARAMS + tuple(
    spec for i, f in enumerate(FINGER_NAMES) for spec in servo_params(f, i))
PARAM_BY_NAME: dict[str, ParamSpec] = {s.name: s for s in PARAMS}


@dataclass(frozen=True)
class LinkSettings:
    """Serial and loop settings that apply at configure."""

    port: str
    baud: int
    write_timeout_s: float
    connect_timeout_s: float
    reconnect_min_s: float
    reconnect_max_s: float
    rate_hz: float
    dry_run: bool
    diagnostics_period_s: float
    command_source: str = ""


def defaults() -> dict[str, Any]:
    return {s.name: s.default for s in PARAMS}


def cross_parameter_problems(values: Mapping[str, Any], board_channels: int | None = None,
                             board_watchdog_s: float | None = None) -> list[str]:
    """Rules between parameters (and the board), each broken one as a reason naming them.

    values: ``{name: value}`` (missing names take their defaults). board_channels /
    board_watchdog_s: what the board reported in its STATUS (None = not known yet: the
    ``board_channels`` / ``board_watchdog_s`` parameters stand in). Rules: two heartbeats per
    board watchdog period (``heartbeat_period_s <= board_watchdog_s / 2``, and a heartbeat can only
    leave at a control tick: ``heartbeat_period_s + 1/rate_hz < board_watchdog_s``); every enabled
    channel below the board's channel count; ``command_timeout_s`` at least two control periods
    (the stale check runs at the control rate)."""
    v = {**defaults(), **values}
    problems: list[str] = []
    wd, wd_src = ((float(board_watchdog_s), "the board reports") if board_watchdog_s is not None
                  else (float(v["board_watchdog_s"]), "board_watchdog_s"))
    hb, tick = float(v["heartbeat_period_s"]), 1.0 / float(v["rate_hz"])
    if wd > 0 and (hb > wd / 2 or hb + tick >= wd):
        problems.append(f"heartbeat_period_s {hb:g} s is too long for a board watchdog of {wd:g} s ({wd_src}): "
                        f"need at most {wd / 2:g} s (two heartbeats per watchdog period), else holding a pose "
                        "trips the watchdog")
    nch, nch_src = ((int(board_channels), "the board reports") if board_channels is not None
                    else (int(v["board_channels"]), "board_channels"))
    for name in FINGER_NAMES:
        if v[f"{name}.enabled"] and int(v[f"{name}.channel"]) >= nch:
            problems.append(f"{name}.channel {int(v[f'{name}.channel'])} does not exist on a {nch}-channel board "
                            f"({nch_src}; channels 0..{nch - 1})")
    ms = float(v["max_step_s"])
    if ms < tick:
        problems.append(f"max_step_s {ms:g} s is shorter than one control period ({tick:g} s at rate_hz "
                        f"{float(v['rate_hz']):g}): every ramp would run slower than max_speed_dps")
    ct = float(v["command_timeout_s"])
    if ct < 2 * tick:
        problems.append(f"command_timeout_s {ct:g} s is shorter than two control periods ({2 * tick:g} s at "
                        f"rate_hz {float(v['rate_hz']):g}): fresh commands would look stale")
    return problems


def build_config(values: Mapping[str, Any], board_channels: int | None = None,
                 board_watchdog_s: float | None = None) -> tuple[DriverConfig, LinkSettings]:
    """Configs from parameter values (missing names take their defaults). Raises
    DriverConfigError naming the offending parameter(s), including every broken rule of
    :func:`cross_parameter_problems` (board_channels / board_watchdog_s: the board's reported
    values, when known)."""
    v = {**defaults(), **values}
    servos = []
    for name in FINGER_NAMES:
        if not v[f"{name}.enabled"]:
            continue
        try:
            cal = ServoCalibration(
                name=name, channel=int(v[f"{name}.channel"]), min_us=int(v[f"{name}.min_pulse_us"]),
                max_us=int(v[f"{name}.max_pulse_us"]), inverted=bool(v[f"{name}.inverted"]),
                map_flexion=tuple(v[f"{name}.map_flexion"]), map_fraction=tuple(v[f"{name}.map_fraction"]))
            servos.append(ServoSettings(cal, float(v[f"{name}.max_speed_dps"]), float(v[f"{name}.deadband_deg"])))
        except CalibrationError as exc:
            raise DriverConfigError(str(exc)) from exc
    cfg = DriverConfig(
        servos=tuple(servos), us_per_degree=float(v["us_per_degree"]), command_timeout_s=float(v["command_timeout_s"]),
        heartbeat_period_s=float(v["heartbeat_period_s"]), safe_mode=str(v["safe_mode"]),
        safe_flexion=float(v["safe_flexion"]), ack_timeout_s=float(v["ack_timeout_s"]),
        max_step_s=float(v["max_step_s"]), min_frame_interval_s=1.0 / float(v["rate_hz"]),
        safe_speed_dps=float(v["safe_speed_dps"]))
    problems = cross_parameter_problems(v, board_channels, board_watchdog_s)
    if problems:
        raise DriverConfigError("; ".join(problems))
    if float(v["reconnect_min_s"]) > float(v["reconnect_max_s"]):
        raise DriverConfigError(f"reconnect_min_s {v['reconnect_min_s']} > reconnect_max_s {v['reconnect_max_s']}")
    if not str(v["port"]) and not v["dry_run"]:
        raise DriverConfigError("port is empty (set it, or dry_run: true)")
    link = LinkSettings(
        port=str(v["port"]), baud=int(v["baud"]), write_timeout_s=float(v["write_timeout_s"]),
        connect_timeout_s=float(v["connect_timeout_s"]), reconnect_min_s=float(v["reconnect_min_s"]),
        reconnect_max_s=float(v["reconnect_max_s"]), rate_hz=float(v["rate_hz"]), dry_run=bool(v["dry_run"]),
        diagnostics_period_s=float(v["diagnostics_period_s"]), command_source=str(v["command_source"]))
    return cfg, link

"""``arm_keys``: the operator's keyboard for a running ``arm_teleop`` (the e-stop key).

    space / e   e-stop (latched)          c   clear the e-stop (step 1; then a fresh open palm)
    m           manual control on         g   manual off (→ DISABLED, never straight to gestures)
    d           disable                   j / k   control mode joint / cartesian
    q           quit

Each key is one call of the node's standard interfaces (``~/estop``, ``~/clear_estop``,
``~/manual``, ``~/disable`` services, ``set_parameters``), exactly what ``ros2 service call`` /
``ros2 param set`` would send. :func:`action` is the pure key table.
"""

from __future__ import annotations

import sys

from arm_teleop import topics

KEYS = {" ": ("estop", None), "e": ("estop", None), "c": ("clear_estop", None), "m": ("manual", True),
        "g": ("manual", False), "d": ("disable", None), "j": ("control_mode", "joint"),
        "k": ("control_mode", "cartesian")}


def action(key: str) -> tuple[str, object] | None:
    """The (service or parameter, value) a key stands for, or None."""
    return KEYS.get(key.lower() if key != " " else key)


def main(argv: list[str] | None = None) -> None:
    import termios
    import tty

    from std_srvs.srv import SetBool, Trigger

    from hand_common.probe import RosProbe

    node = topics.TELEOP_NODE
    probe = RosProbe("arm_keys")
    print(__doc__.split("\n\n")[1], flush=True)
    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        while True:
            key = sys.stdin.read(1)
            if key in ("q", "\x04", ""):
                break
            a = action(key)
            if a is None:
                continue
            name, value = a
            try:
                if name == "control_mode":
                    (r,) = probe.set_parameters(node, control_mode=value)
                    print(f"control_mode {value}: {'ok' if r.successful else r.reason}", flush=True)
                elif name == "manual":
                    r = probe.call(SetBool, f"/{node}/manual", SetBool.Request(data=bool(value)), timeout=3)
                    print(f"manual {value}: {r.message}", flush=True)
                else:
                    r = probe.call(Trigger, f"/{node}/{name}", Trigger.Request(), timeout=3)
                    print(f"{name}: {r.message}", flush=True)
            except TimeoutError as exc:
                print(f"{name}: {exc}", flush=True)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)
        probe.close()


if __name__ == "__main__":
    main()

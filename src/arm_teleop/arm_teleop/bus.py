"""The STS3215 bus interface the arm driver talks to, its dry-run implementation and the one
factory (:func:`open_bus`). No rclpy, no vendor SDK import until a real bus is asked for.

Like LeRobot's ``MotorsBus`` or ros2_control's mock hardware, the driver core calls one interface
(``open``, ``close``, ``ping``, ``read_position``, ``write_byte``, ``write_word``,
``sync_write_positions``, ``stats``; ``real`` says whether bytes reach servos):

- **real serial**: :class:`~arm_teleop.sts_bus.StsBus` (Feetech's SDK over pyserial) on the
  adapter's port;
- **simulated**: the same :class:`~arm_teleop.sts_bus.StsBus` on the pty of ``sim_sts_bus``
  (:mod:`arm_teleop.sim_bus`: the servos' side of the protocol, with fault injection), so the
  simulation exercises the real byte path;
- **dry run**: :class:`DryRunBus`: nothing is opened; the core records what it would write
  (``ArmDriverCore.intended``) and never asks it for a transaction (one asked anyway is a
  :class:`BusError`, never a silent success).
"""

from __future__ import annotations

from arm_teleop.bus_errors import BusError, BusStats

__all__ = ["BusError", "BusStats", "DryRunBus", "open_bus"]


class DryRunBus:
    """The bus of a dry run: no port; ``real`` False; every transaction raises :class:`BusError`."""

    real = False
    is_open = False

    def __init__(self, port: str = ""):
        self.port = port
        self.stats = BusStats()

    def open(self) -> None:
        """Nothing to open."""

    def close(self) -> None:
        """Nothing to close."""

    def _refuse(self, what: str, servo_id: int):
        raise BusError(f"dry run: no bus to {what} servo {servo_id}")

    def ping(self, servo_id: int) -> int:
        return self._refuse("ping", servo_id)

    def read_position(self, servo_id: int) -> int:
        return self._refuse("read", servo_id)

    def write_byte(self, servo_id: int, addr: int, value: int) -> int:
        return self._refuse(f"write @{addr} of", servo_id)

    def write_word(self, servo_id: int, addr: int, value: int) -> int:
        return self._refuse(f"write @{addr} of", servo_id)

    def sync_write_positions(self, ticks: dict[int, int]) -> None:
        self._refuse("sync-write", min(ticks, default=0))


def open_bus(real_hardware: bool, port: str, baud: int = 1_000_000, retries: int = 3, timeout_ms: float = 20.0):
    """The bus the ``real_hardware`` opt-in asks for (not opened yet: ``ArmDriverCore.connect``
    does): an :class:`~arm_teleop.sts_bus.StsBus` on ``port`` (an adapter or ``sim_sts_bus``'s
    pty), else a :class:`DryRunBus`."""
    if not real_hardware:
        return DryRunBus(port)
    from arm_teleop.sts_bus import StsBus  # the vendor SDK only when a bus is real

    return StsBus(port, baud, retries, timeout_ms)

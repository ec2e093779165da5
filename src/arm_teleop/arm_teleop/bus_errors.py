"""The bus's error and counters, shared by every implementation of the arm's bus interface
(:mod:`arm_teleop.bus`: the interface, the dry run and the factory; :mod:`arm_teleop.sts_bus`: the
real/simulated serial bus). A leaf module, so the factory may import its implementations without a
cycle."""

from __future__ import annotations

from dataclasses import dataclass


class BusError(RuntimeError):
    """The bus could not be used (port, or a servo that keeps not answering)."""


@dataclass
class BusStats:
    transactions: int = 0
    retries: int = 0
    timeouts: int = 0
    corrupted: int = 0
    failures: int = 0
    #: status packets of the addressed servo that did not fit the instruction (late answers to an
    #: earlier attempt), skipped: see arm_teleop.sts_bus._Handler
    stale: int = 0

"""Node processes for the embedded runner and the integration tests (no rclpy import).

Each node runs in its own process, as ``ros2 run`` / ``ros2 launch`` would start it; output goes
to a log file so it can be shown when something fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence


def ensure_local_discovery() -> None:
    """Confine DDS discovery to this machine: set ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST when it is
    unset (child processes inherit it); RuntimeError if it is set to anything else."""
    value = os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if value != "LOCALHOST":
        raise RuntimeError(f"ROS_AUTOMATIC_DISCOVERY_RANGE is {value!r}: this tool keeps DDS traffic on this "
                           "machine; unset it or set LOCALHOST (source tools/env.sh)")


def require_local_ros_env() -> None:
    """For tests: discovery confined to this machine (see :func:`ensure_local_discovery`) and a
    private ROS_DOMAIN_ID set; RuntimeError otherwise."""
    ensure_local_discovery()
    if not os.environ.get("ROS_DOMAIN_ID"):
        raise RuntimeError("ROS_DOMAIN_ID must be set to a private domain")


class NodeProcess:
    """A process started with ``args``, output to ``log_path``, stopped with SIGINT (then SIGKILL)."""

    def __init__(self, args: Sequence[str], log_path: str, env: dict[str, str] | None = None):
        ensure_local_discovery()
        self.args = list(args)
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            self.args,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **(env or {})},
            start_new_session=True,  # a terminal's Ctrl-C reaches the runner, which stops us in order
        )

    @classmethod
    def module(cls, module: str, *args: str, log_path: str, env: dict[str, str] | None = None) -> NodeProcess:
        """Start ``python -m module *args`` with this interpreter."""
        return cls([sys.executable, "-m", module, *args], log_path, env)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        """Everything the process printed so far."""
        if not self._log.closed:
            self._log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.output().splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> int:
        """SIGINT, then SIGKILL of the process group after ``timeout`` s; returns the exit code."""
        if self.alive():
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        if not self._log.closed:
            self._log.close()
        return self.proc.returncode

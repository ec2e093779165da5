"""Node processes for the embedded runner and the integration tests (no rclpy import).

Each node runs in its own process, as ``ros2 run`` / ``ros2 launch`` would start it; output goes
to a log file so it can be shown when something fails.

Supervision: every child is started in its own process group (its own session, so a terminal's
Ctrl-C reaches only the parent, which stops the children in order) *and* with
``PR_SET_PDEATHSIG`` = SIGKILL (Linux ``prctl``), so it dies with its parent whatever kills the
parent (kill -9 included). The death signal fires when the parent *thread* that forked the child
exits, not the process: children are therefore always forked by a thread that lives as long as
the process (the main thread, or else one long-lived spawner thread, see :func:`_spawn`).
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
_prctl = _libc.prctl if _libc is not None else None


def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    """preexec_fn for Popen: SIGKILL this child when the forking thread dies; exit at once if the
    parent already died between fork and prctl (the child would then be orphaned already)."""
    prctl = _prctl

    def preexec() -> None:  # runs in the child between fork and exec: syscalls only
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent_pid:
            os._exit(1)

    return preexec


_spawner: concurrent.futures.ThreadPoolExecutor | None = None
_spawner_lock = threading.Lock()


def _spawn(popen: Callable[[], subprocess.Popen]) -> subprocess.Popen:
    """Run ``popen`` on a thread that lives as long as this process: the main thread when called
    from it, else one persistent spawner thread (a worker thread that forked a child and then ended
    would fire the child's PDEATHSIG early)."""
    global _spawner
    if threading.current_thread() is threading.main_thread():
        return popen()
    with _spawner_lock:
        if _spawner is None:
            _spawner = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="spawner")
    return _spawner.submit(popen).result()


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
    """A process started with ``args``, output to ``log_path``, stopped with SIGINT (then SIGKILL).

    The process dies with this one (PR_SET_PDEATHSIG, see the module docstring) and leads its own
    process group, which :meth:`stop` kills as a whole if SIGINT is not enough.
    """

    def __init__(self, args: Sequence[str], log_path: str, env: dict[str, str] | None = None):
        ensure_local_discovery()
        self.args = list(args)
        self.log_path = log_path
        self._log = open(log_path, "wb")
        env_all = {**os.environ, **(env or {})}
        self.proc = _spawn(lambda: subprocess.Popen(
            self.args,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env_all,
            start_new_session=True,  # a terminal's Ctrl-C reaches the runner, which stops us in order
            preexec_fn=_die_with_parent(os.getpid()),
        ))

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
        try:  # whatever the process left behind in its group goes with it
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if not self._log.closed:
            self._log.close()
        return self.proc.returncode

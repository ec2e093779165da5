"""Fast DDS shared-memory files of dead processes, reclaimed (no rclpy).

Fast DDS (Jazzy's default rmw_fastrtps) keeps its shared-memory transport in ``/dev/shm``: per
participant *segments* ``fastrtps_<16 hex/alnum>`` and per listening *ports*
``fastrtps_port<N>`` (plus ``sem.fastrtps_port<N>_mutex``), each with a lock file ``<name>_el``
(or ``_sl``) that its owner holds with ``flock`` while it lives. A process killed with SIGKILL
never removes them: each kill -9 of a run left ~6 of them (~28 MB of RAM, tmpfs) that nothing
reclaimed (issue 27). A lock file nobody holds means the owner is gone: its files are removed,
the way ``fastdds shm clean`` judges them. Files of live processes (any user, any run) are
never touched.
"""

from __future__ import annotations

import fcntl
import os
import re

SHM_DIR = "/dev/shm"
_SEGMENT_LOCK = re.compile(r"^fastrtps_[0-9a-z]{16}_(el|sl)$")
_PORT_LOCK = re.compile(r"^fastrtps_port\d{1,5}_(el|sl)$")


def _held(path: str) -> bool:
    """True when some process holds a flock on ``path`` (or it cannot be checked)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return True  # gone meanwhile, or not ours to judge
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False  # we could take it: its owner is dead (the lock goes with our fd)
    except OSError:
        return True
    finally:
        os.close(fd)


def reclaim_stale(shm_dir: str = SHM_DIR) -> tuple[list[str], int]:
    """Remove the Fast DDS files in ``shm_dir`` whose owner process is gone. Returns (the removed
    file names, bytes freed); files that cannot be removed (another user's) are left."""
    try:
        names = sorted(os.listdir(shm_dir))
    except OSError:
        return [], 0
    removed: list[str] = []
    freed = 0
    for lock in names:
        port = _PORT_LOCK.match(lock)
        if not (port or _SEGMENT_LOCK.match(lock)) or _held(os.path.join(shm_dir, lock)):
            continue
        base = lock[:-3]
        for name in (base, lock) + ((f"sem.{base}_mutex",) if port else ()):
            path = os.path.join(shm_dir, name)
            try:
                size = os.lstat(path).st_size
                os.remove(path)
            except OSError:
                continue
            removed.append(name)
            freed += size
    return removed, freed

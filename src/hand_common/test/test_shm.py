"""Stale Fast DDS shared-memory files: those of dead owners go, those of live ones stay."""

from __future__ import annotations

import subprocess
import sys

from hand_common.shm import reclaim_stale


def test_only_files_of_dead_owners_are_reclaimed(tmp_path):
    dead, alive = "fastrtps_0123456789abcdef", "fastrtps_abcdef0123456789"
    for name in (dead, f"{dead}_el", alive, f"{alive}_el", "fastrtps_port7411", "fastrtps_port7411_el",
                 "sem.fastrtps_port7411_mutex", "fastrtps_port7413", "fastrtps_port7413_sl", "other_file",
                 "fastrtps_notalockfile_el"):
        (tmp_path / name).write_bytes(b"x" * 100)
    # a live owner holds its lock files (as Fast DDS does while the participant exists)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, sys, time\n"
        f"fs = [open({str(tmp_path / (alive + '_el'))!r}, 'rb'), open({str(tmp_path / 'fastrtps_port7413_sl')!r}, 'rb')]\n"
        "[fcntl.flock(f, fcntl.LOCK_EX) for f in fs]\n"
        "print('locked', flush=True)\n"
        "time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        removed, freed = reclaim_stale(str(tmp_path))
    finally:
        holder.kill()
        holder.wait()
    assert sorted(removed) == sorted([dead, f"{dead}_el", "fastrtps_port7411", "fastrtps_port7411_el",
                                      "sem.fastrtps_port7411_mutex"])
    assert freed == 500
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([alive, f"{alive}_el", "fastrtps_port7413", "fastrtps_port7413_sl", "other_file",
                           "fastrtps_notalockfile_el"])
    # the holder is dead now: its files go too
    removed, _ = reclaim_stale(str(tmp_path))
    assert sorted(removed) == sorted([alive, f"{alive}_el", "fastrtps_port7413", "fastrtps_port7413_sl"])
    assert reclaim_stale(str(tmp_path / "missing")) == ([], 0)

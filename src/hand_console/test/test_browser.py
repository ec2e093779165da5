"""The benchmark's browser controls (hand_console.browser): the animation-frame cap of a headless
chromium (how often it may render three.js) and the CPU time of one process tree (one browser's
CPU seconds, not every chromium on the machine)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from hand_console.browser import ConsoleBrowser, browser_problem, process_tree_cpu_seconds

#: Animation frames in 2 s, and whether a cancelled frame ran, in one asynchronous script.
FRAMES_JS = """
const done = arguments[arguments.length - 1];
let n = 0, cancelledRan = false;
const t0 = performance.now();
cancelAnimationFrame(requestAnimationFrame(() => { cancelledRan = true; }));
function frame(t) { n++; if (performance.now() - t0 < 2000) requestAnimationFrame(frame);
                    else done([n, performance.now() - t0, cancelledRan]); }
requestAnimationFrame(frame);
"""


def test_the_browsers_animation_frames_are_capped():
    if problem := browser_problem():
        pytest.fail(problem)
    page = ConsoleBrowser("data:text/html,<html><body>frames</body></html>", 400, 300, nice=0, max_fps=5.0)
    try:
        page.driver.get(page.url)
        n, elapsed_ms, cancelled_ran = page.driver.execute_async_script(FRAMES_JS)
        # at most one frame per 200 ms period (chromium's own rate is its display's, 60/s headless);
        # a starved browser may run fewer, never more
        assert 1 <= n <= elapsed_ms / 200.0 + 1, (n, elapsed_ms)
        assert not cancelled_ran
        assert page.cpu_seconds() > 0.0  # chromedriver and chromium's processes
    finally:
        page.close()
    with pytest.raises(ValueError, match="max_fps must be > 0"):
        ConsoleBrowser("data:,", max_fps=0.0)


def test_process_tree_cpu_seconds_counts_descendants_and_what_they_reaped():
    busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5:\n    pass\n"
    # a shell whose child burns 0.5 s of CPU and exits (reaped by the shell), then a sleeping child
    shell = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "$BUSY"; sleep 30'],
                             env={**os.environ, "BUSY": busy})
    try:
        deadline = time.monotonic() + 120
        while process_tree_cpu_seconds(shell.pid) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert process_tree_cpu_seconds(shell.pid) >= 0.5
    finally:
        shell.kill()
        shell.wait(5)
    assert process_tree_cpu_seconds(shell.pid) == 0.0  # gone: nothing

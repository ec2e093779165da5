"""bench_pipeline's console comparison from synthetic results (ground truth): fps ratios per
repetition against the ``full`` run of the same repetition, the p95 difference, CPU seconds and
each process's share of a core over the window from bring-up (page open) to the source's end."""

from __future__ import annotations

from hand_bringup.bench_pipeline import _cpu_window, console_comparison, core_share
from hand_bringup.bringup import CONSOLE, TRACKER


def run(scenario: str, rep: int, fps: float, p95: float, window_cpu: dict[str, float], window_s: float = 10.0,
        cpu: dict[str, float] | None = None) -> dict:
    return {"scenario": scenario, "repetition": rep, "error": None, "tracker_fps": fps, "frames_processed": 300,
            "latency_ms": {"p95": p95}, "load_at_start": 2.0 + rep, "cpu_seconds": cpu or {TRACKER: 9.0},
            "cpu_window": {"s": window_s, "cpu_s": window_cpu}}


def test_cpu_window_subtracts_the_start_up():
    t0, t1 = 100.0, 110.0
    w = _cpu_window([t0, {TRACKER: 2.0, CONSOLE: 3.0}, 1.5, t1, {TRACKER: 8.0, CONSOLE: 3.4, "runner": 1.0}, 2.5],
                    "browser")
    assert w == {"s": 10.0, "cpu_s": {TRACKER: 6.0, CONSOLE: 0.4, "browser": 1.0}}
    assert _cpu_window([t0, {}, None], "browser") is None  # the run failed before its source ended


def test_console_comparison_per_repetition_and_core_shares():
    results = [run("full", 1, 30.0, 40.0, {TRACKER: 6.0}), run("console", 1, 29.7, 41.0,
                                                             {TRACKER: 6.2, CONSOLE: 0.5, "browser": 2.0},
                                                             cpu={TRACKER: 9.3, CONSOLE: 2.5, "browser": 3.0}),
               run("full", 2, 20.0, 60.0, {TRACKER: 5.0}), run("console", 2, 19.0, 65.0,
                                                             {TRACKER: 5.0, CONSOLE: 0.7, "browser": 3.0},
                                                             cpu={TRACKER: 9.0, CONSOLE: 2.7, "browser": 4.0})]
    assert core_share([r for r in results if r["scenario"] == "console"], CONSOLE) == "6.0%"  # 0.5/10, 0.7/10
    (line,) = console_comparison(results)
    assert line.startswith("console/full (2 vs 2 runs")
    assert "fps ratio 0.974;" in line  # medians 24.35 / 25.0
    assert "capture→flexion p95 3.0 ms (53.0 vs 50.0)" in line
    assert "fps ratio per repetition 0.990 (load 3.0), 0.950 (load 4.0)" in line
    assert "CPU s console 2.6, browser 3.5" in line
    assert "console 6.0%, browser 25.0%, page client -, tracker 56.0% (full: 55.0%)" in line

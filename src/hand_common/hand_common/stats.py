"""Small statistics for run summaries and benchmarks (pure numpy)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def percentiles_ms(samples_s: Sequence[float]) -> dict[str, float | int | None]:
    """{n, p50, p95, max} in milliseconds of latencies given in seconds; None fields when empty.
    Non-finite samples are dropped (and not counted)."""
    a = np.asarray(samples_s, dtype=float)
    a = a[np.isfinite(a)]
    if a.size == 0:
        return {"n": 0, "p50": None, "p95": None, "max": None}
    return {
        "n": int(a.size),
        "p50": round(float(np.percentile(a, 50)) * 1e3, 2),
        "p95": round(float(np.percentile(a, 95)) * 1e3, 2),
        "max": round(float(a.max()) * 1e3, 2),
    }


def rate_hz(stamps_s: Sequence[float]) -> float | None:
    """Mean rate of events at the given times: (n - 1) / (last - first); None for < 2 events."""
    if len(stamps_s) < 2:
        return None
    span = float(max(stamps_s) - min(stamps_s))
    return round((len(stamps_s) - 1) / span, 2) if span > 0 else None

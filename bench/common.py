"""Small helpers the benchmarks share: percentiles and a printed table."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    k = (len(ordered) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary_ms(values: Sequence[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"median {statistics.median(ms):7.2f} ms   p95 {percentile(ms, 95):7.2f} ms   "
        f"max {max(ms):7.2f} ms   (n={len(ms)})"
    )


def line(label: str, value: str) -> None:
    print(f"{label:<58} {value}", flush=True)

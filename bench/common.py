"""Small helpers the benchmarks share: percentiles, idle readings and a printed table."""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from collections.abc import Sequence

import psutil


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


def median_p95_ms(values: Sequence[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"median {statistics.median(ms):7.1f} ms   p95 {percentile(ms, 95):7.1f} ms   (n={len(ms)})"


async def idle_reading(seconds: float) -> tuple[float, float, float, float]:
    """Over `seconds` of the loop left alone: CPU by psutil (10 ms ticks) and by `time.process_time()` (all
    threads, finer), RSS growth, and RSS at the end, in MB."""
    gc.collect()
    process = psutil.Process()
    before_cpu, before_fine = sum(process.cpu_times()[:2]), time.process_time()
    before_rss = process.memory_info().rss
    await asyncio.sleep(seconds)
    rss = process.memory_info().rss
    cpu, fine = sum(process.cpu_times()[:2]) - before_cpu, time.process_time() - before_fine
    return cpu, fine, (rss - before_rss) / 2**20, rss / 2**20


def idle_text(cpu: float, fine: float, grew: float, rss: float) -> str:
    return f"CPU {cpu * 1000:4.0f} ms ({fine * 1000:5.1f})   RSS {grew:+5.1f} MB -> {rss:4.0f} MB"


def figure_table(rows: Sequence[tuple[str, str, str]], subject: str) -> None:
    """The figures side by side with their baselines: (figure, `subject`'s value, baseline)."""
    heads = ("figure", subject, "baseline (same run)")
    widths = [max([len(heads[i])] + [len(r[i]) for r in rows]) for i in range(3)]
    print(flush=True)
    print(" | ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)))
    print("-+-".join("-" * w for w in widths))
    for row in rows:
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)), flush=True)

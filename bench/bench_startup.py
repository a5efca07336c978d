"""Cold start of the desktop app (issue 5): process start -> window shown, -> tray icon up, -> host
built, -> host started, and RSS then. Run: .venv/bin/python -m bench.bench_startup [--runs N]

Each run is a fresh process on a fresh data dir, offscreen, with ERRAND_STARTUP_PROBE=1 (the app prints its
timings and quits once the host is up). Under offscreen there is no tray; "tray" is when the tray set-up
(icon, menu, badge, or the no-tray note) is done, which is what a real tray shows at once.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench.common import line

ROOT = Path(__file__).resolve().parents[1]


def one_start(
    data_dir: Path,
    command: Sequence[str] = (sys.executable, "-m", "app.cli"),
    env: Mapping[str, str] = os.environ,
) -> dict[str, float]:
    """One start of `command` (the venv's by default) with the start-up probe: its printed timings."""
    out = subprocess.run(
        [*command, "--data-dir", str(data_dir)],
        cwd=ROOT,
        env=dict(env, ERRAND_STARTUP_PROBE="1", QT_QPA_PLATFORM="offscreen"),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    return {k: float(v) for k, v in (row.split() for row in out.splitlines() if row.strip())}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_startup")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [one_start(Path(tmp) / f"d{i}") for i in range(args.runs)]
    for key, label in (
        ("window-shown", "process start -> window shown"),
        ("tray-shown", "process start -> tray icon set up"),
        ("host-built", "process start -> host built (its modules imported after the window)"),
        ("host-started", "process start -> host started"),
    ):
        values = [r[key] for r in runs]
        line(label, f"median {statistics.median(values):.2f} s   max {max(values):.2f} s   (n={len(values)})")
    line("RSS once started", f"median {statistics.median(r['rss-mb'] for r in runs):.0f} MB")


if __name__ == "__main__":
    main()

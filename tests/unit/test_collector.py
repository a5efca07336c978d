"""The collector sleeps while the process starts and wakes with start-up's objects frozen (app/collector.py):
if it never woke, a long-running host would never free a reference cycle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_collector_sleeps_through_start_and_wakes_with_start_up_frozen() -> None:
    code = (
        "import gc\n"
        "from app.collector import pause_for_start, resume_after_start\n"
        "pause_for_start()\n"
        "asleep = not gc.isenabled()\n"
        "import core.host\n"
        "resume_after_start()\n"
        "print(asleep, gc.isenabled(), gc.get_freeze_count() > 100_000)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True", "True"]

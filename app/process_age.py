"""How long this process has existed, interpreter start-up included (the start-up probe's clock).

`psutil.Process().create_time()` is built on the boot time, which Linux gives in whole seconds, so an age
taken from it against `time.time()` can be off by up to a second. The kernel keeps the process start in
clock ticks since boot, on the same clock as CLOCK_BOOTTIME: their difference is right to a tick (10 ms).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

_STAT = Path("/proc/self/stat")


def process_age() -> float:
    """Seconds since this process was created."""
    try:
        # Field 22 (starttime); the name in field 2 may hold spaces and parentheses, so split after it.
        after_name = _STAT.read_text().rsplit(")", 1)[1].split()
        started = int(after_name[19]) / os.sysconf("SC_CLK_TCK")
        return time.clock_gettime(time.CLOCK_BOOTTIME) - started
    except (OSError, IndexError, ValueError, AttributeError):
        import psutil  # macOS and Windows: no /proc, and their create times are not whole-second based

        return time.time() - float(psutil.Process().create_time())

"""The garbage collector around start-up and exit (docs/architecture.md#start-up).

Start-up imports and builds hundreds of thousands of long-lived objects (modules, classes, the ORM's
mappings); each full collection meanwhile walks them all again, and three or four of those took 150-250 ms
of every start on a 2-core machine (`bench/bench_speed.py`). So the collector sleeps while the process
starts, and once the host is up everything alive is frozen (kept out of every later collection, as it
lives as long as the process) and the collector wakes: later collections walk only what came after.
"""

from __future__ import annotations

import gc


def pause_for_start() -> None:
    gc.disable()


def resume_after_start() -> None:
    """The host has started: what exists now lives as long as the process."""
    gc.freeze()
    gc.enable()


def freeze_for_exit() -> None:
    """The host has stopped and the process is about to exit: freeze what is left, so the interpreter's last
    full collection has nothing to walk. With our import graph that collection alone took about 0.3 s of
    every exit (`bench/bench_exit.py`); nothing it would free matters to a process that is ending."""
    gc.freeze()

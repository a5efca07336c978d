"""How the event loop learns that a shell command it started has exited.

Python 3.11 waits for every subprocess in a thread of its own (asyncio's ThreadedChildWatcher): a thread
started and joined per shell call, and a hop back to the loop, about 0.3 ms of every step that runs a
command (`bench/bench_speed.py`). A pidfd (Linux 5.3+) makes the exit a file descriptor the loop watches
with the rest. Python 3.12 does this by itself, so there this does nothing.
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings


def watch_children_with_pidfd(loop: asyncio.AbstractEventLoop) -> bool:
    """On Python 3.11 with pidfds, wait for `loop`'s subprocesses through pidfds; True when it did.
    Call it in the main thread before the loop starts its first subprocess."""
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # a kernel older than 5.3, or a sandbox that forbids the call
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        watcher = asyncio.PidfdChildWatcher()
        watcher.attach_loop(loop)
        asyncio.set_child_watcher(watcher)
    return True

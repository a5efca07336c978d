"""Watching child processes in tests without polling: pidfds for exits, FIFOs for "it is running"."""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
from pathlib import Path


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    """True once `pid` has exited (a zombie counts). Waits on a pidfd instead of polling."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


async def read_fifo(path: Path, timeout: float = 20.0) -> str:
    """What a child writes into the FIFO: the event that says it is running."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(path.read_text), timeout)
    except TimeoutError:
        # Unblock the reader thread so the test can fail instead of hanging.
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        raise

"""Shell commands are waited for by the loop itself, not by a thread per command (app.child_watcher)."""

from __future__ import annotations

import asyncio
import signal
import threading
import warnings
from pathlib import Path

from app.child_watcher import watch_children_with_pidfd
from core.agent.jobs import ShellProcess


def _waiter_threads() -> list[str]:
    # asyncio's ThreadedChildWatcher names its threads "asyncio-waitpid-<n>" (3.11).
    return [t.name for t in threading.enumerate() if "waitpid-" in t.name]


def test_a_running_command_has_no_waiter_thread_and_its_exit_still_arrives(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        previous = asyncio.get_child_watcher()
    loop = asyncio.new_event_loop()
    try:
        watch_children_with_pidfd(loop)

        async def run() -> tuple[list[str], int, int]:
            sleeping = await ShellProcess.start(["sleep", "30"], tmp_path, lambda _b: None)
            waiters = _waiter_threads()
            sleeping.kill_now()
            killed = await asyncio.wait_for(sleeping.wait(), 10)
            await sleeping.finish()
            quick = await ShellProcess.start(["bash", "-c", "exit 3"], tmp_path, lambda _b: None)
            code = await asyncio.wait_for(quick.wait(), 10)
            await quick.finish()
            return waiters, killed, code

        waiters, killed, code = loop.run_until_complete(run())
    finally:
        loop.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            asyncio.set_child_watcher(previous)
    assert waiters == []
    assert (killed, code) == (-signal.SIGKILL, 3)

"""Background jobs with real subprocesses: events, the end hook, output capture and process-group kills."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from core.agent.events import JobEnded, JobStarted
from core.agent.jobs import TAIL_BYTES, Job, JobManager
from core.agent.sandbox import Permission, Preset, ShellSandbox
from core.clock import SystemClock
from tests.processes import read_fifo, wait_gone


@dataclass
class Harness:
    manager: JobManager
    shell: ShellSandbox
    ws: Path
    events: list[JobStarted | JobEnded] = field(default_factory=list)
    ended: asyncio.Queue[Job] = field(default_factory=asyncio.Queue)

    async def next_end(self) -> Job:
        return await asyncio.wait_for(self.ended.get(), 20)


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    ws = tmp_path / "ws"
    ws.mkdir()
    shell = ShellSandbox(Permission(Preset.WORKSPACE_WRITE, ws), tmp_path / "home", bwrap=None)
    events: list[JobStarted | JobEnded] = []
    harness = Harness(JobManager(SystemClock(), events.append, log_dir=tmp_path / "logs"), shell, ws, events)
    harness.manager.on_job_end = harness.ended.put_nowait
    yield harness
    await harness.manager.shutdown()


async def test_job_runs_emits_events_and_calls_the_end_hook(h: Harness) -> None:
    job = await h.manager.start("chat-1", "echo hello; echo oops >&2", h.ws, h.shell)
    assert job.id == "j1"
    assert job.running
    assert h.events == [JobStarted("chat-1", "j1", "echo hello; echo oops >&2")]
    ended = await h.next_end()
    assert ended is job
    assert h.events[-1] == JobEnded("chat-1", "j1", "echo hello; echo oops >&2", "completed", 0)
    assert (job.status, job.exit_code) == ("completed", 0)
    assert job.output() == "hello\noops\n"
    assert (
        job.notice()
        == "[background job j1 finished: completed, exit code 0] echo hello; echo oops >&2\nhello\noops"
    )
    assert job.log_path is not None
    assert job.log_path.read_text() == "hello\noops\n"


async def test_failed_job_reports_its_exit_code(h: Harness) -> None:
    await h.manager.start("chat-1", "exit 3", h.ws, h.shell)
    job = await h.next_end()
    assert (job.status, job.exit_code) == ("failed", 3)
    assert h.events[-1] == JobEnded("chat-1", "j1", "exit 3", "failed", 3)
    assert job.notice() == "[background job j1 finished: failed, exit code 3] exit 3\n(no output)"


async def test_ids_count_up_and_lists_are_per_session(h: Harness) -> None:
    a = await h.manager.start("chat-1", "exec sleep 300", h.ws, h.shell)
    b = await h.manager.start("task-9", "exec sleep 300", h.ws, h.shell)
    c = await h.manager.start("chat-1", "true", h.ws, h.shell)
    assert [a.id, b.id, c.id] == ["j1", "j2", "j3"]
    await h.next_end()
    assert h.manager.list("chat-1") == [a, c]
    assert h.manager.running("chat-1") == [a]
    assert h.manager.get("j2") is b
    assert h.manager.get("j7") is None


async def test_kill_stops_the_whole_group_even_children_ignoring_sigterm(h: Harness) -> None:
    pipe = h.ws / "pid.fifo"
    os.mkfifo(pipe)
    job = await h.manager.start("chat-1", f"trap '' TERM; sleep 300 & echo $! > {pipe}; wait", h.ws, h.shell)
    pid = int(await read_fifo(pipe))
    await h.manager.kill(job.id)
    assert job.status == "killed"
    assert h.events[-1] == JobEnded("chat-1", "j1", job.command, "killed", job.exit_code)
    assert (await h.next_end()) is job
    assert job.notice().startswith("[background job j1 finished: killed]")
    assert wait_gone(pid)


async def test_children_left_behind_by_a_finished_job_are_killed(h: Harness) -> None:
    job = await h.manager.start("chat-1", "sleep 300 & echo $!", h.ws, h.shell)
    await h.next_end()
    assert job.status == "completed"
    assert wait_gone(int(job.output()))


async def test_wait_returns_on_end_or_timeout_without_killing(h: Harness) -> None:
    quick = await h.manager.start("chat-1", "echo quick", h.ws, h.shell)
    assert (await h.manager.wait(quick.id, 30)).status == "completed"
    slow = await h.manager.start("chat-1", "exec sleep 300", h.ws, h.shell)
    assert (await h.manager.wait(slow.id, 0.01)).running
    assert slow.running


async def test_kill_session_and_shutdown(h: Harness) -> None:
    mine = [await h.manager.start("chat-1", "exec sleep 300", h.ws, h.shell) for _ in range(2)]
    other = await h.manager.start("chat-2", "exec sleep 300", h.ws, h.shell)
    await h.manager.kill_session("chat-1")
    assert [job.status for job in mine] == ["killed", "killed"]
    assert other.running
    await h.manager.shutdown()
    assert other.status == "killed"
    assert h.manager.running("chat-2") == []


async def test_output_tail_is_bounded(h: Harness) -> None:
    job = await h.manager.start("chat-1", "head -c 200000 /dev/zero | tr '\\0' a; echo END", h.ws, h.shell)
    await h.next_end()
    out = job.output()
    assert len(out) == TAIL_BYTES
    assert out.endswith("aaaaEND\n")
    assert job.notice().split("\n", 1)[1] == "a" * 1996 + "END"


async def test_a_failing_end_hook_does_not_break_the_manager(h: Harness) -> None:
    def broken(job: Job) -> None:
        raise RuntimeError("hook failed")

    h.manager.on_job_end = broken
    job = await h.manager.start("chat-1", "true", h.ws, h.shell)
    assert (await h.manager.wait(job.id, 30)).status == "completed"
    assert isinstance(h.events[-1], JobEnded)

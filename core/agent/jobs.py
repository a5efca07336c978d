"""Background jobs: shell commands a session started with `run_in_background`, and process-group control.

Every command runs as the leader of its own process group, so a kill reaches everything it started; when
the leader ends, stragglers left in the group are killed too, so nothing is ever orphaned.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import os
import re
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Literal

from core.agent.events import JobEnded, JobStarted
from core.agent.sandbox import ShellSandbox
from core.clock import Clock

log = logging.getLogger(__name__)

JobStatus = Literal["running", "completed", "failed", "killed"]
KILL_GRACE_S = 2.0
# After the leader is gone and the group killed, the pipe closes at once unless a process left the group.
DRAIN_TIMEOUT_S = 2.0
TAIL_BYTES = 64 * 1024
NOTICE_OUTPUT_CHARS = 2000


# -- process groups --------------------------------------------------------------------------------------


class _ShellProtocol(asyncio.SubprocessProtocol):
    def __init__(self, on_output: Callable[[bytes], None]) -> None:
        loop = asyncio.get_running_loop()
        self.on_output = on_output
        self.exited: asyncio.Future[int] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()
        self.transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes | bytearray) -> None:
        self.on_output(bytes(data))

    def process_exited(self) -> None:
        assert self.transport is not None
        code = self.transport.get_returncode()
        if not self.exited.done():
            self.exited.set_result(code if code is not None else -1)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


class ShellProcess:
    """A command running as the leader of its own process group, its output fed to a callback.

    Built on a subprocess protocol rather than `Process.wait()`: on Python 3.11 that waits for the
    output pipe to close too, which never happens while a grandchild still holds it.
    """

    def __init__(self, transport: asyncio.SubprocessTransport, protocol: _ShellProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self.pid = transport.get_pid()

    @classmethod
    async def start(cls, argv: list[str], cwd: Path, on_output: Callable[[bytes], None]) -> ShellProcess:
        """Start `argv` as a new process group with stdout+stderr on one pipe and no stdin.

        Cancelling a spawn half-way makes Python 3.11 kill only the leader and then wait until the output
        pipe closes, which a grandchild can hold open for ever. So the spawn itself is never interrupted:
        a cancel returns at once and the new process group is killed as soon as it exists.
        """
        spawn = asyncio.ensure_future(cls._spawn(argv, cwd, on_output))
        try:
            return await asyncio.shield(spawn)
        except asyncio.CancelledError:
            spawn.add_done_callback(_kill_unwanted)
            raise

    @classmethod
    async def _spawn(cls, argv: list[str], cwd: Path, on_output: Callable[[bytes], None]) -> ShellProcess:
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            lambda: _ShellProtocol(on_output),
            *argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return cls(transport, protocol)

    @property
    def exited(self) -> asyncio.Future[int]:
        """Resolves to the leader's exit code (negative: killed by that signal)."""
        return self._protocol.exited

    async def wait(self) -> int:
        return await asyncio.shield(self._protocol.exited)

    def signal_group(self, sig: int) -> None:
        """Send `sig` to the whole process group. A group that is already empty is fine."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    async def terminate(self, grace_s: float = KILL_GRACE_S) -> None:
        """SIGTERM the group, SIGKILL it if the leader outlives the grace, and always SIGKILL stragglers."""
        self.signal_group(signal.SIGTERM)
        # Real time on purpose: a kill grace must not depend on a fake clock being advanced.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.wait(), grace_s)
        self.signal_group(signal.SIGKILL)
        await self.wait()

    async def finish(self) -> None:
        """After the leader exited: kill what it left in its group, collect the output, release the pipe."""
        self.signal_group(signal.SIGKILL)
        try:
            # The pipe closes as soon as the group is dead, unless a process escaped the group (setsid).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._protocol.closed), DRAIN_TIMEOUT_S)
        finally:
            # Even when cancelled (the loop shutting down): a transport left open is closed later by
            # the garbage collector, on a loop that is gone.
            self._transport.close()

    def kill_now(self) -> None:
        """SIGKILL the group without waiting; pass the process to `JobManager.reap` to collect it."""
        self.signal_group(signal.SIGKILL)


_unwanted: set[asyncio.Task[None]] = set()


def _kill_unwanted(spawn: asyncio.Future[ShellProcess]) -> None:
    """A spawn whose caller was cancelled: kill the group and collect it in the background."""
    if spawn.cancelled() or spawn.exception() is not None:
        return
    process = spawn.result()
    process.kill_now()
    task = asyncio.get_running_loop().create_task(process.finish())
    _unwanted.add(task)  # keep a reference until it is done
    task.add_done_callback(_unwanted.discard)


# -- jobs ------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Job:
    id: str
    session_id: str
    command: str
    cwd: Path
    started_at: float
    log_path: Path | None = None
    status: JobStatus = "running"
    exit_code: int | None = None
    ended_at: float | None = None
    _tail: bytearray = field(default_factory=bytearray, repr=False)
    _ended: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    _kill_requested: bool = field(default=False, repr=False)
    _process: ShellProcess | None = field(default=None, repr=False)

    @property
    def running(self) -> bool:
        return self.status == "running"

    def output(self) -> str:
        """The last 64 KB of combined output."""
        return self._tail.decode(errors="replace")

    def outcome(self) -> str:
        """`completed, exit code 0`, `failed, exit code 2`, `killed`, or `running`."""
        if self.status in ("running", "killed") or self.exit_code is None:
            return self.status
        if self.exit_code < 0:
            return f"{self.status}, killed by signal {-self.exit_code}"
        return f"{self.status}, exit code {self.exit_code}"

    def notice(self) -> str:
        """What the owning session is told when the job ends."""
        tail = self.output()[-NOTICE_OUTPUT_CHARS:].rstrip("\n") or "(no output)"
        return f"[background job {self.id} finished: {self.outcome()}] {self.command}\n{tail}"

    def _append(self, chunk: bytes) -> None:
        self._tail += chunk
        if len(self._tail) > TAIL_BYTES:
            del self._tail[: len(self._tail) - TAIL_BYTES]


class JobManager:
    """Owns every background job of the runtime; job ids are `j1`, `j2`, ... per manager."""

    def __init__(
        self,
        clock: Clock,
        on_event: Callable[[JobStarted | JobEnded], None],
        log_dir: Path | None = None,
    ) -> None:
        self._clock = clock
        self._on_event = on_event
        self._log_dir = log_dir
        self._jobs: dict[str, Job] = {}
        self._watchers: set[asyncio.Task[None]] = set()
        self._next = 1
        # Set by the runtime to wake the owning session with `job.notice()`.
        self.on_job_end: Callable[[Job], None] | None = None

    async def start(self, session_id: str, command: str, cwd: Path, sandbox: ShellSandbox) -> Job:
        job_id = f"j{self._next}"
        self._next += 1
        log_file: IO[bytes] | None = None
        log_path: Path | None = None
        if self._log_dir is not None:
            safe_session = re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)
            log_path = self._log_dir / f"{safe_session}-{job_id}-{int(self._clock.time() * 1000)}.log"
            log_file = await asyncio.to_thread(_open_log, log_path)
        job = Job(job_id, session_id, command, cwd, self._clock.time(), log_path)

        def on_output(chunk: bytes) -> None:
            job._append(chunk)
            if log_file is not None:
                # Buffered appends land in the page cache; cheap enough for the loop thread.
                log_file.write(chunk)

        try:
            process = await ShellProcess.start(sandbox.wrap(command, cwd), cwd, on_output)
        except BaseException:
            if log_file is not None:
                log_file.close()
            raise
        job._process = process
        self._jobs[job_id] = job
        self._emit(JobStarted(session_id, job_id, command))
        self._track(asyncio.get_running_loop().create_task(self._watch(job, process, log_file)))
        return job

    def _track(self, task: asyncio.Task[None]) -> None:
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def list(self, session_id: str) -> builtins.list[Job]:
        return [job for job in self._jobs.values() if job.session_id == session_id]

    def running(self, session_id: str) -> builtins.list[Job]:
        return [job for job in self.list(session_id) if job.running]

    async def wait(self, job_id: str, timeout_s: float) -> Job:
        """Wait until the job ends or `timeout_s` passes on the clock; never kills it."""
        job = self._require(job_id)
        if job.running:
            ended = asyncio.ensure_future(job._ended.wait())
            timer = asyncio.ensure_future(self._clock.sleep(timeout_s))
            try:
                await asyncio.wait({ended, timer}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ended.cancel()
                timer.cancel()
        return job

    async def kill(self, job_id: str) -> Job:
        job = self._require(job_id)
        process = job._process
        if job.running and process is not None:
            job._kill_requested = True
            await process.terminate()
            await job._ended.wait()
        return job

    def reap(self, process: ShellProcess) -> None:
        """Collect a killed foreground command in the background (a cancelled turn must not wait for
        it); `shutdown()` waits for it."""
        self._track(asyncio.get_running_loop().create_task(_reap(process)))

    async def kill_session(self, session_id: str) -> None:
        await asyncio.gather(*(self.kill(job.id) for job in self.running(session_id)))

    async def shutdown(self) -> None:
        await asyncio.gather(*(self.kill(job.id) for job in self._jobs.values() if job.running))
        pending = [*self._watchers, *_unwanted]  # including spawns whose caller was cancelled
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    def _require(self, job_id: str) -> Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise KeyError(f"unknown job {job_id!r}")
        return job

    async def _watch(self, job: Job, process: ShellProcess, log_file: IO[bytes] | None) -> None:
        try:
            code = await process.wait()
            await process.finish()
        finally:
            if log_file is not None:
                await asyncio.to_thread(log_file.close)
        job.exit_code = code
        job.ended_at = self._clock.time()
        job.status = "killed" if job._kill_requested else ("completed" if code == 0 else "failed")
        job._process = None
        job._ended.set()
        self._emit(JobEnded(job.session_id, job.id, job.command, job.status, code))
        if self.on_job_end is not None:
            try:
                self.on_job_end(job)
            except Exception:
                log.exception("on_job_end failed for job %s", job.id)

    def _emit(self, event: JobStarted | JobEnded) -> None:
        try:
            self._on_event(event)
        except Exception:
            log.exception("job event listener failed for %r", event)


def _open_log(path: Path) -> IO[bytes]:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("ab")


async def _reap(process: ShellProcess) -> None:
    try:
        await process.wait()
    finally:
        await asyncio.shield(process.finish())

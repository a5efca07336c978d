"""The `bash` tool: run a shell command in the session's working directory, under the shell sandbox."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from pydantic import BaseModel, Field

from core.agent.jobs import ShellProcess
from core.agent.tool_api import ToolContext, ToolEffects, ToolError, ToolSpec

# Head and tail of the output kept for the model; the middle of a long output rarely matters.
HEAD_BYTES = 15_000
TAIL_BYTES = 15_000
MAX_TIMEOUT_S = 600.0


class BashArgs(BaseModel):
    command: str = Field(description="The command line, run with `bash -c` in the working directory.")
    timeout_s: float = Field(
        default=120.0,
        gt=0,
        le=MAX_TIMEOUT_S,
        description="Seconds to wait before the command and its child processes are killed (max 600).",
    )
    run_in_background: bool = Field(
        default=False,
        description=(
            "Start the command as a background job and return at once. Use it for long-running work; "
            "you are told when the job finishes."
        ),
    )


class OutputBuffer:
    """Keeps the first and last bytes of a stream and counts what falls in between."""

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES) -> None:
        self._head_max = head
        self._tail_max = tail
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def append(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_max - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        self._tail += chunk
        if len(self._tail) > self._tail_max:
            del self._tail[: len(self._tail) - self._tail_max]

    def text(self) -> str:
        cut = self.total - len(self._head) - len(self._tail)
        head = self._head.decode(errors="replace")
        tail = self._tail.decode(errors="replace")
        if cut <= 0:
            return head + tail
        return f"{head}\n[... {cut} bytes of output cut ...]\n{tail}"


def _exit_line(code: int) -> str:
    return f"exit code {code}" + (f" (killed by signal {-code})" if code < 0 else "")


async def run_foreground(ctx: ToolContext, command: str, timeout_s: float) -> str:
    out = OutputBuffer()
    try:
        process = await ShellProcess.start(ctx.shell.wrap(command, ctx.cwd), ctx.cwd, out.append)
    except OSError as exc:
        raise ToolError(f"Could not start the command in {ctx.cwd}: {exc}") from exc
    timer = asyncio.get_running_loop().create_task(ctx.clock.sleep(timeout_s))
    try:
        either: list[asyncio.Future[Any]] = [process.exited, timer]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        timer.cancel()
        if process.exited.done():
            code = process.exited.result()
            # Anything the command left running in its group would be orphaned: finish() kills it.
            await process.finish()
            return f"{_exit_line(code)}\n{out.text() or '(no output)'}"
        await process.terminate()
        await process.finish()
    except asyncio.CancelledError:
        # A cancelled turn must stop within 100 ms: kill outright and let the reaping happen later.
        timer.cancel()
        process.kill_now()
        ctx.jobs.reap(process)
        raise
    partial = out.text()
    raise ToolError(
        f"Command timed out after {timeout_s:g}s and was killed (with its child processes).\n"
        + (f"Output before it was killed:\n{partial}" if partial else "It printed nothing.")
    )


# `rm -r`, `rm -rf`, `rm -fR`, `rm --recursive`: deleting a tree asks a person first
# (docs/permissions.md#approvals).
RECURSIVE_DELETE = re.compile(r"(^|[;&|(]|\s)rm\s+(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\b")


async def run_bash(ctx: ToolContext, args: BashArgs) -> str:
    if not args.command.strip():
        raise ToolError("The command is empty.")
    if RECURSIVE_DELETE.search(args.command) and ctx.approvals is not None:
        approved = await ctx.approvals.request(ctx.session_id, "recursive delete", args.command)
        if not approved:
            raise ToolError("Refused: the user did not approve this recursive delete; do not work around it.")
    if args.run_in_background:
        try:
            job = await ctx.jobs.start(ctx.session_id, args.command, ctx.cwd, ctx.shell)
        except OSError as exc:
            raise ToolError(f"Could not start the background job in {ctx.cwd}: {exc}") from exc
        return (
            f"Started background job {job.id}. You will be told when it finishes; "
            "use the jobs tool to check it."
        )
    return await run_foreground(ctx, args.command, args.timeout_s)


def bash_tool() -> ToolSpec:
    return ToolSpec(
        name="bash",
        description=(
            "Run a shell command with bash in your working directory and return its exit code and combined "
            "stdout/stderr (long output is cut in the middle). The command has no input (stdin is empty). "
            "It is killed with all its child processes after timeout_s seconds (default 120, max 600); "
            "processes it leaves running when it exits are killed too. For servers, watchers or work that "
            "takes longer, set run_in_background=true and check it with the jobs tool."
        ),
        args_model=BashArgs,
        handler=run_bash,
        effects=lambda args: ToolEffects(command=args.command),
    )

"""The command check the host runs itself (docs/goals.md#checks): the command, in the task folder, under
the task's shell sandbox and its guard, within its time limit; it passes on exit code 0.

The verdict quotes the end of what the command printed, so the next round is told why it failed.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from core.agent.jobs import ShellProcess
from core.agent.sandbox import PathGuard, ShellSandbox
from core.agent.tool_api import ToolEffects
from core.agent.tools.bash import OutputBuffer
from core.clock import Clock
from core.goals.acceptance import CommandCheck
from core.goals.file_checks import Verdict
from core.guard.guard import GuardedCall, ToolGuard

QUOTED_TAIL = 1500  # characters of output a failed verdict quotes


def _tail(out: OutputBuffer) -> str:
    text = out.text().strip()
    if not text:
        return "it printed nothing"
    if len(text) > QUOTED_TAIL:
        text = "…" + text[-QUOTED_TAIL:]
    return f"its output ended with:\n{text}"


async def run_command_check(
    check: CommandCheck,
    folder: Path,
    shell: ShellSandbox,
    clock: Clock,
    *,
    guard: ToolGuard | None = None,
    paths: PathGuard | None = None,
) -> Verdict:
    shown = f"`{check.command}`"
    if guard is not None and paths is not None:
        verdict = guard.check(
            GuardedCall("acceptance check", ToolEffects(command=check.command), folder, paths)
        )
        if verdict.decision == "deny":
            return Verdict(False, "command", f"{shown} was not run: rule {verdict.rule} — {verdict.reason}")
    out = OutputBuffer(head=2000, tail=QUOTED_TAIL)
    try:
        process = await ShellProcess.start(shell.wrap(check.command, folder), folder, out.append)
    except OSError as exc:
        return Verdict(False, "command", f"{shown} could not start in the task folder: {exc}")
    timer = asyncio.get_running_loop().create_task(clock.sleep(check.timeout_s))
    try:
        either: list[asyncio.Future[Any]] = [process.exited, timer]
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not process.exited.done():
            await process.terminate()
            await process.finish()
            return Verdict(
                False,
                "command",
                f"{shown} did not finish within {check.timeout_s} s and was stopped; {_tail(out)}",
            )
        code = process.exited.result()
        await process.finish()
    except asyncio.CancelledError:
        process.kill_now()
        raise
    finally:
        timer.cancel()
    if code == 0:
        return Verdict(True, "command", f"{shown} exited 0")
    how = f"was killed by signal {-code}" if code < 0 else f"exited {code}"
    return Verdict(False, "command", f"{shown} {how}; {_tail(out)}")

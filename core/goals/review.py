"""One round's checks (docs/goals.md#rounds): every criterion of the task gets its verdict, from the host's
own check where it has one (command, file, contains) and from the judge for the rest, in one model turn.

The judge is asked again once when its answer cannot be read; a second unreadable answer fails those
criteria with the reason, so a round never passes on an answer nobody could read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.agent.sandbox import PathGuard, ShellSandbox
from core.clock import Clock
from core.goals.acceptance import CommandCheck, Criterion
from core.goals.command_checks import run_command_check
from core.goals.file_checks import Verdict, run_file_check
from core.goals.judge import JUDGE_SECTION, JudgementError, gather_evidence, judge_prompt, parse_judgement
from core.guard.guard import ToolGuard
from core.tasks.report import Report

# (instructions, prompt) -> the model's answer text. The caller counts the turn's cost against the task.
AskJudge = Callable[[str, str], Awaitable[str]]

RETRY_NOTE = "\n\nYour previous answer could not be used: {error}. Answer again with the JSON object only."


@dataclass(frozen=True, slots=True)
class CheckPlace:
    """Where a task's host checks run: its folder, its shell sandbox and its guard."""

    folder: Path
    shell: ShellSandbox
    guard: ToolGuard | None = None
    paths: PathGuard | None = None


async def review_round(
    criteria: Sequence[Criterion],
    report: Report,
    place: CheckPlace,
    clock: Clock,
    *,
    title: str,
    ask: AskJudge,
) -> tuple[Verdict, ...]:
    """Each criterion's verdict, in their order."""
    verdicts: list[Verdict | None] = []
    for criterion in criteria:
        check = criterion.check
        if check is None:
            verdicts.append(None)
        elif isinstance(check, CommandCheck):
            verdicts.append(
                await run_command_check(
                    check, place.folder, place.shell, clock, guard=place.guard, paths=place.paths
                )
            )
        else:
            verdicts.append(await asyncio.to_thread(run_file_check, place.folder, check))
    judged = [i for i, v in enumerate(verdicts) if v is None]
    if judged:
        answers = await _judge([criteria[i].text for i in judged], report, place.folder, title, ask)
        for i, verdict in zip(judged, answers, strict=True):
            verdicts[i] = verdict
    return tuple(v for v in verdicts if v is not None)


async def _judge(
    texts: list[str], report: Report, folder: Path, title: str, ask: AskJudge
) -> tuple[Verdict, ...]:
    evidence = await asyncio.to_thread(gather_evidence, report, folder)
    instructions = JUDGE_SECTION.format(title=title)
    prompt = judge_prompt(texts, evidence)
    error = ""
    for attempt in range(2):
        answer = await ask(instructions, prompt + (RETRY_NOTE.format(error=error) if attempt else ""))
        try:
            return parse_judgement(answer, len(texts), evidence)
        except JudgementError as exc:
            error = str(exc)
    unread = Verdict(False, "model", f"the judge's answer could not be read twice ({error})")
    return tuple(unread for _ in texts)

"""Model-facing text of a planned task (English, per DESIGN.md): the planner's turn, each subtask's brief,
and the aggregator's turn (docs/plans.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.plans.plan import MAX_SUBTASKS, Subtask

PLANNER_SECTION = """You are planning a background task for the user: {title}.
Split the goal into subtasks that other agents will do, each in its own folder with the usual tools (shell,
files, web). Make a subtask for each part that can be delivered on its own; say in `dependsOn` which
subtasks must finish first (only when a part really needs another's result). Subtasks without dependencies
run at the same time, so do not chain them without reason. Use as few subtasks as the goal needs, at most
{max}. Each brief says exactly what to do and deliver, on its own: the agent doing it sees only its brief
and the results of the subtasks it depends on.

Answer with one JSON object and nothing else:
{{"subtasks": [{{"id": "prices", "title": "Collect prices", "brief": "...", "deliverables": ["prices.csv"]}},
{{"id": "report", "title": "Write the report", "brief": "...", "dependsOn": ["prices"]}}]}}"""

MERGER_SECTION = """You are merging the results of a background task for the user: {title}.
Its parts were done separately; write the one result the user receives. Use only what the parts reported.
If a part failed or did not finish, say so plainly.

Answer with one JSON object and nothing else:
{{"message": "<at most 300 characters, in the user's language: the result, and where the files are>",
"summary": "<what was done and found, for the task's record>"}}"""

RETRY_NOTE = "\n\nYour previous answer could not be used: {error}. Answer again with the JSON object only."


@dataclass(frozen=True, slots=True)
class PartResult:
    """What a finished (or unfinished) subtask reported, for the parts after it and for the merge."""

    title: str
    outcome: str  # done, failed, stopped, not run, ...
    message: str
    summary: str
    folder: str
    files: tuple[str, ...] = ()


def planner_prompt(words: str, brief: str, earlier: Sequence[PartResult] = (), note: str = "") -> str:
    parts = [f"The user asked:\n{words.strip()}"]
    if brief.strip() and brief.strip() != words.strip():
        parts.append(f"Brief from the chat assistant:\n{brief.strip()}")
    if earlier:
        parts.append("Subtasks already done for this task:\n" + _results(earlier))
    if note:
        parts.append(f"What is still needed (the new subtasks are for this):\n{note.strip()}")
    return "\n\n".join(parts)


def planner_instructions(title: str) -> str:
    return PLANNER_SECTION.format(title=title, max=MAX_SUBTASKS)


def subtask_brief(goal_title: str, words: str, subtask: Subtask, before: Sequence[PartResult]) -> str:
    """A subtask's first input: its own brief, the whole goal for context, and what it depends on."""
    parts = [
        f"This is one part of a larger task for the user, 「{goal_title}」. The user asked:\n{words.strip()}",
        f"Your part: {subtask.title}\n{subtask.brief}",
    ]
    if subtask.deliverables:
        parts.append("Deliver in your folder: " + ", ".join(subtask.deliverables))
    if before:
        parts.append(
            "The parts yours depends on reported (their files are in their folders):\n" + _results(before)
        )
    parts.append("Do only your part; report done with a one-line message when it is delivered.")
    return "\n\n".join(parts)


def merger_prompt(words: str, results: Sequence[PartResult]) -> str:
    return f"The user asked:\n{words.strip()}\n\nThe parts reported:\n{_results(results)}"


def merger_instructions(title: str) -> str:
    return MERGER_SECTION.format(title=title)


def _results(results: Sequence[PartResult]) -> str:
    lines = []
    for r in results:
        head = f"- {r.title} ({r.outcome}; folder {r.folder})"
        body = [f"  message: {r.message}"] if r.message else []
        if r.summary:
            body.append(f"  summary: {r.summary[:2000]}")
        if r.files:
            body.append("  files: " + ", ".join(r.files))
        lines.append("\n".join([head, *body]))
    return "\n".join(lines)

"""Activity steps (处理过程, docs/task-stages.md#activity-steps): the folded steps of a reply or a run, and
how they are built from agent events. One step per model response, tool call and job, and one for what a
model thought before it answered."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Literal, get_args

from core.agent import events as ev

StepKind = Literal["model", "tool", "job", "note", "reasoning"]
_KINDS: frozenset[str] = frozenset(get_args(StepKind))


@dataclass(frozen=True, slots=True)
class ActivityStep:
    """One folded step of a reply's 处理过程: a model response, a tool call, a job, a note, or the model's
    reasoning. `chars`: how long a reasoning step's text was before it was cut to `detail`."""

    kind: StepKind
    title: str
    detail: str = ""
    ok: bool = True
    duration_ms: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    chars: int = 0

    def to_json(self) -> dict[str, object]:
        row: dict[str, object] = {
            "kind": self.kind,
            "title": self.title,
            "detail": self.detail,
            "ok": self.ok,
            "duration_ms": self.duration_ms,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
        }
        if self.chars:  # only reasoning steps have it: every other stored row stays as it was
            row["chars"] = self.chars
        return row

    @classmethod
    def from_json(cls, data: dict[str, object]) -> ActivityStep:
        kind = str(data.get("kind", "note"))
        return cls(
            kind=kind if kind in _KINDS else "note",  # type: ignore[arg-type]
            title=str(data.get("title", "")),
            detail=str(data.get("detail", "")),
            ok=bool(data.get("ok", True)),
            duration_ms=int(str(data.get("duration_ms", 0))),
            tokens_in=int(str(data.get("tokens_in", 0))),
            tokens_out=int(str(data.get("tokens_out", 0))),
            chars=int(str(data.get("chars", 0))),
        )


MAX_STEPS = 120
_DETAIL = 2000
# A reasoning model may think for tens of thousands of characters at every step; the run's stored steps are
# read whole each time its detail is opened, so only the start is kept (the history has all of it).
MAX_REASONING = 4000


def _clip(text: str, limit: int = _DETAIL) -> str:
    return text if len(text) <= limit else text[:limit] + f" … (+{len(text) - limit} chars)"


def _tool_title(name: str, args_json: str) -> str:
    try:
        args = json.loads(args_json) if args_json else {}
    except ValueError:
        args = {}
    if isinstance(args, dict):
        for key in ("command", "path", "url", "pattern", "action"):
            value = args.get(key)
            if isinstance(value, str) and value:
                return f"{name}: {_clip(value.splitlines()[0] if value.splitlines() else value, 120)}"
    return name


# Tools whose successful output is an instruction to the model ("Recorded. The user gets your message when
# you finish; end your turn now."), not news for the person, who sees the report itself: the step keeps
# its name and time but not that text. A refusal still shows, since it says what went wrong.
_MODEL_FACING_OUTPUT = frozenset({"task_report"})


def _shown_output(name: str, output: str, ok: bool) -> str:
    return "" if ok and name in _MODEL_FACING_OUTPUT else _clip(output)


class ActivityLog:
    """The steps of one turn or run, capped at MAX_STEPS (the newest kept) with a count of dropped ones."""

    def __init__(self) -> None:
        self._steps: list[ActivityStep] = []
        self._tool_index: dict[str, int] = {}
        self.dropped = 0

    def feed(self, event: ev.AgentEvent) -> bool:
        """Take one event; returns whether the steps changed."""
        if isinstance(event, ev.AssistantMessage):
            thought = event.reasoning.strip()
            if thought:
                self._add(
                    ActivityStep(
                        kind="reasoning", title="", detail=thought[:MAX_REASONING], chars=len(thought)
                    )
                )
            detail = _clip(event.text, 400)
            self._add(
                ActivityStep(
                    kind="model",
                    title=event.model,
                    detail=detail,
                    duration_ms=round(event.duration_s * 1000),
                    tokens_in=event.usage.input_tokens,
                    tokens_out=event.usage.output_tokens,
                )
            )
            return True
        if isinstance(event, ev.ToolCall):
            self._tool_index[event.call_id] = self._add(
                ActivityStep(kind="tool", title=_tool_title(event.name, event.args), detail="")
            )
            return True
        if isinstance(event, ev.ToolResult):
            index = self._tool_index.pop(event.call_id, None)
            step = ActivityStep(
                kind="tool",
                title=event.name,
                detail=_shown_output(event.name, event.output, event.ok),
                ok=event.ok,
                duration_ms=round(event.duration_s * 1000),
            )
            if index is not None and 0 <= index - self.dropped < len(self._steps):
                pos = index - self.dropped
                step = ActivityStep(
                    kind="tool",
                    title=self._steps[pos].title,
                    detail=step.detail,
                    ok=step.ok,
                    duration_ms=step.duration_ms,
                )
                self._steps[pos] = step
            else:
                self._add(step)
            return True
        if isinstance(event, ev.JobStarted):
            self._add(ActivityStep(kind="job", title=f"job {event.job_id}: {_clip(event.command, 120)}"))
            return True
        if isinstance(event, ev.JobEnded):
            self._add(
                ActivityStep(
                    kind="job",
                    title=f"job {event.job_id} {event.status}",
                    detail=f"exit code {event.exit_code}" if event.exit_code is not None else "",
                    ok=event.status == "completed",
                )
            )
            return True
        return False

    def note(self, title: str, detail: str = "", ok: bool = True) -> None:
        self._add(ActivityStep(kind="note", title=title, detail=detail, ok=ok))

    def _add(self, step: ActivityStep) -> int:
        """Append; returns the step's absolute index (counting dropped steps)."""
        self._steps.append(step)
        if len(self._steps) > MAX_STEPS:
            del self._steps[0]
            self.dropped += 1
        return self.dropped + len(self._steps) - 1

    @property
    def steps(self) -> tuple[ActivityStep, ...]:
        return tuple(self._steps)

    def to_json(self) -> list[dict[str, object]]:
        steps = [s.to_json() for s in self._steps]
        if self.dropped:
            steps.insert(0, dropped_note(self.dropped).to_json())
        return steps


def dropped_note(count: int) -> ActivityStep:
    """The first stored step of a log that dropped `count` older steps (readable in exports as it is)."""
    return ActivityStep(kind="note", title=f"{count} earlier steps not kept")


_DROPPED = re.compile(r"^(\d+) earlier steps not kept$")


def dropped_count(step: ActivityStep) -> int | None:
    """How many steps a `dropped_note` stands for; None for any other step."""
    match = _DROPPED.match(step.title) if step.kind == "note" else None
    return int(match.group(1)) if match else None

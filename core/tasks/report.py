"""The Report a task or rule run gives through `task_report` (docs/runs.md#the-report-tool), and its
validation.

Needs-you is classified from these structured fields, never from free text, so validation is strict,
and every error says exactly what the model has to change: the model reads it as the tool result and
calls `task_report` again."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, cast

ReportState = Literal["progress", "needs_you", "done", "failed"]
STATES: tuple[ReportState, ...] = ("progress", "needs_you", "done", "failed")
MAX_MESSAGE = 300  # a pushed message fits one WeChat line (docs/push-rules.md#message-shape)
MAX_MESSAGE_LINES = 2  # one line, plus an optional second only for a blocker or a limit
MIN_OPTIONS = 2
MAX_OPTIONS = 9  # bare-number answers on WeChat are one digit
TOOL_KEYS = ("state", "summary", "message", "question", "options", "default", "files", "would")
QUESTION_KEYS = ("question", "options", "multiSelect", "default")


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    options: tuple[str, ...] = ()
    default: str | None = None  # with a default the question is asked and the run goes on
    multi_select: bool = False

    @property
    def blocking(self) -> bool:
        """A question without a default makes the task wait for the person (stage row 3)."""
        return self.default is None

    def to_json(self) -> dict[str, object]:
        return {
            "text": self.text,
            "options": list(self.options),
            "default": self.default,
            "multi_select": self.multi_select,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Question:
        default = data.get("default")
        return cls(
            text=str(data.get("text", "")),
            options=tuple(str(o) for o in _list(data.get("options"))),
            default=None if default is None else str(default),
            multi_select=bool(data.get("multi_select", False)),
        )


@dataclass(frozen=True, slots=True)
class Report:
    state: ReportState
    summary: str  # internal: for the task detail and 「详情」, never pushed as is
    message: str = ""  # user-facing, pushed for done and failed; at most MAX_MESSAGE characters
    question: Question | None = None
    files: tuple[str, ...] = ()
    would: str = ""  # observe mode: what the rule would have done

    @property
    def waits_for_person(self) -> bool:
        """A needs_you Report whose question has no default: the run ends `needs_you` once quiet."""
        return self.state == "needs_you" and self.question is not None and self.question.blocking

    def to_json(self) -> dict[str, object]:
        return {
            "state": self.state,
            "summary": self.summary,
            "message": self.message,
            "question": None if self.question is None else self.question.to_json(),
            "files": list(self.files),
            "would": self.would,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Report:
        """Read a stored Report (our own output of `to_json`, so it is trusted but read defensively)."""
        state = data.get("state")
        if state not in STATES:
            raise ValueError(f"stored Report has an unknown state {state!r}")
        question = data.get("question")
        return cls(
            state=state,
            summary=str(data.get("summary", "")),
            message=str(data.get("message", "")),
            question=Question.from_json(cast(Mapping[str, object], question))
            if isinstance(question, Mapping)
            else None,
            files=tuple(str(f) for f in _list(data.get("files"))),
            would=str(data.get("would", "")),
        )


def _list(value: object) -> Sequence[object]:
    return value if isinstance(value, list | tuple) else ()


class ReportError(ValueError):
    """`task_report` arguments that can't be accepted. The message lists every problem and its fix."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            "task_report was not accepted. Fix the following and call task_report again:\n"
            + "\n".join(f"- {p}" for p in self.problems)
        )


def validate_report(args: Mapping[str, object]) -> Report:
    """Check `task_report` arguments and build the Report, or raise ReportError naming every problem.

    Shape: `{state, summary, message?, question?, options?, default?, files?, would?}`, where `question`
    may instead be `{question, options?, multiSelect?, default?}`. A null or empty optional value counts
    as absent, because models often send `null` for what they mean to leave out."""
    problems: list[str] = []

    unknown = [k for k in args if k not in TOOL_KEYS]
    if unknown:
        problems.append(
            f"unknown argument(s) {', '.join(repr(k) for k in unknown)}; "
            f"task_report takes only {', '.join(TOOL_KEYS)}"
        )

    state = args.get("state")
    if state not in STATES:
        problems.append(f"`state` must be one of {', '.join(STATES)}; got {state!r}")

    summary = _text(args, "summary", problems, required=True)
    message = _text(args, "message", problems)
    if len(message) > MAX_MESSAGE:
        problems.append(
            f"`message` is {len(message)} characters; the limit is {MAX_MESSAGE}. Shorten it to one line "
            "the person can use, and put the details in `summary` or a file"
        )
    elif (lines := message.count("\n") + 1) > MAX_MESSAGE_LINES:
        problems.append(
            f"`message` has {lines} lines; write one line (a second only for a "
            "blocker or a limit) and put the details in `summary` or a file"
        )
    would = _text(args, "would", problems)
    files = _files(args.get("files"), problems)
    question = _question(args, problems)

    if state == "needs_you" and _absent(args.get("question")):  # a malformed one is reported already
        problems.append(
            "state `needs_you` needs a `question`: ask one concrete question the person can answer"
        )
    if question is not None and state in STATES and state != "needs_you":
        problems.append(
            f"a `question` is asked only with state `needs_you`, not `{state}`: "
            "use state `needs_you`, or leave `question` (and its options and default) out"
        )

    if problems:
        raise ReportError(problems)
    return Report(
        state=cast(ReportState, state),
        summary=summary,
        message=message,
        question=question,
        files=files,
        would=would,
    )


def _absent(value: object) -> bool:
    """None, blank text or an empty list: what models send for an argument they mean to leave out."""
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, list | tuple):
        return not value
    return value is None


def _text(args: Mapping[str, object], key: str, problems: list[str], *, required: bool = False) -> str:
    value = args.get(key)
    if _absent(value):
        if required:
            problems.append(f"`{key}` is required: a non-empty string")
        return ""
    if not isinstance(value, str):
        problems.append(f"`{key}` must be a string; got {type(value).__name__}")
        return ""
    return value.strip()


def _files(value: object, problems: list[str]) -> tuple[str, ...]:
    if _absent(value):
        return ()
    if not isinstance(value, list | tuple) or not all(isinstance(f, str) and f.strip() for f in value):
        problems.append(
            f'`files` must be a list of non-empty paths (strings), e.g. ["report.md"]; got {_show(value)}'
        )
        return ()
    return tuple(f.strip() for f in value)


def _question(args: Mapping[str, object], problems: list[str]) -> Question | None:
    """The question from either shape; top-level `options`/`default` may complete a question object."""
    raw = args.get("question")
    options_raw: object = args.get("options")
    default_raw: object = args.get("default")
    multi_raw: object = None
    where = "`question`"
    if isinstance(raw, Mapping):  # the object shape; its own options and default win over absent outer ones
        inner = cast(Mapping[str, object], raw)
        unknown = [k for k in inner if k not in QUESTION_KEYS]
        if unknown:
            problems.append(
                f"unknown key(s) {', '.join(repr(k) for k in unknown)} in `question`; "
                f"a question object takes only {', '.join(QUESTION_KEYS)}"
            )
        for key, outer in (("options", options_raw), ("default", default_raw)):
            if not _absent(inner.get(key)) and not _absent(outer) and inner.get(key) != outer:
                problems.append(
                    f"`{key}` is given both inside `question` and at the top level with different "
                    "values; give it once"
                )
        if not _absent(inner.get("options")):
            options_raw = inner["options"]
        if not _absent(inner.get("default")):
            default_raw = inner["default"]
        multi_raw = inner.get("multiSelect")
        raw = inner.get("question")
        where = "`question.question`"
        if _absent(raw):
            problems.append(f"{where} is empty: write the question text")
            return None
    elif _absent(raw):
        if not _absent(options_raw) or not _absent(default_raw):
            problems.append(
                "`options` and `default` belong to a question: add `question` (with state `needs_you`), "
                "or leave them out"
            )
        return None
    if not isinstance(raw, str):
        problems.append(f"{where} must be a string (the question text); got {type(raw).__name__}")
        return None

    options = _options(options_raw, problems)
    default = _default(default_raw, options, problems)
    multi = False
    if multi_raw is not None:
        if not isinstance(multi_raw, bool):
            problems.append(f"`question.multiSelect` must be true or false; got {_show(multi_raw)}")
        elif multi_raw and not options:
            problems.append("`question.multiSelect` needs `options` to choose from; add options or drop it")
        else:
            multi = multi_raw
    return Question(text=raw.strip(), options=options, default=default, multi_select=multi)


def _options(value: object, problems: list[str]) -> tuple[str, ...]:
    if _absent(value):
        return ()
    if not isinstance(value, list | tuple):
        problems.append(f'`options` must be a list of strings, e.g. ["A", "B"]; got {_show(value)}')
        return ()
    if not all(isinstance(o, str) and o.strip() for o in value):
        problems.append("every option must be a non-empty string")
        return ()
    options = tuple(o.strip() for o in value)
    if not MIN_OPTIONS <= len(options) <= MAX_OPTIONS:
        problems.append(
            f"`options` has {len(options)}; give {MIN_OPTIONS} to {MAX_OPTIONS} options, "
            "or leave `options` out for a free-text answer"
        )
    repeated = sorted({o for o in options if options.count(o) > 1})
    if repeated:
        problems.append(f"options must differ; repeated: {', '.join(repr(o) for o in repeated)}")
    return options


def _default(value: object, options: tuple[str, ...], problems: list[str]) -> str | None:
    """A default is one of the options; a number 1..n (or its digits) is read as that option."""
    if _absent(value):
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        problems.append(f"`default` must be one of the options (text or its number); got {_show(value)}")
        return None
    text = str(value).strip()
    if not options:
        return text  # free-text question: the default is the answer the task goes on with
    if text in options:
        return text
    if text.isdigit() and 1 <= int(text) <= len(options):
        return options[int(text) - 1]
    problems.append(
        f"`default` {value!r} is not one of the options; give one of "
        f"{', '.join(repr(o) for o in options)} or its number 1-{len(options)}"
    )
    return None


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

"""A task's acceptance criteria as a person or the chat agent gives them, validated whole before anything
is created (docs/goals.md#criteria).

    [{"text": "the tests pass", "check": {"type": "command", "command": "pytest -q"}},
     {"text": "a PDF report", "check": {"type": "file", "path": "dist/report.pdf"}},
     {"text": "the summary names the three risks"}]

A criterion without a check is judged by a separate model turn; one with a check is decided by the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Literal

from core.errors import InvalidInputError

MAX_CRITERIA = 12
MAX_TEXT = 2000
MAX_COMMAND = 2000
DEFAULT_TIMEOUT_S = 300
MAX_TIMEOUT_S = 1800
CHECK_TYPES = ("command", "file", "contains")


@dataclass(frozen=True, slots=True)
class CommandCheck:
    """Passes when the command exits 0 in the task folder, under the task's sandbox, within the time."""

    command: str
    timeout_s: int = DEFAULT_TIMEOUT_S
    type: Literal["command"] = "command"


@dataclass(frozen=True, slots=True)
class FileCheck:
    """Passes when the file exists in the task folder and is not empty."""

    path: str
    type: Literal["file"] = "file"


@dataclass(frozen=True, slots=True)
class ContainsCheck:
    """Passes when the file exists in the task folder and holds the text."""

    path: str
    text: str
    type: Literal["contains"] = "contains"


Check = CommandCheck | FileCheck | ContainsCheck


@dataclass(frozen=True, slots=True)
class Criterion:
    text: str
    check: Check | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text}
        if isinstance(self.check, CommandCheck):
            out["check"] = {
                "type": "command",
                "command": self.check.command,
                "timeoutS": self.check.timeout_s,
            }
        elif isinstance(self.check, FileCheck):
            out["check"] = {"type": "file", "path": self.check.path}
        elif isinstance(self.check, ContainsCheck):
            out["check"] = {"type": "contains", "path": self.check.path, "text": self.check.text}
        return out


def _text(value: object, field: str, limit: int, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(field, f"{what} must be a non-empty string")
    if len(value) > limit:
        raise InvalidInputError(field, f"{what} is {len(value)} characters; at most {limit} are allowed")
    return value.strip()


def folder_path(value: object, field: str) -> str:
    """A path inside the task folder: relative, no `..`, the same on every system."""
    path = _text(value, field, 1000, "the path")
    if (
        PurePosixPath(path).is_absolute()
        or PureWindowsPath(path).is_absolute()
        or PureWindowsPath(path).drive
    ):
        raise InvalidInputError(field, f"{path!r} is absolute; give a path inside the task folder")
    if ".." in PurePosixPath(path.replace("\\", "/")).parts:
        raise InvalidInputError(field, f"{path!r} leaves the task folder; give a path inside it")
    return path


def _check(raw: object, field: str) -> Check:
    if not isinstance(raw, dict):
        raise InvalidInputError(field, "a check must be an object with a type")
    kind = raw.get("type")
    if kind not in CHECK_TYPES:
        raise InvalidInputError(f"{field}.type", f"must be one of {', '.join(CHECK_TYPES)} (got {kind!r})")
    allowed = {
        "command": {"type", "command", "timeoutS"},
        "file": {"type", "path"},
        "contains": {"type", "path", "text"},
    }[kind]
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise InvalidInputError(field, f"a {kind} check takes no {', '.join(unknown)}")
    if kind == "command":
        timeout = raw.get("timeoutS", DEFAULT_TIMEOUT_S)
        if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= MAX_TIMEOUT_S:
            raise InvalidInputError(
                f"{field}.timeoutS", f"must be a whole number of seconds, 1 to {MAX_TIMEOUT_S}"
            )
        return CommandCheck(
            _text(raw.get("command"), f"{field}.command", MAX_COMMAND, "the command"), timeout
        )
    path = folder_path(raw.get("path"), f"{field}.path")
    if kind == "file":
        return FileCheck(path)
    return ContainsCheck(path, _text(raw.get("text"), f"{field}.text", MAX_TEXT, "the text"))


def parse_acceptance(raw: object, field: str = "acceptance") -> tuple[Criterion, ...]:
    """The criteria, or InvalidInputError naming the first thing wrong (nothing is half-taken)."""
    if not isinstance(raw, list) or not raw:
        raise InvalidInputError(field, f"must be a list of 1 to {MAX_CRITERIA} criteria")
    if len(raw) > MAX_CRITERIA:
        raise InvalidInputError(field, f"has {len(raw)} criteria; at most {MAX_CRITERIA} are allowed")
    criteria = []
    for index, given in enumerate(raw):
        where = f"{field}[{index}]"
        item = {"text": given} if isinstance(given, str) else given
        if not isinstance(item, dict):
            raise InvalidInputError(where, "a criterion must be a string or an object with text")
        unknown = sorted(set(item) - {"text", "check"})
        if unknown:
            raise InvalidInputError(where, f"a criterion takes only text and check, not {', '.join(unknown)}")
        text = _text(item.get("text"), f"{where}.text", MAX_TEXT, "the text")
        check = _check(item["check"], f"{where}.check") if item.get("check") is not None else None
        criteria.append(Criterion(text, check))
    return tuple(criteria)

"""The guard's policy file, `<data dir>/guard-policy.json` (docs/guard.md#the-policy-file): what a person adds
to the built-in rules. No file means the built-in rules alone; a file that cannot be read or is not valid
fails closed (every guarded call is refused, saying what is wrong with the file).

    {
      "allowWriteRoots": ["~/builds"],
      "denyPaths": ["~/private"],
      "denyCommands": [{"id": "no-docker", "pattern": "^docker\\\\b", "reason": "no containers here"}],
      "allowCommands": [{"id": "clean-build", "pattern": "rm -rf build", "reason": "clean build output"}]
    }
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILE_NAME = "guard-policy.json"
MAX_ENTRIES = 200
MAX_PATTERN = 500
_KEYS = ("enabled", "allowWriteRoots", "denyPaths", "denyCommands", "allowCommands")
_RULE_KEYS = ("id", "pattern", "reason")


@dataclass(frozen=True, slots=True)
class CommandPattern:
    """A person's own command rule: `pattern` a regular expression (searched for a deny, matched against
    the whole command for an allow), `reason` said when it decides."""

    id: str
    pattern: re.Pattern[str]
    reason: str


@dataclass(frozen=True, slots=True)
class GuardPolicy:
    enabled: bool = True
    allow_write_roots: tuple[str, ...] = ()
    deny_paths: tuple[str, ...] = ()
    deny_commands: tuple[CommandPattern, ...] = ()
    allow_commands: tuple[CommandPattern, ...] = ()


@dataclass(frozen=True, slots=True)
class PolicyProblem:
    """Why the policy file cannot be used; while it stands, every guarded call is refused."""

    path: Path
    problem: str

    def describe(self) -> str:
        return f"the guard policy file {self.path} cannot be used: {self.problem}. Fix the file or remove it"


class PolicyError(ValueError):
    pass


def _strings(data: dict[str, Any], key: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise PolicyError(f"{key} must be a list of non-empty path strings")
    if len(value) > MAX_ENTRIES:
        raise PolicyError(f"{key} has {len(value)} entries; at most {MAX_ENTRIES}")
    return tuple(v.strip() for v in value)


def _patterns(data: dict[str, Any], key: str) -> tuple[CommandPattern, ...]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise PolicyError(f"{key} must be a list of {{id, pattern, reason}} objects")
    if len(value) > MAX_ENTRIES:
        raise PolicyError(f"{key} has {len(value)} entries; at most {MAX_ENTRIES}")
    found: list[CommandPattern] = []
    seen: set[str] = set()
    for index, entry in enumerate(value):
        where = f"{key}[{index}]"
        if not isinstance(entry, dict):
            raise PolicyError(f"{where} must be an object with id, pattern and reason")
        unknown = sorted(set(entry) - set(_RULE_KEYS))
        if unknown:
            raise PolicyError(
                f"{where} has unknown keys {', '.join(unknown)}; the keys are id, pattern, reason"
            )
        for name in _RULE_KEYS:
            if not isinstance(entry.get(name), str) or not entry[name].strip():
                raise PolicyError(f"{where}.{name} must be a non-empty string")
        ident = entry["id"].strip()
        if ident in seen:
            raise PolicyError(f"{where}.id {ident!r} is used twice in {key}")
        seen.add(ident)
        if len(entry["pattern"]) > MAX_PATTERN:
            raise PolicyError(f"{where}.pattern is longer than {MAX_PATTERN} characters")
        try:
            pattern = re.compile(entry["pattern"])
        except re.error as exc:
            raise PolicyError(f"{where}.pattern is not a valid regular expression: {exc}") from None
        found.append(CommandPattern(ident, pattern, entry["reason"].strip()))
    return tuple(found)


def parse_policy(text: str) -> GuardPolicy:
    """The policy in `text`, or PolicyError saying what to fix (a JSON error with its line and column)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PolicyError(f"line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise PolicyError("the file must hold one JSON object")
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise PolicyError(f"unknown keys {', '.join(unknown)}; the keys are {', '.join(_KEYS)}")
    enabled = data.get("enabled", True)
    if not isinstance(enabled, bool):
        raise PolicyError("enabled must be true or false")
    return GuardPolicy(
        enabled=enabled,
        allow_write_roots=_strings(data, "allowWriteRoots"),
        deny_paths=_strings(data, "denyPaths"),
        deny_commands=_patterns(data, "denyCommands"),
        allow_commands=_patterns(data, "allowCommands"),
    )


# What one look at the file saw: its inode, size and change time (None: no file there).
_Seen = tuple[int, int, int, int] | None


@dataclass
class PolicyFile:
    """The policy file, read again when it changes (a fix takes effect at the next tool call, no restart)."""

    path: Path
    _seen: _Seen = field(default=None, init=False)
    _loaded: GuardPolicy | PolicyProblem = field(default_factory=GuardPolicy, init=False)
    _read_once: bool = field(default=False, init=False)

    def current(self) -> GuardPolicy | PolicyProblem:
        try:
            st = os.stat(self.path)
            seen: _Seen = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        except FileNotFoundError:
            seen = None
        except OSError as exc:
            return PolicyProblem(self.path, f"it cannot be looked at ({exc.strerror or exc})")
        if self._read_once and seen == self._seen:
            return self._loaded
        self._seen, self._read_once = seen, True
        self._loaded = GuardPolicy() if seen is None else self._read()
        return self._loaded

    def _read(self) -> GuardPolicy | PolicyProblem:
        try:
            text = self.path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            return PolicyProblem(self.path, "it is not UTF-8 text")
        except OSError as exc:
            return PolicyProblem(self.path, f"it cannot be read ({exc.strerror or exc})")
        try:
            return parse_policy(text)
        except PolicyError as exc:
            return PolicyProblem(self.path, str(exc))

"""A task's audit events as the desktop lists them: newest first, the newest 200, by group."""

from __future__ import annotations

import pytest

from core.audit.views import SHOWN_LINES, audit_lines, parse_group
from core.errors import InvalidInputError

EVENTS: list[dict[str, object]] = [
    {"at": "2026-12-06T10:00:00.000+00:00", "kind": "command.exec", "decision": "allow", "result": "failed",
     "target": "pytest -q", "exitCode": 1},
    {"at": "2026-12-06T10:01:00.000+00:00", "kind": "guard.deny", "decision": "deny", "result": "blocked",
     "target": "rm -rf ~", "rule": "cmd/recursive-force-delete", "reason": "too wide"},
    {"at": "2026-12-06T10:02:00.000+00:00", "kind": "approval", "decision": "deny", "result": "denied",
     "target": "~/notes.txt", "actor": "person"},
    {"at": "2026-12-06T10:03:00.000+00:00", "kind": "channel.send", "decision": "allow",
     "result": "delivered",
     "target": "c_1"},
]  # fmt: skip


def test_lines_come_newest_first_and_groups_pick_their_kinds() -> None:
    every = audit_lines(EVENTS, "all")
    assert [line.kind for line in every] == ["channel.send", "approval", "guard.deny", "command.exec"]
    assert every[-1].exit_code == 1 and every[-1].at == 1796551200.0
    # A refused approval is a person's answer, not something the guard blocked.
    assert [(line.kind, line.rule) for line in audit_lines(EVENTS, "blocked")] == [
        ("guard.deny", "cmd/recursive-force-delete")
    ]
    assert [line.actor for line in audit_lines(EVENTS, "approvals")] == ["person"]
    assert [line.target for line in audit_lines(EVENTS, "commands")] == ["pytest -q"]
    many: list[dict[str, object]] = [{**EVENTS[0], "target": f"echo {n}"} for n in range(SHOWN_LINES + 5)]
    shown = audit_lines(many, "commands")
    assert len(shown) == SHOWN_LINES and shown[0].target == f"echo {SHOWN_LINES + 4}"


def test_an_unknown_group_is_refused_with_the_groups_named() -> None:
    with pytest.raises(InvalidInputError, match="group: must be one of all, blocked, commands"):
        parse_group("everything")

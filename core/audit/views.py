"""A task's audit events as the desktop shows them (docs/desktop.md#task-detail): newest first, in groups a
person filters by."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from core.errors import InvalidInputError

AuditGroup = Literal["all", "blocked", "commands", "files", "outside", "approvals", "sends"]
AUDIT_GROUPS: tuple[AuditGroup, ...] = get_args(AuditGroup)
SHOWN_LINES = 200
_KINDS: dict[str, frozenset[str]] = {
    "commands": frozenset({"command.exec"}),
    "files": frozenset({"path.write"}),
    "outside": frozenset({"mcp.call", "web.fetch"}),
    "approvals": frozenset({"approval"}),
    "sends": frozenset({"channel.send"}),
}


@dataclass(frozen=True, slots=True)
class AuditLine:
    at: float  # seconds since the epoch
    kind: str
    decision: str
    result: str
    target: str
    rule: str = ""
    reason: str = ""
    actor: str = ""
    exit_code: int | None = None

    @property
    def blocked(self) -> bool:
        return self.decision == "deny"


def parse_group(raw: str) -> AuditGroup:
    if raw not in AUDIT_GROUPS:
        raise InvalidInputError("group", f"must be one of {', '.join(AUDIT_GROUPS)}")
    return raw


def _in_group(event: Mapping[str, Any], group: AuditGroup) -> bool:
    if group == "all":
        return True
    if group == "blocked":
        return event.get("decision") == "deny" and event.get("kind") != "approval"
    return event.get("kind") in _KINDS[group]


def _seconds(at: object) -> float:
    try:
        return datetime.fromisoformat(str(at)).timestamp()
    except ValueError:
        return 0.0


def audit_lines(events: Iterable[Mapping[str, Any]], group: AuditGroup) -> list[AuditLine]:
    """The newest SHOWN_LINES events of `group`, newest first."""
    picked = [e for e in events if _in_group(e, group)]
    lines = []
    for event in reversed(picked[-SHOWN_LINES:]):
        code = event.get("exitCode")
        lines.append(
            AuditLine(
                at=_seconds(event.get("at")),
                kind=str(event.get("kind", "")),
                decision=str(event.get("decision", "")),
                result=str(event.get("result", "")),
                target=str(event.get("target", "")),
                rule=str(event.get("rule", "")),
                reason=str(event.get("reason", "")),
                actor=str(event.get("actor", "")),
                exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            )
        )
    return lines

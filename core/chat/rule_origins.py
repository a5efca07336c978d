"""Which rule a message is about (docs/desktop.md#chat-view): the rule whose run pushed it
(「来自规则「…」」), and the rules a reply created with `rule_create` (their chips). Rules keep no record of
the turn that made them, so a reply's own steps say it: the tool's answer to the model starts with the new
rule's id."""

from __future__ import annotations

import re
from collections.abc import Iterable

from sqlalchemy.orm import Session

from core.activity_steps import ActivityStep
from core.chat.views import RuleChip
from core.store import rules as rule_rows
from core.store.messages import MessageRecord
from core.store.rules import RuleRecord

# The first words of `rule_create`'s answer (core/rules/chat_tools.py, `create_from_chat`).
_CREATED = re.compile(r"^Created rule (ru_[0-9a-f]+)\b")
_TOOL = "rule_create"


def created_rule_ids(steps: Iterable[ActivityStep]) -> tuple[str, ...]:
    """The rules these steps created, in the order they were made."""
    found: list[str] = []
    for step in steps:
        if step.kind != "tool" or not step.ok or step.title.split(":", 1)[0] != _TOOL:
            continue
        match = _CREATED.match(step.detail)
        if match is not None and match.group(1) not in found:
            found.append(match.group(1))
    return tuple(found)


def _created_by(record: MessageRecord) -> tuple[str, ...]:
    if record.role != "assistant":
        return ()
    return created_rule_ids(ActivityStep.from_json(step) for step in record.activity)


def rules_named(s: Session, records: Iterable[MessageRecord]) -> dict[str, RuleRecord]:
    """The rules these messages name that still exist, by id (a deleted one is simply absent)."""
    ids: set[str] = set()
    for record in records:
        if record.rule_id:
            ids.add(record.rule_id)
        ids.update(_created_by(record))
    return {rule.id: rule for rule in rule_rows.rules_by_id(s, ids)} if ids else {}


def rule_title(record: MessageRecord, rules: dict[str, RuleRecord]) -> str:
    """The title of the rule that pushed this message; '' for none or a deleted one."""
    found = rules.get(record.rule_id) if record.rule_id else None
    return found.title if found is not None else ""


def rule_chips(record: MessageRecord, rules: dict[str, RuleRecord]) -> tuple[RuleChip, ...]:
    """The chips of the rules this reply created and that still exist."""
    return tuple(
        RuleChip(rule.id, rule.title, rule.mode, bool(rule.paused_reason))
        for rule_id in _created_by(record)
        if (rule := rules.get(rule_id)) is not None
    )

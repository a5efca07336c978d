"""A stored rule's schedule and the view of a stored rule, as every rule read and command shows it."""

from __future__ import annotations

import logging

from core.errors import InvalidInputError
from core.rules.schedule import Schedule, iso_local, parse_schedule, words
from core.rules.views import RuleView
from core.store.rules import RuleRecord

log = logging.getLogger(__name__)


def stored_schedule(rule: RuleRecord) -> Schedule:
    # Stored schedules were checked when written; `now=None` because a once rule's time may have passed.
    return parse_schedule(rule.schedule, default_tz=rule.tz)


def rule_view(rule: RuleRecord, lang: str, month_cost: float = 0.0) -> RuleView:
    try:
        schedule_words = words(stored_schedule(rule), lang)
    except InvalidInputError:
        # A schedule written by a newer or broken build; show the rule anyway rather than fail the list.
        log.warning("rule %s has an unreadable schedule: %r", rule.id, rule.schedule)
        schedule_words = ""
    return RuleView(
        id=rule.id,
        bot_id=rule.bot_id,
        conversation_id=rule.conversation_id,
        title=rule.title,
        instruction=rule.instruction,
        kind=rule.kind,
        mode=rule.mode,
        schedule=dict(rule.schedule),
        schedule_words=schedule_words,
        tz=rule.tz,
        version=rule.version,
        next_run_at=rule.next_run_at,
        next_run_iso=iso_local(rule.next_run_at, rule.tz) if rule.next_run_at else "",
        paused_reason=rule.paused_reason,
        created_at=rule.created_at,
        updated_at=rule.updated_at,
        trigger=dict(rule.trigger),
        month_cost_usd=month_cost,
        month_budget_usd=rule.month_budget_usd,
        run_budget_usd=rule.run_budget_usd,
    )

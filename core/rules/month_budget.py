"""A rule's monthly budget (docs/cost.md#rule-budgets): what it cost this calendar month in its own zone, the
pause when it reaches the budget, and the resume once the month turns or the budget was raised."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.changes import RuleChanged
from core.clock import Clock
from core.cost.meter import reached_budget
from core.errors import NotFoundError
from core.rules.month import month_key, month_start, next_month_start
from core.rules.schedule import next_fire
from core.rules.stored_schedule import stored_schedule
from core.store import rules as rule_rows
from core.store import runs as run_rows
from core.store.database import Database
from core.store.rules import RuleChanges, RuleRecord

# 继续 on a rule paused at its monthly budget adds this much (docs/cost.md#rule-budgets)
MONTH_RAISE_USD = 3.0


@dataclass(frozen=True, slots=True)
class MonthBudget:
    spent_usd: float
    budget_usd: float
    paused: bool  # this check paused the rule
    push: bool  # and it is the one pushed line for this month and budget level


@dataclass(frozen=True, slots=True)
class RulePausedAtBudget:
    """A run's cost paused the rule at its monthly budget: the scheduler looks again (the rule is off its
    timer until the next 1st)."""

    rule_id: str


def month_costs(s: Session, rules: list[RuleRecord], now: float) -> dict[str, float]:
    """Each rule's estimated cost in its own current calendar month (docs/cost.md#rule-budgets), in one
    query."""
    if not rules:
        return {}
    starts = {r.id: month_start(now, r.tz) for r in rules}
    found = run_rows.rule_costs_since(s, list(starts), min(starts.values()))
    return {
        rule_id: sum(cost for queued_at, cost in runs if queued_at >= starts[rule_id])
        for rule_id, runs in found.items()
    }


class MonthBudgets:
    def __init__(self, db: Database, bus: EventBus, clock: Clock) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock

    async def check(self, rule_id: str) -> MonthBudget:
        """After a run: at this month's budget the rule pauses (docs/cost.md#rule-budgets). `push` says
        whether this pause is the one pushed line for this month and budget level (act-mode rules only)."""
        now = self._clock.time()

        def apply(s: Session) -> MonthBudget:
            rule = rule_rows.get_rule(s, rule_id)
            if rule is None:
                raise NotFoundError("rule", rule_id)
            spent = month_costs(s, [rule], now).get(rule_id, 0.0)
            # At the budget it pauses for the budget even when the run's failure paused it too: resuming a
            # rule paused for failures runs it at once, which would spend past the month's budget.
            if not reached_budget(spent, rule.month_budget_usd) or rule.paused_reason == "budget":
                return MonthBudget(spent, rule.month_budget_usd, paused=False, push=False)
            level = f"{month_key(now, rule.tz)}@{rule.month_budget_usd:.2f}"
            push = rule.mode == "act" and rule.budget_pushed != level
            rule_rows.update_rule(s, rule_id, now=now, paused_reason="budget", budget_pushed=level)
            return MonthBudget(spent, rule.month_budget_usd, paused=True, push=push)

        found = await self._db.write(apply)
        if found.paused:
            self._bus.publish(RuleChanged(rule_id))
            self._bus.publish(RulePausedAtBudget(rule_id))
        return found

    async def resume_all(self) -> list[str]:
        """Rules paused at their monthly budget go on once their month's spend is under it again: on the
        1st in their zone, or after the budget was raised. Returns the rules that resumed."""
        now = self._clock.time()

        def apply(s: Session) -> list[str]:
            paused = rule_rows.budget_paused_rules(s)
            costs = month_costs(s, paused, now)
            resumed: list[str] = []
            for rule in paused:
                if reached_budget(costs.get(rule.id, 0.0), rule.month_budget_usd):
                    continue
                changes: RuleChanges = {"paused_reason": ""}
                if rule.trigger.get("kind") != "event":
                    changes["next_run_at"] = next_fire(stored_schedule(rule), now) or 0.0
                rule_rows.update_rule(s, rule.id, now=now, **changes)
                resumed.append(rule.id)
            return resumed

        resumed = await self._db.write(apply)
        for rule_id in resumed:
            self._bus.publish(RuleChanged(rule_id))
        return resumed

    async def next_resume(self) -> float | None:
        """When the earliest rule paused at its monthly budget resumes: the next 1st in its zone."""
        now = self._clock.time()
        # One 1st per zone, not per rule; the scheduler asks this on every wake.
        zones = await self._db.read(rule_rows.budget_paused_zones)
        starts = [next_month_start(now, tz) for tz in zones]
        return min(starts, default=None)

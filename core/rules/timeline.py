"""The scheduler's view of rules in the store (`RuleTimeline`, docs/runs.md#the-scheduler): which rules are
due, and what a firing or a skip does. A due rule is one that is not off, not paused, and whose stored next
run has come."""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.changes import RuleChanged
from core.clock import Clock
from core.errors import InvalidInputError
from core.ids import new_id
from core.rules.runner import RULE_PREFIX, RuleRunner
from core.rules.schedule import Schedule, parse_schedule
from core.rules.scheduler import DueRule, SkipReason
from core.rules.service import RuleService
from core.store import bots as bot_rows
from core.store import rules as rule_rows
from core.store import runs as run_rows
from core.store.database import Database

log = logging.getLogger(__name__)


class StoredTimeline:
    def __init__(
        self, db: Database, bus: EventBus, clock: Clock, rules: RuleService, runner: RuleRunner
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._rules = rules
        self._runner = runner

    async def earliest_due(self) -> float | None:
        """The earliest next run, or the next 1st when a rule paused at its monthly budget resumes then."""
        due = await self._db.read(rule_rows.earliest_next_run)
        resume = await self._rules.next_budget_resume()
        return min((t for t in (due, resume) if t is not None), default=None)

    async def due(self, now: float) -> list[DueRule]:
        # Rules whose month has turned (or whose budget was raised) can fire again from here on.
        await self._rules.resume_month_budgets()

        def read(s: Session) -> list[DueRule]:
            rules = rule_rows.due_rule_times(s, now=now)
            if not rules:
                return []
            paused_bots = {b.id for b in bot_rows.list_bots(s) if b.paused}
            running = run_rows.rules_with_live_runs(s, [r.id for r in rules])
            # After a long sleep every rule is due, and most share a handful of schedules: parse each once.
            parsed: dict[tuple[str, str], Schedule | None] = {}
            found: list[DueRule] = []
            for rule in rules:
                key = (rule.schedule_json, rule.tz)
                if key not in parsed:
                    parsed[key] = _parsed(rule.schedule_json, rule.tz)
                schedule = parsed[key]
                if schedule is None:
                    log.warning("rule %s: unreadable schedule, not run: %r", rule.id, rule.schedule_json)
                    continue
                found.append(
                    DueRule(
                        rule_id=rule.id,
                        due_at=rule.next_run_at,
                        schedule=schedule,
                        running=rule.id in running,
                        paused=rule.bot_id in paused_bots,
                    )
                )
            return found

        return await self._db.read(read)

    async def fire(self, rule: DueRule) -> None:
        await self._runner.fire(rule.rule_id)

    async def record(
        self, skipped: list[tuple[DueRule, SkipReason]], next_runs: dict[str, float | None]
    ) -> None:
        """The skipped runs (cause `schedule`, ended `skipped`, the reason key in their error: the run log
        words it 「跳过:电脑没开」, ...) and every decided rule's next run, in one transaction."""
        now = self._clock.time()
        wanted = {rule.rule_id for rule, _reason in skipped} | set(next_runs)

        def write(s: Session) -> set[str]:
            facts = rule_rows.run_facts(s, wanted)
            runs = [
                run_rows.SkippedRun(
                    run_id=new_id("r"),
                    rule_id=rule.rule_id,
                    bot_id=fact.bot_id,
                    rule_version=fact.version,
                    mode="observe" if fact.mode == "observe" else "act",
                    due_at=rule.due_at,  # the log shows when it was due
                    reason=reason,
                )
                for rule, reason in skipped
                if (fact := facts.get(rule.rule_id)) is not None
            ]
            run_rows.insert_skipped_runs(s, runs, session_prefix=RULE_PREFIX, now=now)
            rule_rows.set_next_runs(s, {k: v for k, v in next_runs.items() if k in facts}, now=now)
            return set(facts)

        for rule_id in sorted(await self._db.write(write)):
            self._bus.publish(RuleChanged(rule_id))


def _parsed(schedule_json: str, tz: str) -> Schedule | None:
    """A stored schedule; None when it cannot be read (written by a newer or broken build)."""
    try:
        return parse_schedule(rule_rows.decode_schedule(schedule_json), default_tz=tz)
    except InvalidInputError:
        return None

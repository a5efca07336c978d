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
from core.rules.runner import RULE_PREFIX, RuleRunner, ScheduledFirings
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
            running = run_rows.live_rule_ids(s)
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

    async def record(
        self,
        fired: list[DueRule],
        skipped: list[tuple[DueRule, SkipReason]],
        next_runs: dict[str, float | None],
    ) -> None:
        """The fired rules' runs (RuleRunner.stage_scheduled), the skipped runs (cause `schedule`, ended
        `skipped`, the reason key in their error: the run log words it 「跳过:电脑没开」, ...) and every
        decided rule's next run, in one transaction; then what the firings start."""
        now = self._clock.time()

        def write(s: Session) -> tuple[ScheduledFirings, set[str]]:
            firings = self._runner.stage_scheduled(s, [rule.rule_id for rule in fired], now)
            # A run begun since the rule was read (a person's 立即运行) makes the firing an overlap.
            late = set(firings.overlapping)
            not_run = [*skipped, *((rule, "overlap") for rule in fired if rule.rule_id in late)]
            runs = [
                run_rows.ScheduledRun(
                    new_id("r"),
                    rule.rule_id,
                    rule.due_at,  # the log shows when it was due
                    "ended",
                    "skipped",
                    error=reason,
                    ended_at=now,
                )
                for rule, reason in not_run
            ]
            kept = set(firings.fired) | run_rows.insert_scheduled_runs(s, runs, session_prefix=RULE_PREFIX)
            # Only the rules that still exist: a deleted one's id is free of rows.
            rule_rows.set_next_runs(s, {k: v for k, v in next_runs.items() if k in kept}, now=now)
            return firings, kept

        async with self._runner.queueing():
            firings, kept = await self._db.write(write)
        for rule_id in sorted(kept):
            self._bus.publish(RuleChanged(rule_id))
        try:
            await self._runner.scheduled(firings)
        except Exception:
            # What the firings owe is committed (queued runs, reminders' words in the outbox), and the lane
            # and the outbox look again on their own timers; a failure here must not keep the scheduler
            # from setting its next timer.
            log.exception("after scheduled firings: waking the lane or flushing the outbox failed")


def _parsed(schedule_json: str, tz: str) -> Schedule | None:
    """A stored schedule; None when it cannot be read (written by a newer or broken build)."""
    try:
        return parse_schedule(rule_rows.decode_schedule(schedule_json), default_tz=tz)
    except InvalidInputError:
        return None

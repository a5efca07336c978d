"""The scheduler's view of rules in the store (`RuleTimeline`, P3 §4): which rules are due, and what a
firing or a skip does. A due rule is one that is not off, not paused, and whose stored next run has come."""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.clock import Clock
from core.errors import InvalidInputError
from core.events import RuleChanged
from core.ids import new_id
from core.rules.runner import RULE_PREFIX, RuleRunner
from core.rules.schedule import parse_schedule
from core.rules.scheduler import DueRule, SkipReason
from core.rules.service import RuleService
from core.store import bots as bot_rows
from core.store import rules as rule_rows
from core.store import runs as run_rows
from core.store.database import Database
from core.store.runs import RunMode

log = logging.getLogger(__name__)


def _can_fire(s: Session) -> list[rule_rows.RuleRecord]:
    """Rules that may fire: not off, not paused, with a next run (a personal assistant has few rules)."""
    return [
        r for r in rule_rows.list_rules(s) if r.mode != "off" and not r.paused_reason and r.next_run_at > 0
    ]


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
        def read(s: Session) -> float | None:
            times = [r.next_run_at for r in _can_fire(s)]
            return min(times) if times else None

        return await self._db.read(read)

    async def due(self, now: float) -> list[DueRule]:
        def read(s: Session) -> list[DueRule]:
            paused_bots = {b.id for b in bot_rows.list_bots(s) if b.paused}
            found: list[DueRule] = []
            for rule in _can_fire(s):
                if rule.next_run_at > now:
                    continue
                try:
                    schedule = parse_schedule(rule.schedule, default_tz=rule.tz)
                except InvalidInputError:
                    log.warning("rule %s: unreadable schedule, not run: %r", rule.id, rule.schedule)
                    continue
                found.append(
                    DueRule(
                        rule_id=rule.id,
                        due_at=rule.next_run_at,
                        schedule=schedule,
                        running=run_rows.live_run_of_rule(s, rule.id) is not None,
                        paused=rule.bot_id in paused_bots,
                    )
                )
            return sorted(found, key=lambda d: (d.due_at, d.rule_id))

        return await self._db.read(read)

    async def fire(self, rule: DueRule) -> None:
        await self._runner.fire(rule.rule_id)

    async def skip(self, rule: DueRule, reason: SkipReason) -> None:
        """A run of cause `schedule` that ended `skipped` at once; its error holds the reason key (the run
        log words it: 「跳过:电脑没开」, ...)."""
        now = self._clock.time()
        run_id = new_id("r")

        def insert(s: Session) -> bool:
            record = rule_rows.get_rule(s, rule.rule_id)
            if record is None:
                return False
            mode: RunMode = "observe" if record.mode == "observe" else "act"
            n = run_rows.count_runs_of_rule(s, record.id) + 1
            run_rows.insert_run(
                s,
                id=run_id,
                bot_id=record.bot_id,
                session_id=f"{RULE_PREFIX}{record.id}-{n}",
                cause="schedule",
                now=rule.due_at,  # the log shows when it was due
                rule_id=record.id,
                rule_version=record.version,
                mode=mode,
            )
            run_rows.end_run(s, run_id, outcome="skipped", now=now, error=reason)
            return True

        if await self._db.write(insert):
            self._bus.publish(RuleChanged(rule.rule_id))

    async def set_next(self, rule_id: str, next_run_at: float | None) -> None:
        await self._rules.set_next_run(rule_id, next_run_at)

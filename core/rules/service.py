"""Rules (docs/domain.md#rules): standing instructions in the user's own words, with a schedule and a mode.

RuleService holds the reads and what the rule runner and the scheduler write about a rule (a run's outcome,
the monthly budget). A person's commands, which re-arm the scheduler and may start a run, are
`core.rules.commands.RuleCommands`; what a rule's fields must be is `core.rules.validation`. The service
itself never fires a rule.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy.orm import Session

from core.bots.service import BotService
from core.bus import EventBus
from core.changes import RuleChanged
from core.clock import Clock
from core.delivery.outbox import local_zone
from core.errors import NotFoundError
from core.rules.month_budget import MonthBudget, MonthBudgets, month_costs
from core.rules.run_log import RUN_LOG_PAGE, RunLog, log_entry
from core.rules.schedule import preview
from core.rules.stored_schedule import rule_view
from core.rules.views import ObserveReady, PausedRule, RuleVersionView, RuleView, RunLogEntry
from core.store import conversations as conv_rows
from core.store import rules as rule_rows
from core.store import runs as run_rows
from core.store.database import Database
from core.store.rules import RuleRecord
from core.translations import Language

log = logging.getLogger(__name__)

FAILURES_TO_PAUSE = 3
# Good observed runs on one version before needs-you asks whether the rule should act
# (docs/attention.md#observe-to-act).
OBSERVED_ENOUGH = 3


class RuleService:
    def __init__(self, db: Database, bus: EventBus, clock: Clock, bots: BotService) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._bots = bots
        self._budgets = MonthBudgets(db, bus, clock)
        self._log = RunLog(db, bots)

    # ---- reads --------------------------------------------------------------------------------------

    async def bot_of_conversation(self, conversation_id: str) -> str | None:
        """The bot a conversation belongs to (the chat tool creates rules in the chat's conversation)."""
        record = await self._db.read(lambda s: conv_rows.get_conversation(s, conversation_id))
        return record.bot_id if record is not None else None

    async def channel_of_conversation(self, conversation_id: str) -> str:
        """Where a conversation's person reads: desktop, wechat, ..."""
        record = await self._db.read(lambda s: conv_rows.get_conversation(s, conversation_id))
        return record.channel if record is not None else "desktop"

    async def rule_of_run(self, run_id: str) -> RuleRecord | None:
        """The rule a run belongs to (None for a task's run or a deleted rule)."""

        def read(s: Session) -> RuleRecord | None:
            run = run_rows.get_run(s, run_id)
            return rule_rows.get_rule(s, run.rule_id) if run is not None and run.rule_id else None

        return await self._db.read(read)

    async def paused(self) -> list[PausedRule]:
        """Rules paused by the host (after failures in a row, or at budget), with the last error."""

        def read(s: Session) -> list[PausedRule]:
            found: list[PausedRule] = []
            for rule in rule_rows.list_rules(s):
                if not rule.paused_reason:
                    continue
                last = next(
                    (r for r in run_rows.runs_of_rule(s, rule.id, limit=10) if r.outcome == "failed"), None
                )
                found.append(
                    PausedRule(
                        rule_id=rule.id,
                        bot_id=rule.bot_id,
                        conversation_id=rule.conversation_id,
                        title=rule.title,
                        reason=rule.paused_reason,
                        detail=last.error if last is not None else "",
                        failures=rule.failures_in_row,
                        since=(last.ended_at if last is not None else 0.0) or rule.updated_at,
                    )
                )
            return found

        return await self._db.read(read)

    async def observe_ready(self, lang: Language = "zh") -> list[ObserveReady]:
        """Rules the person put in observe that have OBSERVED_ENOUGH good runs on their current version and
        whose question was not answered 继续观察 for it (docs/attention.md#observe-to-act)."""

        def read(s: Session) -> list[ObserveReady]:
            found: list[ObserveReady] = []
            for rule in rule_rows.list_rules(s):
                if rule.mode != "observe" or rule.paused_reason or rule.observe_ack_version == rule.version:
                    continue
                done = rule_rows.observed_done_runs(s, rule.id, rule.version)
                if len(done) < OBSERVED_ENOUGH:
                    continue
                latest = run_rows.get_run(s, done[0])
                if latest is None:
                    continue
                entry = log_entry(latest, lang)
                found.append(
                    ObserveReady(
                        rule_id=rule.id,
                        bot_id=rule.bot_id,
                        conversation_id=rule.conversation_id,
                        title=rule.title,
                        version=rule.version,
                        observed=len(done),
                        line=entry.line,
                        since=latest.ended_at,
                    )
                )
            return found

        return await self._db.read(read)

    # ---- reads (one rule) ---------------------------------------------------------------------------

    async def get(self, rule_id: str, lang: Language = "zh") -> RuleView:
        now = self._clock.time()

        def read(s: Session) -> tuple[RuleRecord, float] | None:
            rule = rule_rows.get_rule(s, rule_id)
            return None if rule is None else (rule, month_costs(s, [rule], now).get(rule_id, 0.0))

        found = await self._db.read(read)
        if found is None:
            raise NotFoundError("rule", rule_id)
        return rule_view(found[0], lang, found[1])

    async def list_rules(self, bot_id: str | None = None, lang: Language = "zh") -> list[RuleView]:
        """Newest first; one bot's when `bot_id` is given."""
        if bot_id is not None:
            await self._bots.get(bot_id)  # an unknown bot is a 404, not an empty list
        now = self._clock.time()

        def read(s: Session) -> tuple[list[RuleRecord], dict[str, float]]:
            records = rule_rows.list_rules(s, bot_id=bot_id)
            return records, month_costs(s, records, now)

        records, costs = await self._db.read(read)
        return [rule_view(r, lang, costs.get(r.id, 0.0)) for r in records]

    async def versions(self, rule_id: str) -> list[RuleVersionView]:
        """Every instruction the rule has had, oldest first."""

        def read(s: Session) -> list[rule_rows.RuleVersionRecord] | None:
            if rule_rows.get_rule(s, rule_id) is None:
                return None
            return rule_rows.versions_of(s, rule_id)

        found = await self._db.read(read)
        if found is None:
            raise NotFoundError("rule", rule_id)
        return [RuleVersionView(v.version, v.instruction, v.created_at) for v in found]

    async def runs(
        self,
        rule_id: str,
        before: float | None = None,
        lang: Language = "zh",
        *,
        limit: int | None = RUN_LOG_PAGE,
    ) -> list[RunLogEntry]:
        """The rule's run log, newest first (see `core.rules.run_log`)."""
        return await self._log.runs(rule_id, before, lang, limit=limit)

    async def export_markdown(self, rule_id: str, lang: Language = "zh") -> str:
        """The rule, its versions and its whole run log as Markdown (docs/retention.md#markdown-export),
        secrets redacted."""
        from core.export.rule_markdown import rule_markdown

        rule = await self.get(rule_id, lang)
        versions = await self.versions(rule_id)
        log = await self.runs(rule_id, lang=lang, limit=None)
        # Rendered off the loop: a long run log takes a couple of hundred milliseconds.
        now = self._clock.time()
        return await asyncio.to_thread(rule_markdown, rule, versions, log, lang=lang, exported_at=now)

    def preview(
        self, schedule: object, *, after: float | None = None, count: int = 5, lang: Language = "zh"
    ) -> dict[str, object]:
        """The schedule in words and its next `count` times strictly after `after` (default now), for a
        person to confirm before saving. Nothing is stored."""
        start = self._clock.time() if after is None else after
        return preview(schedule, default_tz=local_zone(), after=start, count=count, lang=lang)

    # ---- monthly budgets (core.rules.month_budget) ---------------------------------------------------

    async def check_month_budget(self, rule_id: str) -> MonthBudget:
        """After a run: at this month's budget the rule pauses (docs/cost.md#rule-budgets); see
        `MonthBudgets.check`."""
        return await self._budgets.check(rule_id)

    async def resume_month_budgets(self) -> list[str]:
        """Rules paused at their monthly budget whose month's spend is under it again go on."""
        return await self._budgets.resume_all()

    async def next_budget_resume(self) -> float | None:
        """When the earliest rule paused at its monthly budget resumes: the next 1st in its zone."""
        return await self._budgets.next_resume()

    # ---- what the rule runner writes ------------------------------------------------------------------

    async def record_outcome(self, rule_id: str, outcome: str) -> RuleView:
        """A run ended: `done` resets the failure count, `failed` adds one, and the third failure in a row
        pauses the rule (docs/runs.md#failures-pause-a-rule). Skipped, stopped and interrupted runs count
        neither way."""
        now = self._clock.time()

        def apply(s: Session) -> RuleRecord:
            current = rule_rows.get_rule(s, rule_id)
            if current is None:
                raise NotFoundError("rule", rule_id)
            if outcome == "done" and current.failures_in_row:
                return rule_rows.update_rule(s, rule_id, now=now, failures_in_row=0)
            # a run over its budget counts as a failure (docs/cost.md#rule-budgets)
            if outcome in ("failed", "budget"):
                failures = current.failures_in_row + 1
                if failures >= FAILURES_TO_PAUSE and not current.paused_reason:
                    return rule_rows.update_rule(
                        s, rule_id, now=now, failures_in_row=failures, paused_reason="failures"
                    )
                return rule_rows.update_rule(s, rule_id, now=now, failures_in_row=failures)
            return current

        record = await self._db.write(apply)
        self._bus.publish(RuleChanged(rule_id))
        return rule_view(record, "zh")

    async def rule(self, rule_id: str) -> RuleRecord:
        """The stored rule; NotFoundError when there is none."""
        record = await self._db.read(lambda s: rule_rows.get_rule(s, rule_id))
        if record is None:
            raise NotFoundError("rule", rule_id)
        return record

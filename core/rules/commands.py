"""What people and the chat agent do with rules (docs/runs.md#rule-runs): create, change, delete, 立即运行,
重试, 继续观察, and the reads that go with them (RuleService's). Each change to a schedule re-arms the
scheduler before the command returns, and 立即运行 / 重试 start a run on the rule runner. Built after both, so
the host wires nothing later. Implements `core.rules.facade.RuleFacade` and serves the API's rule routes.
"""

from __future__ import annotations

import logging
from typing import Protocol

from sqlalchemy.orm import Session

from core.bots.service import BotService
from core.bus import EventBus
from core.changes import RuleChanged
from core.chat.destination import conversation_for
from core.clock import Clock
from core.delivery.outbox import local_zone
from core.errors import NotFoundError
from core.ids import new_id
from core.rules.month_budget import MONTH_RAISE_USD, MonthBudget
from core.rules.run_log import RUN_LOG_PAGE
from core.rules.schedule import next_fire, parse_schedule
from core.rules.service import RuleService
from core.rules.stored_schedule import rule_view, stored_schedule
from core.rules.validation import (
    check_instruction,
    check_kind,
    check_mode,
    check_new_mode,
    check_title,
    check_trigger,
)
from core.rules.views import ObserveReady, PausedRule, RuleVersionView, RuleView, RunLogEntry
from core.store import rules as rule_rows
from core.store.database import Database
from core.store.rules import SCHEDULE_TRIGGER, RuleChanges, RuleRecord
from core.translations import Language

log = logging.getLogger(__name__)


class ScheduleWatch(Protocol):
    """Re-arms the one timer after a schedule changed (the Scheduler)."""

    async def recompute(self, reason: str = "") -> None: ...


class RunStarter(Protocol):
    """Starts a person's run of a rule now, in its mode (the RuleRunner). ConflictError while one is live."""

    async def run_now(self, rule_id: str) -> str: ...


class RuleCommands:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        bots: BotService,
        rules: RuleService,
        *,
        schedule: ScheduleWatch,
        runs: RunStarter,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._bots = bots
        self._rules = rules
        self._schedule = schedule
        self._runs = runs

    # ---- commands -----------------------------------------------------------------------------------

    async def run_now(self, rule_id: str) -> str:
        """Run the rule now, in its mode; returns the run id. ConflictError while a run of it is live."""
        return await self._runs.run_now(rule_id)

    async def create(
        self,
        *,
        bot_id: str | None,
        title: str,
        instruction: str,
        schedule: object,
        kind: str = "check",
        mode: str = "act",
        conversation_id: str | None = None,
        trigger: object = None,
        lang: Language = "zh",
    ) -> RuleView:
        """A new rule at version 1, in `act` unless the person asked to watch first (`observe`).

        Results go to `conversation_id`, else to the bot's most recent conversation, else to a new one.
        `trigger` is `{kind: "schedule"}` (the default) or `{kind: "event", source, filter?}`; an event rule
        never fires from its schedule (EventTriggers starts it)."""
        checked_title = check_title(title)
        checked_trigger = check_trigger(trigger) if trigger is not None else dict(SCHEDULE_TRIGGER)
        checked_instruction = check_instruction(instruction)
        checked_kind = check_kind(kind)
        checked_mode = check_new_mode(check_mode(mode, checked_kind))
        now = self._clock.time()
        # The zone is the system's when the rule is made, and stays with the rule (docs/runs.md#schedules).
        parsed = parse_schedule(schedule, default_tz=local_zone(), now=now)
        bot = await self._bots.get(bot_id) if bot_id else await self._bots.ensure_default()
        destination = await conversation_for(self._db, self._bus, self._clock, bot.id, conversation_id)
        rule_id = new_id("ru")
        next_run = (next_fire(parsed, now) or 0.0) if checked_trigger["kind"] == "schedule" else 0.0

        def insert(s: Session) -> RuleRecord:
            record = rule_rows.insert_rule(
                s,
                id=rule_id,
                bot_id=bot.id,
                conversation_id=destination,
                title=checked_title,
                instruction=checked_instruction,
                schedule=parsed.to_json(),
                tz=parsed.tz,
                kind=checked_kind,
                mode=checked_mode,
                next_run_at=next_run,
                now=now,
                trigger=checked_trigger,
            )
            rule_rows.insert_version(s, rule_id=rule_id, version=1, instruction=checked_instruction, now=now)
            return record

        record = await self._db.write(insert)
        await self._changed(rule_id)
        return rule_view(record, lang)

    async def update(
        self,
        rule_id: str,
        *,
        title: str | None = None,
        instruction: str | None = None,
        schedule: object = None,
        mode: str | None = None,
        trigger: object = None,
        lang: Language = "zh",
    ) -> RuleView:
        """Change what is given. New words are a new version (the mode stays); a new schedule, or turning an
        `off` rule back on, counts the next run from now, so nothing missed meanwhile fires late. An event
        trigger takes the rule off the timer; a schedule trigger puts it back on."""
        rule = await self._rules.rule(rule_id)
        now = self._clock.time()
        changes: RuleChanges = {}
        if trigger is not None:
            checked_trigger = check_trigger(trigger)
            if checked_trigger != rule.trigger:
                changes["trigger"] = checked_trigger
        if title is not None:
            changes["title"] = check_title(title)
        checked_instruction = check_instruction(instruction) if instruction is not None else None
        if mode is not None:
            changes["mode"] = check_mode(mode, rule.kind)
        if schedule is not None:
            # A rule keeps its zone unless the new schedule names another.
            parsed = parse_schedule(schedule, default_tz=rule.tz, now=now)
            changes["schedule"] = parsed.to_json()
            changes["tz"] = parsed.tz
            changes["next_run_at"] = next_fire(parsed, now) or 0.0
        elif (rule.mode == "off" and changes.get("mode", "off") != "off") or "trigger" in changes:
            changes["next_run_at"] = next_fire(stored_schedule(rule), now) or 0.0
        if changes.get("trigger", rule.trigger).get("kind") == "event" and "next_run_at" in changes:
            changes["next_run_at"] = 0.0  # an event rule never fires from its schedule
        if not changes and (checked_instruction is None or checked_instruction == rule.instruction):
            return rule_view(rule, lang)

        def apply(s: Session) -> RuleRecord:
            # Read again inside the write: the version must follow the stored one, not the one read above.
            current = rule_rows.get_rule(s, rule_id)
            if current is None:
                raise NotFoundError("rule", rule_id)
            values = changes.copy()
            if checked_instruction is not None and checked_instruction != current.instruction:
                version = current.version + 1
                values["instruction"] = checked_instruction
                values["version"] = version
                rule_rows.insert_version(
                    s, rule_id=rule_id, version=version, instruction=checked_instruction, now=now
                )
            return rule_rows.update_rule(s, rule_id, now=now, **values)

        record = await self._db.write(apply)
        await self._changed(rule_id)
        return rule_view(record, lang)

    async def turn_off(self, rule_id: str) -> RuleView:
        """Stop a rule from running (the `/tasks stop` of a chat platform): its mode becomes `off`."""
        return await self.update(rule_id, mode="off")

    async def delete(self, rule_id: str) -> None:
        """Delete the rule with its versions and its run log."""
        deleted = await self._db.write(lambda s: rule_rows.delete_rule(s, rule_id))
        if not deleted:
            raise NotFoundError("rule", rule_id)
        await self._changed(rule_id)

    async def resume(self, rule_id: str) -> str:
        """A person's 重试 on a rule paused after failures: it may run again (the failure count starts over,
        the next run counts from now) and runs at once. Returns the run id."""
        now = self._clock.time()

        def apply(s: Session) -> RuleRecord:
            current = rule_rows.get_rule(s, rule_id)
            if current is None:
                raise NotFoundError("rule", rule_id)
            changes: RuleChanges = {"paused_reason": "", "failures_in_row": 0}
            if current.paused_reason == "budget":
                # 继续 on a rule paused at its monthly budget raises that budget, for later months too.
                changes = {
                    "paused_reason": "",
                    "month_budget_usd": current.month_budget_usd + MONTH_RAISE_USD,
                }
            if current.trigger.get("kind") != "event":
                changes["next_run_at"] = next_fire(stored_schedule(current), now) or 0.0
            rule_rows.update_rule(s, rule_id, now=now, **changes)
            return current

        before = await self._db.write(apply)
        await self._changed(rule_id)
        if before.paused_reason == "budget":
            return ""  # it goes on at its next time; running it now would spend what was just raised
        return await self.run_now(rule_id)

    async def acknowledge_observe(self, rule_id: str) -> RuleView:
        """继续观察: stop asking whether to act for the rule's current version (a new version asks again)."""
        now = self._clock.time()

        def apply(s: Session) -> RuleRecord:
            current = rule_rows.get_rule(s, rule_id)
            if current is None:
                raise NotFoundError("rule", rule_id)
            return rule_rows.update_rule(s, rule_id, now=now, observe_ack_version=current.version)

        record = await self._db.write(apply)
        self._bus.publish(RuleChanged(rule_id))
        return rule_view(record, "zh")

    # ---- reads (RuleService's) ------------------------------------------------------------------------

    async def get(self, rule_id: str, lang: Language = "zh") -> RuleView:
        return await self._rules.get(rule_id, lang)

    async def list_rules(self, bot_id: str | None = None, lang: Language = "zh") -> list[RuleView]:
        return await self._rules.list_rules(bot_id, lang)

    async def versions(self, rule_id: str) -> list[RuleVersionView]:
        return await self._rules.versions(rule_id)

    async def runs(
        self,
        rule_id: str,
        before: float | None = None,
        lang: Language = "zh",
        *,
        limit: int | None = RUN_LOG_PAGE,
    ) -> list[RunLogEntry]:
        return await self._rules.runs(rule_id, before, lang, limit=limit)

    async def export_markdown(self, rule_id: str, lang: Language = "zh") -> str:
        return await self._rules.export_markdown(rule_id, lang)

    def preview(
        self, schedule: object, *, after: float | None = None, count: int = 5, lang: Language = "zh"
    ) -> dict[str, object]:
        return self._rules.preview(schedule, after=after, count=count, lang=lang)

    async def paused(self) -> list[PausedRule]:
        return await self._rules.paused()

    async def observe_ready(self, lang: Language = "zh") -> list[ObserveReady]:
        return await self._rules.observe_ready(lang)

    async def rule_of_run(self, run_id: str) -> RuleRecord | None:
        return await self._rules.rule_of_run(run_id)

    async def bot_of_conversation(self, conversation_id: str) -> str | None:
        return await self._rules.bot_of_conversation(conversation_id)

    async def channel_of_conversation(self, conversation_id: str) -> str:
        return await self._rules.channel_of_conversation(conversation_id)

    async def check_month_budget(self, rule_id: str) -> MonthBudget:
        return await self._rules.check_month_budget(rule_id)

    async def record_outcome(self, rule_id: str, outcome: str) -> RuleView:
        return await self._rules.record_outcome(rule_id, outcome)

    # ---- helpers ------------------------------------------------------------------------------------

    async def _changed(self, rule_id: str) -> None:
        self._bus.publish(RuleChanged(rule_id))
        try:
            await self._schedule.recompute()
        except Exception:
            # The change is committed; a scheduler that failed to re-arm must not turn it into an error.
            log.exception("a schedule listener failed after rule %s changed", rule_id)

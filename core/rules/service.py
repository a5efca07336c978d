"""Rules (P3 §1, §4): standing instructions in the user's own words, with a schedule and a mode.

RuleService holds the commands and reads and is the only writer of `rules` and `rule_versions`. It checks
everything before it writes, so a bad request changes nothing. The scheduler (a later piece) listens with
`on_schedule_changed` and re-reads `next_run_at`; the service itself never fires a rule.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from sqlalchemy.orm import Session

from core.agent.sandbox import Preset
from core.bots.service import BotService
from core.bus import EventBus
from core.chat.destination import conversation_for
from core.chat.views import ActivityStep
from core.clock import Clock
from core.cost.meter import reached_budget
from core.delivery.outbox import local_zone
from core.errors import InvalidInputError, NotFoundError, UnavailableError, UnprocessableError
from core.events import RuleChanged
from core.ids import new_id
from core.rules.month import month_key, month_start, next_month_start
from core.rules.schedule import Schedule, iso_local, next_fire, parse_schedule, preview, words
from core.rules.views import ObserveReady, PausedRule, RuleVersionView, RuleView, RunLogEntry, run_line
from core.store import conversations as conv_rows
from core.store import rules as rule_rows
from core.store import runs as run_rows
from core.store.database import Database
from core.store.rules import SCHEDULE_TRIGGER, RuleChanges, RuleKind, RuleMode, RuleRecord
from core.store.runs import RunRecord

log = logging.getLogger(__name__)

TITLE_MAX = 80
INSTRUCTION_MAX = 4000
KINDS: tuple[RuleKind, ...] = ("check", "remind")
MODES: tuple[RuleMode, ...] = ("off", "observe", "act")

FAILURES_TO_PAUSE = 3
MONTH_RAISE_USD = 3.0  # 继续 on a rule paused at its monthly budget adds this much (P3 §8)


@dataclass(frozen=True, slots=True)
class MonthBudget:
    spent_usd: float
    budget_usd: float
    paused: bool  # this check paused the rule
    push: bool  # and it is the one pushed line for this month and budget level


# Good observed runs on one version before needs-you asks whether the rule should act (P3 §5).
OBSERVED_ENOUGH = 3
RUN_LOG_PAGE = 50
LOG_ON_LOOP = RUN_LOG_PAGE  # up to a page of run log entries is built on the loop; more in a thread

ScheduleListener = Callable[[], Awaitable[None]]


class RuleService:
    def __init__(self, db: Database, bus: EventBus, clock: Clock, bots: BotService) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._bots = bots
        self._schedule_listeners: list[ScheduleListener] = []
        self._start_run: Callable[[str], Awaitable[str]] | None = None

    def use_runner(self, run_now: Callable[[str], Awaitable[str]]) -> None:
        """How a person's 立即运行 starts a run (the RuleRunner's; the host wires it)."""
        self._start_run = run_now

    async def run_now(self, rule_id: str) -> str:
        """Run the rule now, in its mode; returns the run id. ConflictError while a run of it is live."""
        if self._start_run is None:
            raise UnavailableError("rules can't run yet: the host has not started")
        return await self._start_run(rule_id)

    def on_schedule_changed(self, listener: ScheduleListener) -> None:
        """Await `listener()` after every create, update and delete, so a scheduler can re-arm its timer."""
        self._schedule_listeners.append(listener)

    # ---- commands -----------------------------------------------------------------------------------

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
        lang: str = "zh",
    ) -> RuleView:
        """A new rule at version 1, in `act` unless the person asked to watch first (`observe`).

        Results go to `conversation_id`, else to the bot's most recent conversation, else to a new one.
        `trigger` is `{kind: "schedule"}` (the default) or `{kind: "event", source, filter?}`; an event rule
        never fires from its schedule (RuleEvents starts it)."""
        checked_title = _title(title)
        checked_trigger = _trigger(trigger) if trigger is not None else dict(SCHEDULE_TRIGGER)
        checked_instruction = _instruction(instruction)
        checked_kind = _kind(kind)
        checked_mode = _mode(mode, checked_kind)
        if checked_mode == "off":
            # Creating a rule that never runs is almost surely a mistake; it can be turned off afterwards.
            raise UnprocessableError("mode", "a new rule starts in act or observe; turn it off afterwards")
        now = self._clock.time()
        # The zone is the system's when the rule is made, and stays with the rule (P3 §4).
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
        return self._view(record, lang)

    async def update(
        self,
        rule_id: str,
        *,
        title: str | None = None,
        instruction: str | None = None,
        schedule: object = None,
        mode: str | None = None,
        trigger: object = None,
        lang: str = "zh",
    ) -> RuleView:
        """Change what is given. New words are a new version (the mode stays); a new schedule, or turning an
        `off` rule back on, counts the next run from now, so nothing missed meanwhile fires late. An event
        trigger takes the rule off the timer; a schedule trigger puts it back on."""
        rule = await self._rule(rule_id)
        now = self._clock.time()
        changes: RuleChanges = {}
        if trigger is not None:
            checked_trigger = _trigger(trigger)
            if checked_trigger != rule.trigger:
                changes["trigger"] = checked_trigger
        if title is not None:
            changes["title"] = _title(title)
        checked_instruction = _instruction(instruction) if instruction is not None else None
        if mode is not None:
            changes["mode"] = _mode(mode, rule.kind)
        if schedule is not None:
            # A rule keeps its zone unless the new schedule names another.
            parsed = parse_schedule(schedule, default_tz=rule.tz, now=now)
            changes["schedule"] = parsed.to_json()
            changes["tz"] = parsed.tz
            changes["next_run_at"] = next_fire(parsed, now) or 0.0
        elif (rule.mode == "off" and changes.get("mode", "off") != "off") or "trigger" in changes:
            changes["next_run_at"] = next_fire(self._schedule(rule), now) or 0.0
        if changes.get("trigger", rule.trigger).get("kind") == "event" and "next_run_at" in changes:
            changes["next_run_at"] = 0.0  # an event rule never fires from its schedule
        if not changes and (checked_instruction is None or checked_instruction == rule.instruction):
            return self._view(rule, lang)

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
        return self._view(record, lang)

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
                changes["next_run_at"] = next_fire(self._schedule(current), now) or 0.0
            rule_rows.update_rule(s, rule_id, now=now, **changes)
            return current

        before = await self._db.write(apply)
        await self._changed(rule_id)
        if before.paused_reason == "budget":
            return ""  # it goes on at its next time; running it now would spend what was just raised
        return await self.run_now(rule_id)

    async def check_month_budget(self, rule_id: str) -> MonthBudget:
        """After a run: at this month's budget the rule pauses (P3 §8). `push` says whether this pause is
        the one pushed line for this month and budget level (act-mode rules only)."""
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
            await self._changed(rule_id)
        return found

    async def resume_month_budgets(self) -> list[str]:
        """Rules paused at their monthly budget go on once their month's spend is under it again: on the
        1st in their zone, or after the budget was raised. Returns the rules that resumed."""
        now = self._clock.time()

        def apply(s: Session) -> list[str]:
            paused = [r for r in rule_rows.list_rules(s) if r.paused_reason == "budget"]
            costs = month_costs(s, paused, now)
            resumed: list[str] = []
            for rule in paused:
                if reached_budget(costs.get(rule.id, 0.0), rule.month_budget_usd):
                    continue
                changes: RuleChanges = {"paused_reason": ""}
                if rule.trigger.get("kind") != "event":
                    changes["next_run_at"] = next_fire(self._schedule(rule), now) or 0.0
                rule_rows.update_rule(s, rule.id, now=now, **changes)
                resumed.append(rule.id)
            return resumed

        resumed = await self._db.write(apply)
        for rule_id in resumed:
            self._bus.publish(RuleChanged(rule_id))
        return resumed

    async def next_budget_resume(self) -> float | None:
        """When the earliest rule paused at its monthly budget resumes: the next 1st in its zone."""
        now = self._clock.time()
        rules = await self._db.read(rule_rows.list_rules)
        starts = [next_month_start(now, r.tz) for r in rules if r.paused_reason == "budget"]
        return min(starts, default=None)

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
        return self._view(record, "zh")

    # ---- reads --------------------------------------------------------------------------------------

    async def bot_of_conversation(self, conversation_id: str) -> str | None:
        """The bot a conversation belongs to (the chat tool creates rules in the chat's conversation)."""
        record = await self._db.read(lambda s: conv_rows.get_conversation(s, conversation_id))
        return record.bot_id if record is not None else None

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

    async def observe_ready(self, lang: str = "zh") -> list[ObserveReady]:
        """Rules the person put in observe that have OBSERVED_ENOUGH good runs on their current version and
        whose question was not answered 继续观察 for it (P3 §5 "Switching modes")."""

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
                entry = _log_entry(latest, lang)
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

    async def get(self, rule_id: str, lang: str = "zh") -> RuleView:
        now = self._clock.time()

        def read(s: Session) -> tuple[RuleRecord, float] | None:
            rule = rule_rows.get_rule(s, rule_id)
            return None if rule is None else (rule, month_costs(s, [rule], now).get(rule_id, 0.0))

        found = await self._db.read(read)
        if found is None:
            raise NotFoundError("rule", rule_id)
        return self._view(found[0], lang, found[1])

    async def list_rules(self, bot_id: str | None = None, lang: str = "zh") -> list[RuleView]:
        """Newest first; one bot's when `bot_id` is given."""
        if bot_id is not None:
            await self._bots.get(bot_id)  # an unknown bot is a 404, not an empty list
        now = self._clock.time()

        def read(s: Session) -> tuple[list[RuleRecord], dict[str, float]]:
            records = rule_rows.list_rules(s, bot_id=bot_id)
            return records, month_costs(s, records, now)

        records, costs = await self._db.read(read)
        return [self._view(r, lang, costs.get(r.id, 0.0)) for r in records]

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
        self, rule_id: str, before: float | None = None, lang: str = "zh", *, limit: int | None = RUN_LOG_PAGE
    ) -> list[RunLogEntry]:
        """The rule's run log, newest first (P3 §5 "Auditing a rule"); runs queued before `before` only when
        given, `limit` at a time (None: all of it)."""

        def read(s: Session) -> tuple[RuleRecord, list[RunRecord]] | None:
            rule = rule_rows.get_rule(s, rule_id)
            if rule is None:
                return None
            return rule, run_rows.runs_of_rule(s, rule_id, before=before, limit=limit)

        found = await self._db.read(read)
        if found is None:
            raise NotFoundError("rule", rule_id)
        rule, records = found
        bot_preset = ""
        if not rule.granted_preset and any(run.mode == "act" for run in records):
            try:
                bot_preset = (await self._bots.get(rule.bot_id)).preset
            except NotFoundError:
                bot_preset = ""  # the bot is gone: say the default cap
        granted = rule.granted_preset

        def entries() -> list[RunLogEntry]:
            return [_log_entry(run, lang, granted=granted, bot_preset=bot_preset) for run in records]

        # Each entry parses its run's steps: a whole log (an export; a rule every 15 minutes has thousands of
        # runs) takes long enough to stall the loop, so a long one is built off it.
        return await asyncio.to_thread(entries) if len(records) > LOG_ON_LOOP else entries()

    async def export_markdown(self, rule_id: str, lang: str = "zh") -> str:
        """The rule, its versions and its whole run log as Markdown (P3 §6), secrets redacted."""
        from core.export.rule_markdown import rule_markdown

        rule = await self.get(rule_id, lang)
        versions = await self.versions(rule_id)
        log = await self.runs(rule_id, lang=lang, limit=None)
        # Rendered off the loop: a long run log takes a couple of hundred milliseconds.
        now = self._clock.time()
        return await asyncio.to_thread(rule_markdown, rule, versions, log, lang=lang, exported_at=now)

    def preview(
        self, schedule: object, *, after: float | None = None, count: int = 5, lang: str = "zh"
    ) -> dict[str, object]:
        """The schedule in words and its next `count` times strictly after `after` (default now), for a
        person to confirm before saving. Nothing is stored."""
        start = self._clock.time() if after is None else after
        return preview(schedule, default_tz=local_zone(), after=start, count=count, lang=lang)

    # ---- what the scheduler and the rule runner write ------------------------------------------------

    async def record_outcome(self, rule_id: str, outcome: str) -> RuleView:
        """A run ended: `done` resets the failure count, `failed` adds one, and the third failure in a row
        pauses the rule (P3 §1). Skipped, stopped and interrupted runs count neither way."""
        now = self._clock.time()

        def apply(s: Session) -> RuleRecord:
            current = rule_rows.get_rule(s, rule_id)
            if current is None:
                raise NotFoundError("rule", rule_id)
            if outcome == "done" and current.failures_in_row:
                return rule_rows.update_rule(s, rule_id, now=now, failures_in_row=0)
            if outcome in ("failed", "budget"):  # a run over its budget counts as a failure (P3 §8)
                failures = current.failures_in_row + 1
                if failures >= FAILURES_TO_PAUSE and not current.paused_reason:
                    return rule_rows.update_rule(
                        s, rule_id, now=now, failures_in_row=failures, paused_reason="failures"
                    )
                return rule_rows.update_rule(s, rule_id, now=now, failures_in_row=failures)
            return current

        record = await self._db.write(apply)
        self._bus.publish(RuleChanged(rule_id))
        return self._view(record, "zh")

    # ---- helpers ------------------------------------------------------------------------------------

    async def _rule(self, rule_id: str) -> RuleRecord:
        record = await self._db.read(lambda s: rule_rows.get_rule(s, rule_id))
        if record is None:
            raise NotFoundError("rule", rule_id)
        return record

    async def _changed(self, rule_id: str) -> None:
        self._bus.publish(RuleChanged(rule_id))
        for listener in list(self._schedule_listeners):
            try:
                await listener()
            except Exception:
                # The change is committed; a scheduler that failed to re-arm must not turn it into an error.
                log.exception("a schedule listener failed after rule %s changed", rule_id)

    def _schedule(self, rule: RuleRecord) -> Schedule:
        # Stored schedules were checked when written; `now=None` because a once rule's time may have passed.
        return parse_schedule(rule.schedule, default_tz=rule.tz)

    def _view(self, rule: RuleRecord, lang: str, month_cost: float = 0.0) -> RuleView:
        try:
            schedule_words = words(self._schedule(rule), lang)
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


def month_costs(s: Session, rules: list[RuleRecord], now: float) -> dict[str, float]:
    """Each rule's estimated cost in its own current calendar month (P3 §8), in one query."""
    if not rules:
        return {}
    starts = {r.id: month_start(now, r.tz) for r in rules}
    found = run_rows.rule_costs_since(s, list(starts), min(starts.values()))
    return {
        rule_id: sum(cost for queued_at, cost in runs if queued_at >= starts[rule_id])
        for rule_id, runs in found.items()
    }


def _title(value: str) -> str:
    title = value.strip()
    if not 1 <= len(title) <= TITLE_MAX:
        raise InvalidInputError("title", f"must be 1 to {TITLE_MAX} characters")
    return title


def _instruction(value: str) -> str:
    # Kept verbatim (P3 §4: the user's words); only its emptiness and size are checked.
    if not value.strip():
        raise InvalidInputError("instruction", "must be non-empty: the user's words for what to do")
    if len(value) > INSTRUCTION_MAX:
        raise InvalidInputError("instruction", f"must be at most {INSTRUCTION_MAX} characters")
    return value


def _trigger(value: object) -> dict[str, object]:
    """`{kind: "schedule"}` or `{kind: "event", source, filter?}` (P3 §4 "Triggers"), checked."""
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            "trigger", 'must be an object: {"kind": "schedule"} or {"kind": "event", "source": ...}'
        )
    kind = value.get("kind")
    if kind == "schedule":
        extra = sorted(str(k) for k in value if k != "kind")
        if extra:
            raise InvalidInputError(f"trigger.{extra[0]}", "is not used by a schedule trigger; remove it")
        return dict(SCHEDULE_TRIGGER)
    if kind != "event":
        raise InvalidInputError("trigger.kind", f"must be schedule or event, not {kind!r}")
    unknown = sorted(str(k) for k in value if k not in ("kind", "source", "filter"))
    if unknown:
        raise InvalidInputError(f"trigger.{unknown[0]}", "is not a trigger field; use kind, source, filter")
    source = value.get("source")
    if not isinstance(source, str) or not source.strip():
        raise InvalidInputError("trigger.source", "an event trigger needs a non-empty source")
    checked: dict[str, object] = {"kind": "event", "source": source.strip()}
    event_filter = value.get("filter")
    if event_filter is not None:
        if not isinstance(event_filter, Mapping) or not all(isinstance(k, str) for k in event_filter):
            raise InvalidInputError("trigger.filter", "must be an object of field -> expected value")
        checked["filter"] = dict(event_filter)
    return checked


def _kind(value: str) -> RuleKind:
    for kind in KINDS:
        if value == kind:
            return kind
    raise InvalidInputError("kind", f"must be one of {', '.join(KINDS)}, not {value!r}")


def _mode(value: str, kind: RuleKind) -> RuleMode:
    for mode in MODES:
        if value == mode:
            if kind == "remind" and mode == "observe":
                # A reminder only delivers a fixed text: watching it first would mean never reminding.
                raise UnprocessableError("mode", "a reminder always acts; use act (or off), not observe")
            return mode
    raise InvalidInputError("mode", f"must be one of {', '.join(MODES)}, not {value!r}")


_PRESET_ORDER = (Preset.READ_ONLY, Preset.WORKSPACE_WRITE, Preset.FULL)


def _run_permission(mode: str, granted: str, bot_preset: str) -> str:
    """The preset a run had (P3 §7): observe is always read-only; act has the rule's grant when set, else
    workspace-write *capped* by the bot's preset, i.e. min(bot preset, workspace-write), so a read-only
    bot's rule stays read-only and a full bot's rule gets no more than workspace-write. (The same cap as
    `core.rules.runner.act_preset`, which imports this module, so it is not imported here.) It is worked out
    from the rule and bot as they are now: a run's record does not keep the preset it ran with."""
    if mode != "act":
        return Preset.READ_ONLY.value
    if granted:
        return granted
    try:
        bot = Preset.parse(bot_preset)
    except ValueError:
        return Preset.WORKSPACE_WRITE.value
    return min(bot, Preset.WORKSPACE_WRITE, key=_PRESET_ORDER.index).value


def _run_steps(activity: list[dict[str, object]]) -> tuple[ActivityStep, ...]:
    steps = []
    for item in activity:
        if isinstance(item, dict):
            try:
                steps.append(ActivityStep.from_json(item))
            except (TypeError, ValueError):
                continue  # one unreadable step does not hide the others
    return tuple(steps)


def _log_entry(run: RunRecord, lang: str, *, granted: str = "", bot_preset: str = "") -> RunLogEntry:
    report: dict[str, object] | None = None
    if run.report:
        try:
            decoded = json.loads(run.report)
        except ValueError:
            decoded = None
        report = decoded if isinstance(decoded, dict) else None
    said = ""
    would_do = ""
    if report is not None:
        would_do = str(report.get("would") or "")
        if run.mode == "act" and run.outcome == "done":
            said = str(report.get("message") or "")
    return RunLogEntry(
        id=run.id,
        time=run.started_at or run.queued_at,
        mode=run.mode,
        cause=run.cause,
        state=run.state,
        outcome=run.outcome,
        version=run.rule_version,
        line=run_line(
            state=run.state,
            outcome=run.outcome,
            mode=run.mode,
            reason=run.error,
            said=said,
            would=run.would,
            would_do=would_do,
            lang=lang,
        ),
        reason=run.error,
        said=said,
        would=run.would,
        report=report,
        cost_usd=run.cost_usd,
        permission=_run_permission(run.mode, granted, bot_preset),
        steps=_run_steps(run.activity),
    )

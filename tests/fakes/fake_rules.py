"""An in-memory RuleFacade for UI tests and renders.

It checks what the real rule commands check for the fields the editor sends: title, instruction, kind and
mode through the real `core.rules.validation`, the whole schedule through the real `core.rules.schedule`.
So a refused field carries the same name (`schedule.minutes`, ...), and schedule words and previews are
the real ones. Each change is announced with RuleChanged on the bus. Its run log holds real `RunLogEntry`
rows a test adds with `add_run`, and 立即运行 is recorded in `run_now_calls`.

Costs (issue 7): a rule carries this month's cost and its budgets (`add_rule(month_cost_usd=...)`,
`set_month_cost`); `export_markdown` gives a small document (or `markdown` when a test sets it), records
each call in `exports` and raises `export_error` when a test sets one.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import replace
from typing import Any

from core.activity_steps import ActivityStep
from core.bus import EventBus
from core.changes import RuleChanged
from core.errors import NotFoundError
from core.rules.schedule import Schedule, fire_times, iso_local, next_fire, parse_schedule, words
from core.rules.validation import check_instruction, check_kind, check_mode, check_new_mode, check_title
from core.rules.views import RuleView, RunLogEntry

DEFAULT_TZ = "Asia/Shanghai"


class FakeRuleFacade:
    def __init__(self, bus: EventBus | None = None, tz: str = DEFAULT_TZ, now: float | None = None) -> None:
        self._runs: dict[str, list[RunLogEntry]] = {}
        self._run_ids = itertools.count(1)
        self.run_now_calls: list[str] = []
        self.bus = bus or EventBus()
        self.tz = tz
        # A fixed "now" keeps renders and previews stable; None follows the wall clock.
        self._now = now
        self._rules: dict[str, RuleView] = {}
        self._ids = itertools.count(1)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.exports: list[tuple[str, str]] = []  # (rule id, lang)
        self.export_error: Exception | None = None
        self.markdown: str | None = None  # what export_markdown gives when set

    def now(self) -> float:
        return self._now if self._now is not None else time.time()

    # ---- what tests set up ---------------------------------------------------------------------------

    def add_rule(
        self,
        title: str,
        instruction: str = "",
        schedule: dict[str, object] | None = None,
        *,
        bot_id: str = "bot-1",
        mode: str = "act",
        kind: str = "check",
        paused_reason: str = "",
        version: int = 1,
        next_run_at: float | None = None,
        month_cost_usd: float = 0.0,
        month_budget_usd: float = 3.0,
        run_budget_usd: float = 0.10,
    ) -> RuleView:
        """A rule as if it had been made earlier (no checks beyond the schedule's); announced on the bus."""
        parsed = parse_schedule(schedule or {"kind": "daily", "time": "08:00"}, default_tz=self.tz)
        rule_id = f"ru_{next(self._ids):012x}"
        now = self.now()
        view = self._view(
            rule_id,
            bot_id=bot_id,
            title=title,
            instruction=instruction or title,
            kind=kind,
            mode=mode,
            parsed=parsed,
            version=version,
            paused_reason=paused_reason,
            created_at=now + len(self._rules) / 1000,  # later additions are newer: listed first
            next_run_at=next_run_at,
        )
        view = replace(
            view,
            month_cost_usd=month_cost_usd,
            month_budget_usd=month_budget_usd,
            run_budget_usd=run_budget_usd,
        )
        self._rules[rule_id] = view
        self.bus.publish(RuleChanged(rule_id))
        return view

    def set_paused(self, rule_id: str, reason: str) -> None:
        self._rules[rule_id] = replace(self._rules[rule_id], paused_reason=reason)
        self.bus.publish(RuleChanged(rule_id))

    def set_month_cost(
        self, rule_id: str, month_cost_usd: float, month_budget_usd: float | None = None
    ) -> None:
        rule = self._rules[rule_id]
        budget = rule.month_budget_usd if month_budget_usd is None else month_budget_usd
        self._rules[rule_id] = replace(rule, month_cost_usd=month_cost_usd, month_budget_usd=budget)
        self.bus.publish(RuleChanged(rule_id))

    # ---- the facade ----------------------------------------------------------------------------------

    async def list_rules(self, bot_id: str | None = None, lang: str = "zh") -> list[RuleView]:
        found = [r for r in self._rules.values() if bot_id is None or r.bot_id == bot_id]
        return [self._in(r, lang) for r in sorted(found, key=lambda r: -r.created_at)]

    async def get(self, rule_id: str, lang: str = "zh") -> RuleView:
        return self._in(self._rule(rule_id), lang)

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
        lang: str = "zh",
    ) -> RuleView:
        self.calls.append(
            (
                "create",
                {
                    "bot_id": bot_id,
                    "title": title,
                    "instruction": instruction,
                    "schedule": schedule,
                    "kind": kind,
                    "mode": mode,
                },
            )
        )
        checked_title = check_title(title)
        check_instruction(instruction)
        check_new_mode(check_mode(mode, check_kind(kind)))
        parsed = parse_schedule(schedule, default_tz=self.tz, now=self.now())
        rule_id = f"ru_{next(self._ids):012x}"
        view = self._view(
            rule_id,
            bot_id=bot_id or "bot-1",
            title=checked_title,
            instruction=instruction,
            kind=kind,
            mode=mode,
            parsed=parsed,
            version=1,
            paused_reason="",
            created_at=self.now(),
        )
        self._rules[rule_id] = view
        self.bus.publish(RuleChanged(rule_id))
        return self._in(view, lang)

    async def update(
        self,
        rule_id: str,
        *,
        title: str | None = None,
        instruction: str | None = None,
        schedule: object = None,
        mode: str | None = None,
        lang: str = "zh",
    ) -> RuleView:
        self.calls.append(
            (
                "update",
                {
                    "rule_id": rule_id,
                    "title": title,
                    "instruction": instruction,
                    "schedule": schedule,
                    "mode": mode,
                },
            )
        )
        rule = self._rule(rule_id)
        changes: dict[str, Any] = {}
        if title is not None:
            changes["title"] = check_title(title)
        if instruction is not None:
            check_instruction(instruction)
            if instruction != rule.instruction:
                changes["instruction"] = instruction
                changes["version"] = rule.version + 1  # new words are a new version; the mode stays
        if mode is not None:
            changes["mode"] = check_mode(mode, rule.kind)
        if schedule is not None:
            parsed = parse_schedule(schedule, default_tz=rule.tz, now=self.now())
            fire = next_fire(parsed, self.now()) or 0.0
            changes.update(
                schedule=parsed.to_json(),
                tz=parsed.tz,
                next_run_at=fire,
                next_run_iso=iso_local(fire, parsed.tz) if fire else "",
            )
        if not changes:
            return self._in(rule, lang)
        self._rules[rule_id] = replace(rule, updated_at=self.now(), **changes)
        self.bus.publish(RuleChanged(rule_id))
        return self._in(self._rules[rule_id], lang)

    async def delete(self, rule_id: str) -> None:
        self.calls.append(("delete", {"rule_id": rule_id}))
        self._rule(rule_id)
        del self._rules[rule_id]
        self.bus.publish(RuleChanged(rule_id))

    def preview(
        self, schedule: object, *, after: float | None = None, count: int = 5, lang: str = "zh"
    ) -> dict[str, object]:
        start = self.now() if after is None else after
        parsed = parse_schedule(schedule, default_tz=self.tz, now=start)
        return {
            "words": words(parsed, lang),
            "next": [iso_local(ts, parsed.tz) for ts in fire_times(parsed, start, count)],
        }

    async def export_markdown(self, rule_id: str, lang: str = "zh") -> str:
        self.exports.append((rule_id, lang))
        if self.export_error is not None:
            raise self.export_error
        rule = self._rule(rule_id)
        if self.markdown is not None:
            return self.markdown
        return f"# {rule.title}\n\n> {rule.instruction}\n\n- this month: ${rule.month_cost_usd:.2f}\n"

    # ---- helpers -------------------------------------------------------------------------------------

    def _rule(self, rule_id: str) -> RuleView:
        rule = self._rules.get(rule_id)
        if rule is None:
            raise NotFoundError("rule", rule_id)
        return rule

    def _in(self, rule: RuleView, lang: str) -> RuleView:
        # The words follow the reader's language, as the service builds them per read.
        parsed = parse_schedule(rule.schedule, default_tz=rule.tz)
        return replace(rule, schedule_words=words(parsed, lang))

    def _view(
        self,
        rule_id: str,
        *,
        bot_id: str,
        title: str,
        instruction: str,
        kind: str,
        mode: str,
        parsed: Schedule,
        version: int,
        paused_reason: str,
        created_at: float,
        next_run_at: float | None = None,
    ) -> RuleView:
        fire = next_run_at if next_run_at is not None else (next_fire(parsed, self.now()) or 0.0)
        return RuleView(
            id=rule_id,
            bot_id=bot_id,
            conversation_id="",
            title=title,
            instruction=instruction,
            kind=kind,
            mode=mode,
            schedule=parsed.to_json(),
            schedule_words=words(parsed, "zh"),
            tz=parsed.tz,
            version=version,
            next_run_at=fire,
            next_run_iso=iso_local(fire, parsed.tz) if fire else "",
            paused_reason=paused_reason,
            created_at=created_at,
            updated_at=created_at,
        )

    def add_run(
        self,
        rule_id: str,
        at: float,
        *,
        mode: str = "observe",
        outcome: str = "done",
        state: str = "ended",
        said: str = "",
        would: str = "",
        reason: str = "",
        cost_usd: float = 0.0,
        version: int = 1,
        line: str = "",
        report: dict[str, Any] | None = None,
        permission: str = "",
        steps: tuple[ActivityStep, ...] = (),
    ) -> RunLogEntry:
        """A run in the log. `line` is left empty unless given, so the detail's own wording is what tests
        see; the permission follows the mode (observe: read-only, act: workspace-write) unless given."""
        made = RunLogEntry(
            id=f"rr_{next(self._run_ids):04d}",
            time=at,
            mode=mode,
            cause="schedule",
            state=state,
            outcome=outcome,
            version=version,
            line=line,
            reason=reason,
            said=said,
            would=would,
            report=report,
            cost_usd=cost_usd,
            permission=permission or ("read-only" if mode == "observe" else "workspace-write"),
            steps=steps,
        )
        self._runs.setdefault(rule_id, []).append(made)
        self.bus.publish(RuleChanged(rule_id))
        return made

    async def runs(self, rule_id: str, before: float | None = None, lang: str = "zh") -> list[RunLogEntry]:
        """Newest first; only those started before `before` when given (the next page)."""
        self._rule(rule_id)
        found = [r for r in self._runs.get(rule_id, []) if before is None or r.time < before]
        return sorted(found, key=lambda r: -r.time)

    async def run_now(self, rule_id: str) -> str:
        self._rule(rule_id)
        self.run_now_calls.append(rule_id)
        return f"rr_now_{len(self.run_now_calls)}"

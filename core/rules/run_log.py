"""A rule's run log (docs/runs.md#the-run-log): one entry per run, newest first, with what it said or
would have said, what it cost, the preset it ran with and its steps."""

from __future__ import annotations

import asyncio
import json

from sqlalchemy.orm import Session

from core.activity_steps import ActivityStep
from core.agent.sandbox import Preset
from core.bots.service import BotService
from core.errors import NotFoundError
from core.rules.views import RunLogEntry, run_line
from core.store import rules as rule_rows
from core.store import runs as run_rows
from core.store.database import Database
from core.store.rules import RuleRecord
from core.store.runs import RunRecord
from core.translations import Language

RUN_LOG_PAGE = 50
LOG_ON_LOOP = RUN_LOG_PAGE  # up to a page of run log entries is built on the loop; more in a thread


class RunLog:
    def __init__(self, db: Database, bots: BotService) -> None:
        self._db = db
        self._bots = bots

    async def runs(
        self,
        rule_id: str,
        before: float | None = None,
        lang: Language = "zh",
        *,
        limit: int | None = RUN_LOG_PAGE,
    ) -> list[RunLogEntry]:
        """The rule's run log, newest first (docs/runs.md#the-run-log); runs queued before `before` only when
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
            return [log_entry(run, lang, granted=granted, bot_preset=bot_preset) for run in records]

        # Each entry parses its run's steps: a whole log (an export; a rule every 15 minutes has thousands of
        # runs) takes long enough to stall the loop, so a long one is built off it.
        return await asyncio.to_thread(entries) if len(records) > LOG_ON_LOOP else entries()


_PRESET_ORDER = (Preset.READ_ONLY, Preset.WORKSPACE_WRITE, Preset.FULL)


def run_permission(mode: str, granted: str, bot_preset: str) -> str:
    """The preset a run had (docs/permissions.md#who-gets-which-preset): observe is always read-only; act has
    the rule's grant when set, else workspace-write *capped* by the bot's preset, i.e. min(bot preset,
    workspace-write), so a read-only bot's rule stays read-only and a full bot's rule gets no more than
    workspace-write. (The same cap as `core.rules.runner.act_preset`, which imports the rule service, so it is
    not imported here.) It is worked out from the rule and bot as they are now: a run's record does not keep
    the preset it ran with."""
    if mode != "act":
        return Preset.READ_ONLY.value
    if granted:
        return granted
    try:
        bot = Preset.parse(bot_preset)
    except ValueError:
        return Preset.WORKSPACE_WRITE.value
    return min(bot, Preset.WORKSPACE_WRITE, key=_PRESET_ORDER.index).value


def run_steps(activity: list[dict[str, object]]) -> tuple[ActivityStep, ...]:
    steps = []
    for item in activity:
        if isinstance(item, dict):
            try:
                steps.append(ActivityStep.from_json(item))
            except (TypeError, ValueError):
                continue  # one unreadable step does not hide the others
    return tuple(steps)


def log_entry(run: RunRecord, lang: str, *, granted: str = "", bot_preset: str = "") -> RunLogEntry:
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
        permission=run_permission(run.mode, granted, bot_preset),
        steps=run_steps(run.activity),
    )

"""Event triggers (docs/runs.md#event-triggers): the extension point only. A rule whose trigger is
`{kind: "event", source, filter?}` is started by `EventTriggers.emit(source, event)` and runs through the same
observe/act path as a scheduled run, with cause `event`. No event source is built yet."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from core.errors import ConflictError, NotFoundError
from core.rules.runner import RuleRunner
from core.rules.service import RuleService
from core.rules.views import RuleView

log = logging.getLogger(__name__)


def matches(rule: RuleView, source: str, event: Mapping[str, object]) -> bool:
    """An event rule on `source` whose filter's every key has the expected value in `event`."""
    trigger = rule.trigger
    if trigger.get("kind") != "event" or trigger.get("source") != source:
        return False
    expected = trigger.get("filter") or {}
    if not isinstance(expected, Mapping):
        return False
    return all(key in event and event[key] == value for key, value in expected.items())


class EventTriggers:
    def __init__(self, rules: RuleService, runner: RuleRunner) -> None:
        self._rules = rules
        self._runner = runner

    async def emit(self, source: str, event: dict[str, object]) -> list[str]:
        """Start a run of every matching rule that is on (not off, not paused); returns the run ids. A rule
        whose previous run is still live is left out, as the scheduler would skip it."""
        started: list[str] = []
        for rule in await self._rules.list_rules():
            if rule.mode == "off" or rule.paused_reason or not matches(rule, source, event):
                continue
            try:
                started.append(await self._runner.fire_event(rule.id))
            except (ConflictError, NotFoundError) as exc:
                log.info("event %s: rule %s not started: %s", source, rule.id, exc.message)
        return started

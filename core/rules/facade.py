"""The reads and commands the desktop UI uses for rules. `RuleService` implements it; UI tests fake it.
The signatures mirror `core.rules.commands.RuleCommands` exactly."""

from __future__ import annotations

from typing import Protocol

from core.rules.views import RuleView, RunLogEntry
from core.translations import Language


class RuleFacade(Protocol):
    async def list_rules(self, bot_id: str | None = None, lang: Language = "zh") -> list[RuleView]:
        """Newest first; one bot's when `bot_id` is given (an unknown bot raises NotFoundError)."""
        ...

    async def get(self, rule_id: str, lang: Language = "zh") -> RuleView:
        """One rule. Raises NotFoundError when it is gone."""
        ...

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
        lang: Language = "zh",
    ) -> RuleView:
        """A new rule at version 1. Raises InvalidInputError naming the field (`schedule.minutes`, ...)."""
        ...

    async def update(
        self,
        rule_id: str,
        *,
        title: str | None = None,
        instruction: str | None = None,
        schedule: object = None,
        mode: str | None = None,
        lang: Language = "zh",
    ) -> RuleView:
        """Change what is given; new words are a new version and keep the mode."""
        ...

    async def delete(self, rule_id: str) -> None:
        """Delete the rule with its versions and run log. Raises NotFoundError."""
        ...

    def preview(
        self, schedule: object, *, after: float | None = None, count: int = 5, lang: Language = "zh"
    ) -> dict[str, object]:
        """{"words": the schedule in words, "next": the next `count` times as local ISO strings}. Raises
        InvalidInputError for a schedule that would be refused at save."""
        ...

    async def runs(
        self, rule_id: str, before: float | None = None, lang: Language = "zh"
    ) -> list[RunLogEntry]:
        """The run log, newest first; only runs queued before `before` when given (the next page)."""
        ...

    async def run_now(self, rule_id: str) -> str:
        """Start a run now, whatever the schedule says; the new run's id. Raises NotFoundError."""
        ...

    async def export_markdown(self, rule_id: str, lang: Language = "zh") -> str:
        """The rule and its run log as a Markdown document, secrets redacted. Raises NotFoundError."""
        ...

"""The reads and commands the desktop UI uses for rules. `RuleService` implements it; UI tests fake it.
The signatures mirror `core.rules.commands.RuleCommands` exactly.

The run log (`runs`) and 立即运行 (`run_now`) are not part of the protocol: they arrive with rule runs, and
the rule detail shows them only when the object it was given has them, so the UI works with either."""

from __future__ import annotations

from typing import Protocol

from core.rules.views import RuleView


class RuleFacade(Protocol):
    async def list_rules(self, bot_id: str | None = None, lang: str = "zh") -> list[RuleView]:
        """Newest first; one bot's when `bot_id` is given (an unknown bot raises NotFoundError)."""
        ...

    async def get(self, rule_id: str, lang: str = "zh") -> RuleView:
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
        lang: str = "zh",
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
        lang: str = "zh",
    ) -> RuleView:
        """Change what is given; new words are a new version and keep the mode."""
        ...

    async def delete(self, rule_id: str) -> None:
        """Delete the rule with its versions and run log. Raises NotFoundError."""
        ...

    def preview(
        self, schedule: object, *, after: float | None = None, count: int = 5, lang: str = "zh"
    ) -> dict[str, object]:
        """{"words": the schedule in words, "next": the next `count` times as local ISO strings}. Raises
        InvalidInputError for a schedule that would be refused at save."""
        ...

    async def export_markdown(self, rule_id: str, lang: str = "zh") -> str:
        """The rule and its run log as a Markdown document, secrets redacted. Raises NotFoundError."""
        ...

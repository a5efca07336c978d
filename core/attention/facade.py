"""The reads and commands the desktop UI uses for the needs-you list. `AttentionService` implements it; UI
tests fake it. The signatures mirror `core.attention.service.AttentionService` exactly."""

from __future__ import annotations

from typing import Any, Protocol

from core.attention.items import AttentionItem
from core.translations import Language


class AttentionFacade(Protocol):
    async def items(self, lang: Language = "zh") -> list[AttentionItem]:
        """Everything that waits for a person, in the needs-you order, worded in `lang`."""
        ...

    async def act(self, item_id: str, action: str, body: dict[str, Any]) -> dict[str, Any]:
        """Take `action` on one item (`answer` takes `{"answer": text}`). Raises NotFoundError when the item
        is gone, ConflictError for an action it doesn't offer, UnprocessableError for a bad answer."""
        ...

"""The reads and commands the desktop UI uses for a bot's MCP servers (docs/outside-tools.md). `McpService`
implements it; UI tests fake it."""

from __future__ import annotations

from typing import Protocol

from core.mcp.views import McpView


class McpFacade(Protocol):
    async def view(self, bot_id: str) -> McpView:
        """The bot's config (secrets as ********) and each server's state.
        NotFoundError for an unknown bot."""
        ...

    async def replace_text(self, bot_id: str, text: str) -> McpView:
        """Save what the person pasted, whole. InvalidInputError naming the field to fix (nothing saved);
        UnavailableError when a secret has to be stored and no keyring works."""
        ...

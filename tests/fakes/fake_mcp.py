"""An `McpFacade` for UI tests: the config is checked and shown with core's own code (core.mcp.config), and a
test sets each server's state itself. Every change is an McpServersChanged on the bus, as the real service
announces it."""

from __future__ import annotations

from typing import Any

from core.bus import EventBus
from core.changes import McpServersChanged
from core.errors import NotFoundError
from core.mcp.config import McpServerConfig, config_json, parse_servers, servers_body
from core.mcp.views import McpView, ServerState, ServerStatus


class FakeMcp:
    def __init__(self, bus: EventBus, bot_id: str = "bot-1") -> None:
        self._bus = bus
        self._bot_id = bot_id
        self.configs: list[McpServerConfig] = []
        self.states: dict[str, ServerStatus] = {}
        self.saved: list[dict[str, Any]] = []

    async def view(self, bot_id: str) -> McpView:
        if bot_id != self._bot_id:
            raise NotFoundError("bot", bot_id)
        servers = tuple(
            self.states.get(c.name, ServerStatus(c.name, "stopped", "", (), (), 0)) for c in self.configs
        )
        return McpView(bot_id, config_json(self.configs), servers)

    async def replace_text(self, bot_id: str, text: str) -> McpView:
        body = servers_body(text)
        self.configs = parse_servers(body)
        self.saved.append(body)
        self._bus.publish(McpServersChanged(bot_id))
        return await self.view(bot_id)

    def set_state(
        self, name: str, state: ServerState, reason: str = "", stderr: tuple[str, ...] = (), tools: int = 0
    ) -> None:
        self.states[name] = ServerStatus(name, state, reason, stderr, tuple(f"t{i}" for i in range(tools)), 0)
        self._bus.publish(McpServersChanged(self._bot_id))

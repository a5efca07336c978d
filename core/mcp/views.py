"""What the settings page and the API show of a bot's MCP servers (docs/outside-tools.md#a-servers-life)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ServerState = Literal["stopped", "starting", "running", "failed"]


@dataclass(frozen=True, slots=True)
class ServerStatus:
    name: str
    state: ServerState
    reason: str  # failed: why; starting again: why it stopped and when it is tried again
    stderr_tail: tuple[str, ...]
    tools: tuple[str, ...]
    attempts: int


@dataclass(frozen=True, slots=True)
class McpView:
    bot_id: str
    config: dict[str, Any]  # {"mcpServers": {...}} with secrets as KEPT_SECRET
    servers: tuple[ServerStatus, ...]

"""A bot's MCP connections, and one session's view of their tools (docs/outside-tools.md#what-the-model-sees).

A session asks before every model request whether its tools changed (`version`), so a server that became
ready, listed new tools or stopped is reflected at the next step. At the first request of a turn it waits
a little (`settle`) for servers that only just began to start."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Hashable, Sequence

from core.agent.tool_api import ToolSpec
from core.mcp.config import KEPT_SECRET, McpServerConfig
from core.mcp.connection import McpConnection
from core.mcp.tools import tool_spec

# How long a turn's first request waits for a server that is starting: long enough for most local servers,
# short enough that a person who wrote to the bot does not wait on a slow `npx` download.
SETTLE_S = 3.0


class BotServers:
    def __init__(self, bot_id: str, connect: Callable[[McpServerConfig], McpConnection]) -> None:
        self.bot_id = bot_id
        self._connect = connect
        self.connections: dict[str, McpConnection] = {}
        self.generation = 0  # bumped when the set of servers or their settings change
        self._specs: dict[tuple[int, int], tuple[ToolSpec, ...]] = {}

    @property
    def configs(self) -> list[McpServerConfig]:
        return [c.config for c in self.connections.values()]

    async def reconcile(self, configs: Sequence[McpServerConfig]) -> None:
        """Make the connections match `configs`: a server whose start is unchanged keeps running with its new
        settings; one that changed starts again (if it was running); one that went is stopped."""
        old = self.connections
        new: dict[str, McpConnection] = {}
        stopping: list[McpConnection] = []
        for config in configs:
            kept = _stored(config)
            current = old.get(config.name)
            if current is not None and current.config.same_launch(config):
                current.update_config(kept)
                new[config.name] = current
                continue
            connection = self._connect(kept)
            new[config.name] = connection
            if current is not None:
                stopping.append(current)
                if current.state != "stopped":
                    connection.ensure_started()  # it was in use: its new settings take effect now
        stopping.extend(c for name, c in old.items() if name not in new)
        self.connections = new
        self.generation += 1
        self._specs.clear()
        await asyncio.gather(*(c.stop() for c in stopping))

    def tool_specs(self, connection: McpConnection) -> tuple[ToolSpec, ...]:
        key = (id(connection), connection.tools_version)
        specs = self._specs.get(key)
        if specs is None:
            specs = self._specs[key] = tuple(tool_spec(connection, t) for t in connection.tools)
        return specs

    async def stop_all(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.connections.values()))


class BotToolset:
    """The `OutsideTools` of one session (core.agent.tool_api)."""

    def __init__(self, servers: BotServers, *, observing: bool) -> None:
        self._servers = servers
        # An observing rule run may only look: it gets the tools of servers marked read-only.
        self._observing = observing

    def _usable(self) -> list[McpConnection]:
        return [
            c
            for c in self._servers.connections.values()
            if not c.config.disabled and (c.config.read_only or not self._observing)
        ]

    def start_servers(self) -> None:
        for connection in self._usable():
            connection.ensure_started()

    def version(self) -> Hashable:
        return (self._servers.generation, *((id(c), c.tools_version) for c in self._usable()))

    def tools(self) -> list[ToolSpec]:
        self.start_servers()  # servers added since the session opened start on its next request
        return [spec for c in self._usable() for spec in self._servers.tool_specs(c)]

    def prompt_sections(self) -> Sequence[str]:
        return ()  # each tool's description says what it is

    async def settle(self, now: float) -> None:
        """Wait for servers that began starting less than SETTLE_S ago (monotonic `now`), up to then."""
        waits = []
        for connection in self._usable():
            since = connection.starting_since()
            if since is not None and now - since < SETTLE_S:
                waits.append(connection.wait_ready(SETTLE_S - (now - since)))
        if waits:
            await asyncio.gather(*waits)


def _stored(config: McpServerConfig) -> McpServerConfig:
    """What a connection keeps: the names of its secrets, never their values (it reads them from the
    keyring at each start)."""
    names = (*config.env_names, *config.header_names)
    return dataclasses.replace(config, secrets=dict.fromkeys(names, KEPT_SECRET))

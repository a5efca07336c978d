"""Every bot's MCP servers: their settings, their running connections, and the tools each session gets
(docs/outside-tools.md).

The settings are rows of `mcp_servers` (one per server, the secrets in the keyring). A server starts when a
session of its bot first opens, and stops with the app or when its settings change how it starts."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.bots.secret_store import SecretStore, SecretStoreUnavailableError
from core.changes import McpServersChanged
from core.errors import InvalidInputError, UnavailableError
from core.mcp.config import (
    KEPT_SECRET,
    McpServerConfig,
    config_json,
    from_stored,
    parse_servers,
    secret_name,
    servers_body,
)
from core.mcp.connection import McpConnection
from core.mcp.toolset import BotServers, BotToolset
from core.mcp.views import McpView
from core.store import mcp_servers as rows

if TYPE_CHECKING:
    from core.agent.session_spec import SessionSpec
    from core.bus import EventBus
    from core.clock import Clock
    from core.store.database import Database

log = logging.getLogger(__name__)


class McpService:
    def __init__(
        self,
        db: Database,
        secrets: SecretStore,
        clock: Clock,
        bus: EventBus,
        *,
        logs_dir: Path,
        workspace_of: Callable[[str], Path],
        require_bot: Callable[[str], Any],
    ) -> None:
        self._db = db
        self._secrets = secrets
        self._clock = clock
        self._bus = bus
        self._logs_dir = logs_dir
        self._workspace_of = workspace_of
        self._require_bot = require_bot  # async (bot_id) -> anything; raises NotFoundError
        self._bots: dict[str, BotServers] = {}
        self._loading: dict[str, asyncio.Future[BotServers]] = {}
        self._saving = asyncio.Lock()
        self._closed = False

    # ---- sessions -----------------------------------------------------------------------------------

    async def for_session(self, spec: SessionSpec) -> BotToolset:
        """The tools this session gets, following its servers as they start, stop and change their lists.
        Opening it starts the servers it can use."""
        servers = await self._servers(spec.bot_id)
        toolset = BotToolset(servers, observing=spec.observing)
        if not self._closed:
            toolset.start_servers()
        return toolset

    # ---- settings -----------------------------------------------------------------------------------

    async def view(self, bot_id: str) -> McpView:
        await self._require_bot(bot_id)
        servers = await self._servers(bot_id)
        return McpView(
            bot_id, config_json(servers.configs), tuple(c.status() for c in servers.connections.values())
        )

    async def replace(self, bot_id: str, body: Mapping[str, Any]) -> McpView:
        """Save a bot's whole `mcpServers` config. It is checked whole first: on any problem nothing is
        saved, no secret is touched and every server keeps running as it was."""
        await self._require_bot(bot_id)
        if "mcpServers" not in body:
            raise InvalidInputError(
                "mcpServers", 'is missing; send {"mcpServers": {...}} ({} removes every server)'
            )
        configs = parse_servers(body)
        async with self._saving:
            servers = await self._servers(bot_id)
            before = {c.name: c for c in servers.configs}
            await self._check_kept_secrets(bot_id, configs, before)
            await self._store_secrets(bot_id, configs)
            now = self._clock.time()
            stored = [(c.name, c.stored_json()) for c in configs]
            await self._db.write(lambda s: rows.replace_servers(s, bot_id, stored, now))
            await self._drop_secrets(bot_id, before.values(), configs)
            await servers.reconcile(configs)
        self._bus.publish(McpServersChanged(bot_id))
        return await self.view(bot_id)

    async def replace_text(self, bot_id: str, text: str) -> McpView:
        """What a person pasted in settings: `{"mcpServers": {...}}`, or the inner object alone."""
        return await self.replace(bot_id, servers_body(text))

    async def _check_kept_secrets(
        self, bot_id: str, configs: list[McpServerConfig], before: Mapping[str, McpServerConfig]
    ) -> None:
        for config in configs:
            old = before.get(config.name)
            for kind, names, old_names in _secret_fields(config, old):
                for name in names:
                    if config.secrets.get(name) != KEPT_SECRET:
                        continue
                    if name not in old_names:
                        where = "env" if kind == "env" else "headers"
                        raise InvalidInputError(
                            f"mcpServers.{config.name}.{where}.{name}",
                            f"{KEPT_SECRET} keeps a stored value, and none is stored; type the value itself",
                        )

    async def _store_secrets(self, bot_id: str, configs: list[McpServerConfig]) -> None:
        try:
            for config in configs:
                for kind, names, _ in _secret_fields(config, None):
                    for name in names:
                        value = config.secrets.get(name, KEPT_SECRET)
                        if value != KEPT_SECRET:
                            await self._secrets.set(secret_name(bot_id, config.name, kind, name), value)
        except SecretStoreUnavailableError as exc:
            raise UnavailableError(str(exc), key=exc.key) from exc

    async def _drop_secrets(self, bot_id: str, before: Any, configs: list[McpServerConfig]) -> None:
        kept = {
            secret_name(bot_id, c.name, kind, name)
            for c in configs
            for kind, names, _ in _secret_fields(c, None)
            for name in names
        }
        for old in before:
            for kind, names, _ in _secret_fields(old, None):
                for name in names:
                    key = secret_name(bot_id, old.name, kind, name)
                    if key not in kept:
                        try:
                            await self._secrets.delete(key)
                        except Exception:
                            log.warning("could not remove the secret %s", key, exc_info=True)

    # ---- the servers of a bot -------------------------------------------------------------------------

    async def _servers(self, bot_id: str) -> BotServers:
        servers = self._bots.get(bot_id)
        if servers is not None:
            return servers
        pending = self._loading.get(bot_id)
        if pending is not None:
            return await pending
        future: asyncio.Future[BotServers] = asyncio.get_running_loop().create_future()
        self._loading[bot_id] = future
        try:
            stored = await self._db.read(lambda s: rows.list_servers(s, bot_id))
            configs = [from_stored(name, spec) for name, spec in stored]
            servers = BotServers(bot_id, lambda config: self._connection(bot_id, config))
            await servers.reconcile(configs)
            self._bots[bot_id] = servers
            future.set_result(servers)
            return servers
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()
            raise
        finally:
            del self._loading[bot_id]

    def _connection(self, bot_id: str, config: McpServerConfig) -> McpConnection:
        async def secrets() -> dict[str, str]:
            values: dict[str, str] = {}
            for kind, names, _ in _secret_fields(config, None):
                for name in names:
                    value = await self._secrets.get(secret_name(bot_id, config.name, kind, name))
                    values[name] = value or ""
            return values

        return McpConnection(
            config,
            secrets=secrets,
            cwd=self._workspace_of(bot_id),
            log_path=self._logs_dir / "mcp" / bot_id / f"{config.name}.log",
            clock=self._clock,
            on_change=lambda: self._bus.publish(McpServersChanged(bot_id)),
        )

    async def close(self) -> None:
        """Stop every server (the app is stopping)."""
        self._closed = True
        await asyncio.gather(*(s.stop_all() for s in self._bots.values()), return_exceptions=True)


def _secret_fields(
    config: McpServerConfig, old: McpServerConfig | None
) -> list[tuple[Any, tuple[str, ...], tuple[str, ...]]]:
    """(kind, names now, names stored before) for the env and the headers."""
    return [
        ("env", config.env_names, old.env_names if old else ()),
        ("header", config.header_names, old.header_names if old else ()),
    ]

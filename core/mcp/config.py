"""A bot's MCP servers as the person writes them: the `{"mcpServers": {...}}` JSON other desktop clients use
(docs/outside-tools.md#configuring-servers).

Each server is a local program (`command`, `args`, `env`, `cwd`) spoken to over stdio, or a URL (`url`,
`headers`) spoken to over streamable HTTP. Errand reads four keys of its own beside them: `permission`
("ask" or "allow"), `readOnly`, `timeout` (seconds per tool call) and `startTimeout`, plus `disabled`.

Values in `env` and `headers` are secrets (API keys, bearer tokens): they go to the keyring and the database
keeps only their names. When the config is shown again they read `KEPT_SECRET`; sending that value back
keeps what is stored."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from core.errors import InvalidInputError

Transport = Literal["stdio", "http"]
Permission = Literal["ask", "allow"]

KEPT_SECRET = "********"
MAX_SERVERS = 20
MAX_CONFIG_CHARS = 100_000
DEFAULT_CALL_TIMEOUT_S = 60.0
# `npx -y some-server` downloads its package on the first start: half a minute is common.
DEFAULT_START_TIMEOUT_S = 120.0
_MAX_TIMEOUT_S = 3600.0
MAX_TEXT = 8_000  # a command, an argument, a folder or a URL
MAX_SECRET = 16_000  # an env or header value (a token, a key)
MAX_ARGS = 200
# Tool names the model sees are `<server>__<tool>`, and function names may hold only these, 64 at most.
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
_SERVER_FIELDS = frozenset(
    {"command", "args", "env", "cwd", "url", "headers", "type", "permission", "readOnly", "timeout"}
    | {"startTimeout", "disabled", "description"}
)
_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamableHttp": "http"}


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    cwd: str = ""
    url: str = ""
    # Names only: the values are in the keyring (`secret_name`), or in `secrets` on the way there.
    env_names: tuple[str, ...] = ()
    header_names: tuple[str, ...] = ()
    permission: Permission = "ask"
    read_only: bool = False
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    start_timeout_s: float = DEFAULT_START_TIMEOUT_S
    disabled: bool = False
    # What was sent for each env/header name on a save: a value to store, or KEPT_SECRET. Not persisted.
    secrets: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    def stored_json(self) -> dict[str, Any]:
        """The shape kept in the database: the person's JSON, with every secret value left out."""
        out: dict[str, Any] = {"type": self.transport}
        if self.transport == "stdio":
            out["command"] = self.command
            if self.args:
                out["args"] = list(self.args)
            if self.cwd:
                out["cwd"] = self.cwd
            if self.env_names:
                out["env"] = dict.fromkeys(self.env_names, KEPT_SECRET)
        else:
            out["url"] = self.url
            if self.header_names:
                out["headers"] = dict.fromkeys(self.header_names, KEPT_SECRET)
        out["permission"] = self.permission
        if self.read_only:
            out["readOnly"] = True
        if self.call_timeout_s != DEFAULT_CALL_TIMEOUT_S:
            out["timeout"] = self.call_timeout_s
        if self.start_timeout_s != DEFAULT_START_TIMEOUT_S:
            out["startTimeout"] = self.start_timeout_s
        if self.disabled:
            out["disabled"] = True
        return out

    def same_launch(self, other: McpServerConfig) -> bool:
        """Whether `other` starts the same server: if so a running one is kept across a save."""
        return (
            self.transport == other.transport
            and self.command == other.command
            and self.args == other.args
            and self.cwd == other.cwd
            and self.url == other.url
            and self.env_names == other.env_names
            and self.header_names == other.header_names
            and self.disabled == other.disabled
            and all(v == KEPT_SECRET for v in other.secrets.values())
        )


def secret_name(bot_id: str, server: str, kind: Literal["env", "header"], key: str) -> str:
    return f"mcp/{bot_id}/{server}/{kind}/{key}"


def servers_body(text: str) -> dict[str, Any]:
    """Pasted text as a body to save: `{"mcpServers": {...}}`, or the inner object alone (wrapped)."""
    if len(text) > MAX_CONFIG_CHARS:
        raise InvalidInputError("mcpServers", f"is over {MAX_CONFIG_CHARS:,} characters")
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise InvalidInputError(
            "mcpServers",
            f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            'paste an object like {"mcpServers": {"name": {"command": "..."}}}',
        ) from None
    if not isinstance(value, dict):
        raise InvalidInputError("mcpServers", 'must be a JSON object like {"mcpServers": {...}}')
    return value if "mcpServers" in value else {"mcpServers": value}


def parse_servers_text(text: str) -> list[McpServerConfig]:
    return parse_servers(servers_body(text))


def parse_servers(body: Mapping[str, Any]) -> list[McpServerConfig]:
    """`{"mcpServers": {name: server}}` (or `{name: server}`) checked whole: the first problem raises, naming
    its field, so nothing half-valid is ever saved."""
    servers: Any = body
    if "mcpServers" in body:
        if len(body) > 1:
            extra = sorted(set(body) - {"mcpServers"})[0]
            raise InvalidInputError(extra, 'is not a setting here; send {"mcpServers": {...}}')
        servers = body["mcpServers"]
    if not isinstance(servers, dict):
        raise InvalidInputError("mcpServers", "must be an object of servers by name")
    if len(servers) > MAX_SERVERS:
        raise InvalidInputError("mcpServers", f"has {len(servers)} servers; at most {MAX_SERVERS}")
    return [_server(name, spec) for name, spec in servers.items()]


def _server(name: str, spec: Any) -> McpServerConfig:
    where = f"mcpServers.{name}"
    if not SERVER_NAME.match(name):
        raise InvalidInputError(
            where,
            "is not a usable server name: use 1 to 32 letters, digits, '-' or '_' (it prefixes tool names)",
        )
    if not isinstance(spec, dict):
        raise InvalidInputError(where, "must be an object with a command or a url")
    unknown = sorted(set(spec) - _SERVER_FIELDS)
    if unknown:
        raise InvalidInputError(
            f"{where}.{unknown[0]}", f"is not a server setting; use {', '.join(sorted(_SERVER_FIELDS))}"
        )
    transport = _transport(where, spec)
    permission = spec.get("permission", "ask")
    if permission not in ("ask", "allow"):
        raise InvalidInputError(
            f"{where}.permission", 'must be "ask" (a person approves each call) or "allow"'
        )
    common: dict[str, Any] = {
        "name": name,
        "transport": transport,
        "permission": permission,
        "read_only": _bool(spec, "readOnly", where),
        "disabled": _bool(spec, "disabled", where),
        "call_timeout_s": _seconds(spec, "timeout", where, DEFAULT_CALL_TIMEOUT_S),
        "start_timeout_s": _seconds(spec, "startTimeout", where, DEFAULT_START_TIMEOUT_S),
    }
    if spec.get("description") is not None and not isinstance(spec["description"], str):
        raise InvalidInputError(f"{where}.description", "must be a string")
    if transport == "stdio":
        for key in ("url", "headers"):
            if key in spec:
                raise InvalidInputError(
                    f"{where}.{key}", "belongs to a URL server; a server with a command has none"
                )
        command = spec.get("command")
        if not isinstance(command, str) or not command.strip():
            raise InvalidInputError(f"{where}.command", 'must name the program to start, e.g. "npx"')
        _short_text(command, f"{where}.command")
        args = spec.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise InvalidInputError(f"{where}.args", "must be a list of strings")
        if len(args) > MAX_ARGS:
            raise InvalidInputError(f"{where}.args", f"has {len(args)} arguments; at most {MAX_ARGS}")
        for index, arg in enumerate(args):
            _short_text(arg, f"{where}.args.{index}")
        cwd = spec.get("cwd", "")
        if not isinstance(cwd, str):
            raise InvalidInputError(f"{where}.cwd", "must be a string (a folder)")
        _short_text(cwd, f"{where}.cwd")
        env = _string_map(spec, "env", where, ENV_NAME, "an environment variable name")
        return McpServerConfig(
            command=command.strip(),
            args=tuple(args),
            cwd=cwd,
            env_names=tuple(env),
            secrets=env,
            **common,
        )
    for key in ("command", "args", "env", "cwd"):
        if key in spec:
            raise InvalidInputError(f"{where}.{key}", "belongs to a local server; a URL server has none")
    url = spec.get("url")
    if not isinstance(url, str) or not _is_http_url(url):
        raise InvalidInputError(f"{where}.url", "must be an http:// or https:// URL")
    _short_text(url, f"{where}.url")
    headers = _string_map(spec, "headers", where, HEADER_NAME, "an HTTP header name")
    return McpServerConfig(url=url, header_names=tuple(headers), secrets=headers, **common)


def _transport(where: str, spec: dict[str, Any]) -> Transport:
    kind = spec.get("type")
    if kind is not None:
        if kind == "sse":
            raise InvalidInputError(
                f"{where}.type",
                "the old SSE transport is not supported; use the server's streamable HTTP URL",
            )
        if kind not in _TYPES:
            raise InvalidInputError(f"{where}.type", 'must be "stdio" or "http"')
        transport: Transport = "stdio" if _TYPES[kind] == "stdio" else "http"
        return transport
    if "command" in spec:
        return "stdio"
    if "url" in spec:
        return "http"
    raise InvalidInputError(where, "names no command and no url: say how to start or reach the server")


def _bool(spec: dict[str, Any], key: str, where: str) -> bool:
    value = spec.get(key, False)
    if not isinstance(value, bool):
        raise InvalidInputError(f"{where}.{key}", "must be true or false")
    return value


def _seconds(spec: dict[str, Any], key: str, where: str, default: float) -> float:
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 1 <= value <= _MAX_TIMEOUT_S:
        raise InvalidInputError(f"{where}.{key}", f"must be a number of seconds from 1 to {_MAX_TIMEOUT_S:g}")
    return float(value)


def _string_map(
    spec: dict[str, Any], key: str, where: str, names: re.Pattern[str], what: str
) -> dict[str, str]:
    value = spec.get(key, {})
    if not isinstance(value, dict):
        raise InvalidInputError(f"{where}.{key}", "must be an object of names to strings")
    for name, item in value.items():
        if not names.match(name):
            raise InvalidInputError(f"{where}.{key}.{name}", f"is not {what}")
        if not isinstance(item, str) or "\x00" in item or "\n" in item or "\r" in item:
            raise InvalidInputError(f"{where}.{key}.{name}", "must be a string on one line")
        if len(item) > MAX_SECRET:
            raise InvalidInputError(f"{where}.{key}.{name}", f"is over {MAX_SECRET:,} characters")
    return dict(value)


def _short_text(text: str, field: str) -> None:
    if len(text) > MAX_TEXT:
        raise InvalidInputError(field, f"is over {MAX_TEXT:,} characters")


def _is_http_url(url: str) -> bool:
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def config_json(configs: list[McpServerConfig]) -> dict[str, Any]:
    """What GET shows and the settings editor holds: secrets as KEPT_SECRET."""
    return {"mcpServers": {c.name: c.stored_json() for c in configs}}


def from_stored(name: str, stored: Mapping[str, Any]) -> McpServerConfig:
    """A row's JSON back into a config (it was checked on the way in; the secrets stay in the keyring)."""
    return _server(name, dict(stored))

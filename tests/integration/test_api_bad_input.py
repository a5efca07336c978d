"""Bad input on every route of the local API: errors are JSON `{"error": {"code", "message"}}` with a
fitting status, and bad input never changes state.

The route table is walked, not listed: every route ApiServer.app() registers must have an entry in ROUTES,
which says what a valid request to it looks like (its path values, body and query); the case families
below derive the bad requests from that, so a route added later is swept too, or fails until it has an
entry. Each route gets a real host (real SQLite, the scripted model over real HTTP, a fake clock so nothing
fires) seeded with what its path names: a conversation, a rule, a price override and, where the path names a
task, its run or a needs-you item, a task waiting on a question.

Every bad request must answer 4xx with the JSON error shape and change nothing: the database (SQLite's
data_version), the files under the data dir and the stored keys are compared after each request, and every
list and detail the API shows (with the database's row counts) before and after them all. Requests a route
may accept (RTL marks, a null optional field, an unknown field where unknowns are ignored) are sent last and
must only stay under 500. The host must still answer /api/health afterwards.

`-s` shows the figures at the end: how many requests the sweep sent and how many 5xx it saw.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy.orm import Session

from core.api.server import LINGER_S, ApiServer
from core.chat.attachment import MAX_MESSAGE_BYTES
from core.clock import FakeClock
from core.host import Host
from core.ids import new_id
from core.store import channels as channel_rows
from core.store.models import ChannelPeerRow
from tests.fakes.fake_feishu import FakeFeishu
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import TOKEN, make_host, running_api
from tests.integration.rule_api import DAILY_8, NOW
from tests.integration.task_script import SessionScript, report
from tests.serve_process import read_until_listening, serve_env, serve_process
from tests.skill_folders import write_skill
from tests.waiting import wait_until

# ---- figures for the closing note ---------------------------------------------------------------------

SENT = {"requests": 0, "5xx": 0}


@pytest.fixture(scope="module", autouse=True)
def _figures() -> Iterator[None]:
    yield
    print(f"\nAPI bad-input sweep: {SENT['requests']} requests sent, {SENT['5xx']} answered 5xx")


# ---- what a valid request to each route looks like ------------------------------------------------------

Kind = str  # "str", "num", "amount" (number or decimal text), "instant" (number or time text), "bool", "obj",
# "list" (of strings)


@dataclass(frozen=True)
class Field:
    path: tuple[str | int, ...]
    kind: Kind
    required: bool = False
    null_ok: bool | None = None  # None: null is fine exactly when the field is optional

    @property
    def name(self) -> str:
        return ".".join(str(p) for p in self.path)

    @property
    def accepts_null(self) -> bool:
        return (not self.required) if self.null_ok is None else self.null_ok


@dataclass(frozen=True)
class Seed:
    bot: str
    conversation: str
    task: str
    run: str
    rule: str
    price: str
    item: str
    model_url: str
    action: str = "answer"
    channel: str = ""
    group: str = ""
    skill: str = "seed-skill"
    memory: str = ""


@dataclass(frozen=True)
class Route:
    params: dict[str, str] = field(default_factory=dict)  # path parameter -> Seed attribute
    body: Callable[[Seed], dict[str, Any]] | None = None  # a valid body; None: the route reads none
    fields: tuple[Field, ...] = ()
    query: tuple[str, ...] = ()
    text: tuple[str, ...] = ()  # query parameters that hold words to look for: plain text is valid there
    strict: bool = False  # unknown fields are refused
    body_optional: bool = False  # an empty body is a valid request
    command: bool = False  # takes no body but acts: never sent valid to a seeded id
    names: frozenset[str] = frozenset()  # path parameters that are names to store, not ids to look up
    more_bad: Callable[[Seed], list[dict[str, Any]]] | None = None
    # A route that takes files in its JSON reads up to its own cap: a body past the API's 1 MB is then
    # refused for what it holds (400), and one past this cap unread (413).
    body_cap: int = 0


SCHEDULE = {"kind": "weekly", "days": [0, 2], "time": "09:30", "tz": "Asia/Shanghai"}
PRICE = {"input": 1, "output": "2.5", "cacheRead": 0.1, "cacheWrite": 1, "currency": "USD"}
FEISHU_APP, FEISHU_SECRET = "cli_sweep0000000001", "sweep-secret"
SEED_GROUP = "cidSeed+/Group=="
UNKNOWN_IDS = {
    "group": "cidNever+/Added==",
    "bot": "b_000000000000",
    "conversation": "c_000000000000",
    "task": "t_000000000000",
    "run": "r_000000000000",
    "rule": "ru_000000000000",
    "price": "no-such-model",
    "item": "question:q_000000000000",
    "action": "launch",
    "channel": "ch_000000000000",
    "skill": "no-such-skill",
    "memory": "m_000000000000",
}

ROUTES: dict[tuple[str, str], Route] = {
    ("GET", "/api/health"): Route(),
    ("GET", "/api/bots"): Route(),
    ("POST", "/api/bots"): Route(
        body=lambda s: {
            "name": "Scout",
            "baseUrl": s.model_url,
            "model": "fake-model",
            "apiKey": "sk-x",
            "preset": "read-only",
        },
        fields=(
            Field(("name",), "str", required=True),
            Field(("baseUrl",), "str"),
            Field(("model",), "str"),
            Field(("apiKey",), "str"),
            Field(("preset",), "str"),
        ),
    ),
    ("GET", "/api/bots/presets"): Route(query=("lang",)),
    ("GET", "/api/bots/{id}/channels"): Route(params={"id": "bot"}),
    ("POST", "/api/bots/{id}/channels"): Route(
        params={"id": "bot"},
        body=lambda s: {"kind": "wechat"},
        fields=(Field(("kind",), "str", required=True),),
        strict=True,
        more_bad=lambda s: [
            {"kind": "telegram"},
            {"kind": ""},
            {"kind": "feishu"},
            {"kind": "feishu", "appId": "cli_x1234567", "appSecret": "s", "domain": "weibo"},
            {"kind": "feishu", "appId": "not-an-app", "appSecret": "s"},
            {"kind": "feishu", "appId": "cli_x1234567", "appSecret": ""},
            {"kind": "feishu", "appId": FEISHU_APP, "appSecret": "wrong secret"},
            {"kind": "feishu", "appId": FEISHU_APP, "appSecret": "wrong-secret", "domain": "lark"},
            {"kind": "telegram", "token": "not a token"},
            {"kind": "telegram", "token": 12345},
            {"kind": "telegram", "token": "123456:AAH-abcdefghijklmnopqrstuvwxyz0123", "appId": "x"},
        ],
    ),
    ("GET", "/api/bots/{id}/mcp"): Route(params={"id": "bot"}),
    ("GET", "/api/bots/{id}/skills"): Route(params={"id": "bot"}),
    # Its body is a zip, not JSON: swept as a command (bodies to an unknown bot, bad queries to the seeded).
    ("POST", "/api/bots/{id}/skills"): Route(params={"id": "bot"}, command=True, query=("scope", "replace")),
    ("DELETE", "/api/bots/{id}/skills/{name}"): Route(
        params={"id": "bot", "name": "skill"}, command=True, query=("scope",)
    ),
    ("GET", "/api/web-search"): Route(),
    ("PUT", "/api/web-search"): Route(
        body=lambda s: {"provider": "searxng", "url": "http://127.0.0.1:9"},
        fields=(
            Field(("provider",), "str", required=True, null_ok=True),
            Field(("url",), "str"),
        ),
        strict=True,
        more_bad=lambda s: [
            {"provider": "brave"},
            {"provider": "brave", "key": 12},
            {"provider": "searxng", "url": "ftp://example.com"},
            {"provider": "searxng", "url": "http://127.0.0.1:9", "key": "k"},
        ],
    ),
    ("GET", "/api/bots/{id}/memory"): Route(params={"id": "bot"}),
    ("POST", "/api/bots/{id}/memory"): Route(
        params={"id": "bot"},
        body=lambda s: {"text": "The user's server is build-2."},
        fields=(Field(("text",), "str", required=True),),
        strict=True,
        more_bad=lambda s: [{"text": "   "}, {"text": "x" * 501}],
    ),
    ("PUT", "/api/bots/{id}/memory/{entry}"): Route(
        params={"id": "bot", "entry": "memory"},
        body=lambda s: {"text": "The user wants replies in English."},
        fields=(Field(("text",), "str", required=True),),
        strict=True,
        more_bad=lambda s: [{"text": ""}, {"text": "x" * 501}],
    ),
    ("DELETE", "/api/bots/{id}/memory/{entry}"): Route(params={"id": "bot", "entry": "memory"}, command=True),
    ("PUT", "/api/bots/{id}/mcp"): Route(
        params={"id": "bot"},
        body=lambda s: {
            "mcpServers": {
                "fake": {
                    "command": sys.executable,
                    "args": ["-m", "tests.fakes.mcp_server"],
                    "env": {"FAKE_TOKEN": "t"},
                    "permission": "allow",
                    "readOnly": False,
                    "timeout": 30,
                    "disabled": True,  # saved and shown, never started by the sweep's chat turns
                }
            }
        },
        fields=(
            Field(("mcpServers",), "obj", required=True),
            Field(("mcpServers", "fake"), "obj"),  # without it: no servers, which is valid
            Field(("mcpServers", "fake", "command"), "str", required=True),
            Field(("mcpServers", "fake", "args"), "list"),
            Field(("mcpServers", "fake", "env"), "obj"),
            Field(("mcpServers", "fake", "env", "FAKE_TOKEN"), "str"),
            Field(("mcpServers", "fake", "permission"), "str"),
            Field(("mcpServers", "fake", "readOnly"), "bool"),
            Field(("mcpServers", "fake", "timeout"), "num"),
            Field(("mcpServers", "fake", "disabled"), "bool"),
        ),
        strict=True,
        more_bad=lambda s: [
            {"mcpServers": {"fake": {}}},
            {"mcpServers": {"fake": {"url": "ftp://example.com"}}},
            {"mcpServers": {"fake": {"command": "x", "url": "http://127.0.0.1/"}}},
            {"mcpServers": {"bad name": {"command": "x"}}},
            {"mcpServers": {"fake": {"command": "x", "env": {"NEW": "********"}}}},
            {"mcpServers": {"fake": {"command": "x", "timeout": 0}}},
            {"mcpServers": {"fake": {"type": "sse", "url": "http://127.0.0.1/"}}},
        ],
    ),
    ("POST", "/api/channels/check-app"): Route(
        body=lambda s: {
            "kind": "feishu",
            "appId": FEISHU_APP,
            "appSecret": FEISHU_SECRET,
            "domain": "feishu",
        },
        fields=(
            Field(("kind",), "str", required=True),
            Field(("appId",), "str", required=True),
            Field(("appSecret",), "str", required=True),
            Field(("domain",), "str"),
        ),
        strict=True,
        more_bad=lambda s: [
            {"kind": "wechat", "appId": FEISHU_APP, "appSecret": FEISHU_SECRET},
            {"kind": "feishu", "appId": FEISHU_APP, "appSecret": "wrong-secret"},
            {"kind": "feishu", "appId": "cli_other12345", "appSecret": FEISHU_SECRET},
        ],
    ),
    ("GET", "/api/bots/{id}/channels/{channel}"): Route(params={"id": "bot", "channel": "channel"}),
    ("PUT", "/api/bots/{id}/channels/{channel}/groups/{group}"): Route(
        params={"id": "bot", "channel": "channel", "group": "group"},
        body=lambda s: {"admitted": True},
        fields=(Field(("admitted",), "bool", required=True),),
        strict=True,
    ),
    ("PUT", "/api/bots/{id}/channels/{channel}"): Route(
        params={"id": "bot", "channel": "channel"},
        body=lambda s: {"allowed": ["friend@im.wechat"]},
        fields=(Field(("allowed",), "list", required=True),),
        strict=True,
        more_bad=lambda s: [
            {"allowed": [""]},
            {"allowed": [1]},
            {"allowed": ["x" * 201]},
            {"allowed": ["a"] * 51},
            {"allowed": ["a\x00b"]},
        ],
    ),
    ("POST", "/api/bots/{id}/channels/{channel}/login"): Route(
        params={"id": "bot", "channel": "channel"}, command=True
    ),
    ("POST", "/api/bots/{id}/channels/{channel}/verify-code"): Route(
        params={"id": "bot", "channel": "channel"},
        body=lambda s: {"code": "4821"},
        fields=(Field(("code",), "str", required=True),),
        strict=True,
        more_bad=lambda s: [{"code": "12"}, {"code": "abcd"}],
    ),
    ("DELETE", "/api/bots/{id}/channels/{channel}"): Route(
        params={"id": "bot", "channel": "channel"}, command=True
    ),
    ("GET", "/api/bots/{id}"): Route(params={"id": "bot"}),
    ("PUT", "/api/bots/{id}"): Route(
        params={"id": "bot"},
        body=lambda s: {
            "name": "Scout",
            "avatar": "amber",
            "model": {"provider": "openai", "baseUrl": s.model_url, "model": "fake-model", "apiKey": "sk-x"},
            "preset": "read-only",
            "taskSlots": 2,
            "quietHours": {"start": "23:00", "end": "07:00"},
            "paused": True,
            "windowNudge": False,
        },
        fields=(
            Field(("name",), "str"),
            Field(("avatar",), "str"),
            Field(("model",), "obj"),
            Field(("model", "provider"), "str"),
            Field(("model", "baseUrl"), "str"),
            Field(("model", "model"), "str"),
            Field(("model", "apiKey"), "str"),
            Field(("preset",), "str"),
            Field(("taskSlots",), "num"),
            Field(("quietHours",), "obj"),
            Field(("quietHours", "start"), "str"),
            Field(("quietHours", "end"), "str"),
            Field(("paused",), "bool"),
            Field(("windowNudge",), "bool"),
        ),
        strict=True,
    ),
    ("POST", "/api/bots/{id}/test-connection"): Route(
        params={"id": "bot"},
        body=lambda s: {"baseUrl": s.model_url, "model": "fake-model", "apiKey": "sk-x"},
        fields=(Field(("baseUrl",), "str"), Field(("model",), "str"), Field(("apiKey",), "str")),
        query=("lang",),
        strict=True,
        body_optional=True,
    ),
    ("GET", "/api/conversations"): Route(query=("bot",)),
    ("POST", "/api/conversations"): Route(
        body=lambda s: {"botId": s.bot, "title": "Notes"},
        fields=(Field(("botId",), "str"), Field(("title",), "str")),
        body_optional=True,
    ),
    ("GET", "/api/conversations/{id}/messages"): Route(
        params={"id": "conversation"}, query=("after", "wait")
    ),
    ("POST", "/api/conversations/{id}/messages"): Route(
        params={"id": "conversation"},
        body=lambda s: {"text": "hello"},
        fields=(Field(("text",), "str", required=True),),
        body_cap=MAX_MESSAGE_BYTES,
    ),
    ("GET", "/api/search"): Route(query=("q", "limit"), text=("q",)),
    ("GET", "/api/tasks"): Route(query=("bot", "group", "lang")),
    ("POST", "/api/tasks"): Route(
        body=lambda s: {
            "text": "Write notes",
            "botId": s.bot,
            "conversationId": s.conversation,
            "budgetUsd": 2,
        },
        fields=(
            Field(("text",), "str", required=True),
            Field(("botId",), "str"),
            Field(("conversationId",), "str"),
            Field(("budgetUsd",), "num"),
            Field(("plan",), "bool"),
        ),
    ),
    ("GET", "/api/tasks/{id}"): Route(params={"id": "task"}, query=("lang",)),
    ("GET", "/api/tasks/{id}/runs/{run}/activity"): Route(params={"id": "task", "run": "run"}),
    ("POST", "/api/tasks/{id}/stop"): Route(params={"id": "task"}, command=True),
    ("POST", "/api/tasks/{id}/continue"): Route(
        params={"id": "task"},
        body=lambda s: {"text": "more, please"},
        fields=(Field(("text",), "str", required=True),),
    ),
    ("DELETE", "/api/tasks/{id}"): Route(params={"id": "task"}, command=True),
    ("POST", "/api/tasks/{id}/budget"): Route(
        params={"id": "task"},
        body=lambda s: {"addUsd": 1},
        fields=(Field(("addUsd",), "num", required=True),),
        strict=True,
        more_bad=lambda s: [{"addUsd": 1, "budgetUsd": 5}, {"addUsd": 0}, {"budgetUsd": 2000}],
    ),
    ("POST", "/api/tasks/{id}/keep"): Route(params={"id": "task"}, command=True),
    ("GET", "/api/tasks/{id}/export"): Route(params={"id": "task"}, query=("lang",)),
    ("GET", "/api/tasks/{id}/audit"): Route(
        params={"id": "task"}, query=("format", "limit", "since", "until", "target"), text=("target",)
    ),
    ("GET", "/api/audit"): Route(query=("format", "limit", "since", "until", "target"), text=("target",)),
    ("GET", "/api/audit/verify"): Route(),
    ("GET", "/api/rules/{id}/export"): Route(params={"id": "rule"}, query=("lang",)),
    ("GET", "/api/rules"): Route(query=("bot", "lang")),
    ("POST", "/api/rules"): Route(
        query=("lang",),
        body=lambda s: {
            "botId": s.bot,
            "title": "Prices",
            "instruction": "check the prices",
            "schedule": dict(DAILY_8),
            "kind": "check",
            "mode": "act",
            "conversationId": s.conversation,
            "trigger": {"kind": "schedule"},
        },
        fields=(
            Field(("botId",), "str"),
            Field(("title",), "str", required=True),
            Field(("instruction",), "str", required=True),
            Field(("schedule",), "obj", required=True),
            Field(("schedule", "kind"), "str", required=True),
            Field(("schedule", "time"), "str", required=True),
            Field(("schedule", "tz"), "str"),
            Field(("kind",), "str"),
            Field(("mode",), "str"),
            Field(("conversationId",), "str"),
            Field(("trigger",), "obj"),
            Field(("trigger", "kind"), "str"),
        ),
        strict=True,
        more_bad=lambda s: [
            {"title": "x", "instruction": "y", "schedule": {"kind": "once", "at": "2001-01-01T08:00"}},
            {"title": "x", "instruction": "y", "schedule": {"kind": "cron", "cron": "* * * *"}},
            {"title": "x", "instruction": "y", "schedule": {"kind": "every", "minutes": 0}},
        ],
    ),
    ("POST", "/api/rules/preview"): Route(
        body=lambda s: {"schedule": dict(SCHEDULE), "from": NOW, "count": 3, "lang": "en"},
        fields=(
            Field(("schedule",), "obj", required=True),
            Field(("schedule", "days", 0), "num", null_ok=False),
            Field(("schedule", "time"), "str", required=True),
            Field(("schedule", "tz"), "str"),
            Field(("from",), "instant"),
            Field(("count",), "num", null_ok=False),
            Field(("lang",), "str"),
        ),
        strict=True,
        more_bad=lambda s: [
            {"schedule": dict(SCHEDULE), "from": "10000-01-01T00:00"},
            {"schedule": dict(SCHEDULE), "from": "0001-01-01T00:00+14:00"},
            {"schedule": dict(SCHEDULE), "from": 253402300800},
            {"schedule": dict(SCHEDULE), "from": "1" + "0" * 400},
            {"schedule": dict(SCHEDULE), "from": 221845392001},
        ],
    ),
    ("GET", "/api/rules/{id}"): Route(params={"id": "rule"}, query=("lang",)),
    ("PUT", "/api/rules/{id}"): Route(
        params={"id": "rule"},
        query=("lang",),
        body=lambda s: {
            "title": "Prices 2",
            "instruction": "check the prices again",
            "schedule": dict(SCHEDULE),
            "mode": "observe",
            "trigger": {"kind": "schedule"},
        },
        fields=(
            Field(("title",), "str"),
            Field(("instruction",), "str"),
            Field(("schedule",), "obj"),
            Field(("schedule", "days", 0), "num", null_ok=False),
            Field(("schedule", "time"), "str", required=True),
            Field(("mode",), "str"),
            Field(("trigger",), "obj"),
            Field(("trigger", "kind"), "str"),
        ),
        strict=True,
    ),
    ("DELETE", "/api/rules/{id}"): Route(params={"id": "rule"}, command=True),
    ("GET", "/api/rules/{id}/versions"): Route(params={"id": "rule"}),
    ("POST", "/api/rules/{id}/run"): Route(params={"id": "rule"}, command=True),
    ("GET", "/api/rules/{id}/runs"): Route(params={"id": "rule"}, query=("before", "lang")),
    ("GET", "/api/prices"): Route(),
    ("PUT", "/api/prices/{model}"): Route(
        params={"model": "price"},
        body=lambda s: dict(PRICE),
        fields=(
            Field(("input",), "amount", required=True),
            Field(("output",), "amount", required=True),
            Field(("cacheRead",), "amount", required=True),
            Field(("cacheWrite",), "amount", required=True),
            Field(("currency",), "str", required=True),
        ),
        strict=True,
        names=frozenset({"model"}),
        more_bad=lambda s: [{**PRICE, "model": "another-model"}, {**PRICE, "currency": "XYZ"}],
    ),
    ("DELETE", "/api/prices/{model}"): Route(params={"model": "price"}, command=True),
    ("GET", "/api/attention"): Route(query=("lang",)),
    ("POST", "/api/attention/{id}/{action}"): Route(
        params={"id": "item", "action": "action"},
        body=lambda s: {"answer": "A"},
        fields=(Field(("answer",), "str", required=True),),
        body_optional=True,
        more_bad=lambda s: [{"answer": "  "}, {"answer": "a" * 100_001}],
    ),
}


class _NoHost:
    """Enough of a Host for ApiServer.routes() to register its routes; no handler is called."""

    prices = None
    search = None


def route_table() -> list[tuple[str, str]]:
    return sorted(set(ApiServer(cast(Host, _NoHost()), token="").routes().table()))


def resource_methods() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for method, path in route_table():
        found.setdefault(path, set()).add(method)
    return found


def spec_of(method: str, path: str) -> Route | None:
    return ROUTES.get(("GET" if method == "HEAD" else method, path))


# ---- the case families ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    family: str
    label: str
    method: str
    path: str  # percent-encoded, as sent
    content: bytes | None = None
    chunked: bool = False  # send `content` without a Content-Length
    headers: dict[str, str] = field(default_factory=dict)
    drop_auth: bool = False
    raw: bytes | None = None  # the whole request, sent as-is over a socket
    bad: bool = True  # must be refused and change nothing; else it may be accepted
    want: int | None = None  # the exact status, where one is right
    names: str | None = None  # a field the error message must name

    def __str__(self) -> str:
        return f"{self.family}/{self.label}: {self.method} {self.path[:120]}"


class Raw:
    """A JSON literal json.dumps can't write (1e400, an integer with 400 digits, NaN as typed)."""

    def __init__(self, text: str) -> None:
        self.text = text


def encode(body: Any) -> bytes:
    literals: list[str] = []

    def mark(value: Any) -> Any:
        if isinstance(value, Raw):
            literals.append(value.text)
            return f"@@raw{len(literals) - 1}@@"
        if isinstance(value, dict):
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        return value

    # ensure_ascii writes a lone surrogate as the escape \ud800, which is how a client sends one.
    text = json.dumps(mark(body), ensure_ascii=True)
    for index, literal in enumerate(literals):
        text = text.replace(f'"@@raw{index}@@"', literal)
    return text.encode()


def with_value(body: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    target: Any = changed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return changed


def without(body: dict[str, Any], path: tuple[str | int, ...]) -> dict[str, Any]:
    changed = copy.deepcopy(body)
    target: Any = changed
    for step in path[:-1]:
        target = target[step]
    del target[path[-1]]
    return changed


def value_at(body: dict[str, Any], path: tuple[str | int, ...]) -> Any:
    target: Any = body
    for step in path:
        target = target[step]
    return target


def fill(canonical: str, values: dict[str, str]) -> str:
    path = canonical
    for name, value in values.items():
        path = path.replace("{" + name + "}", value)
    return path


MB = 1_048_576
NESTED_40: Any = "x"
for _ in range(40):
    NESTED_40 = [NESTED_40]

MALFORMED = [
    b"{",
    b'{"text": ',
    b"{'text': 'single quotes'}",
    b'{"a": 1,}',
    b'{"a": 1} {"b": 2}',
    b'{"a": 01}',
    b"\xff\xfe{\x00}\x00",  # UTF-16
    b"\xef\xbb\xbf{}",  # a UTF-8 byte order mark
    b'{"text": "\xff\xfe"}',  # not UTF-8 inside a string
    b"<html></html>",
    b"\x00",
]
NOT_OBJECTS = [b"[]", b'[{"a": 1}]', b"1", b"-1e400", b'"text"', b"null", b"true", b"NaN"]
DEEP = [b"[" * 100_000, b'{"a":' * 100_000, b'{"a":' * 500 + b"1" + b"}" * 500]
CONSTANTS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"]
BAD_TEXT = ["\ud800", "a\udfffb", "\udc80", "a\x00b", "\x00"]
RTL = ["\u200f", "\u202e"]
WRONG_TYPES: dict[Kind, list[Any]] = {
    "str": [12345, 1.5, True, [], ["x"], {}],
    "num": ["1", "abc", True, False, [], [1], {}],
    "amount": [True, False, [], {}, "abc", "-1", "NaN", "Infinity", "1e400", ""],
    "instant": [True, [], {}, "abc", "-1", "NaN", "1e400", "10000-01-01T00:00"],
    "bool": [1, 0, "true", [], {}],
    "obj": ["x", 1, [], True, [{}]],
    "list": ["x", 1, True, {}, [{}]],
}
BAD_NUMBERS: list[Any] = [
    -1,
    -0.5,
    1e308,
    -1e308,
    10**20,
    2**53 + 1,
    Raw("1" + "0" * 400),
    Raw("-" + "9" * 400),
]
BAD_IDS = [
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "%2E%2E",
    "..%5C..%5Cwindows",
    "%00",
    "a%00b",
    "%ED%A0%80",  # a surrogate's UTF-8 bytes: not UTF-8
    "%E2%80%8F",  # an RTL mark
    "%C0%AE%C0%AE%2F",  # an overlong "../"
    "x" * 2000,
]
BAD_QUERY = ["%ED%A0%80", "%00", "-1", "abc", "9" * 400, "NaN", "1e400", "%E2%80%8F", "a" * 3000]
# Bad for a number, an id or a choice, but fine words to search for (a right-to-left mark included).
PLAIN_TEXT = {"-1", "abc", "NaN", "1e400", "%E2%80%8F"}
AUTH = [
    "",
    "Bearer",
    "Bearer wrong",
    f"Bearer {TOKEN[:-1]}",
    f"Bearer {TOKEN}x",
    f"Basic {TOKEN}",
    TOKEN,
    f"Token {TOKEN}",
]
FOREIGN_HOSTS = [
    "evil.example.com",
    "localhost.evil.com",
    "[::1].evil.com",
    "[::1]evil.com:80",
    "127.0.0.1.nip.io",
    "127.0.0.1:80.evil.com",
    "localhost:abc",
    "localhost:",
    "127.0.0.1:\u0661\u0662",  # Arabic-Indic digits are digits to \d, not to a port
    "::1",
    "127.0.0.2",
    "0.0.0.0",
    "LOCALHOST.EVIL.COM",
]
# On every route: the rebinding names (the whole list above goes to /api/health once).
REBINDING_HOSTS = FOREIGN_HOSTS[:5]
OTHER_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "PROPFIND"]


def raw_request(
    method: bytes,
    path: bytes,
    *,
    auth: bytes | None = None,
    host: bytes = b"127.0.0.1",
    body: bytes | None = None,
) -> bytes:
    lines = [method + b" " + path + b" HTTP/1.1", b"Host: " + host, b"Connection: close"]
    lines.append(b"Authorization: " + (auth if auth is not None else f"Bearer {TOKEN}".encode()))
    if body is not None:
        lines.append(b"Content-Length: " + str(len(body)).encode())
    return b"\r\n".join(lines) + b"\r\n\r\n" + (body or b"")


def matches(canonical: str, path: str) -> bool:
    return re.fullmatch(re.sub(r"\{[^}]*\}", "[^/]+", canonical), path) is not None


def cases_for(method: str, canonical: str, route: Route, seed: Seed) -> Iterator[Case]:
    seeded = {name: quote(getattr(seed, attr), safe="") for name, attr in route.params.items()}
    unknown = {name: quote(UNKNOWN_IDS[attr], safe="") for name, attr in route.params.items()}
    valid_path = fill(canonical, seeded)
    head = method == "HEAD"
    template = route.body(seed) if route.body is not None and not head else None
    valid_body = encode(template) if template is not None else None
    # A command's valid request acts, so its bodies go to an unknown id, where they must be refused.
    body_path = fill(canonical, unknown) if route.command else valid_path

    def case(family: str, label: str, **kw: Any) -> Case:
        kw.setdefault("path", valid_path)
        return Case(family, label, method, **kw)

    if head:
        # The same middleware and handler as the GET: its token, Host and ids, answered without a body.
        yield case("auth", "none", drop_auth=True, want=401)
        yield case("host", "rebinding", headers={"Host": "localhost.evil.com"}, want=403)
        for name in route.params:
            yield case("ids", f"{name}=unknown", path=fill(canonical, {**seeded, name: unknown[name]}))
            yield case("ids", f"{name}=traversal", path=fill(canonical, {**seeded, name: BAD_IDS[0]}))
        yield Case(
            "methods", "FOO", method, valid_path, raw=raw_request(b"FOO", valid_path.encode()), want=400
        )
        return
    # Auth first: a missing or wrong token is refused before anything, even a valid command.
    for index, value in enumerate(AUTH):
        yield case("auth", f"token{index}", content=valid_body, headers={"Authorization": value}, want=401)
    yield case("auth", "none", content=valid_body, drop_auth=True, want=401)
    yield case(
        "auth",
        "not-utf8",
        raw=raw_request(method.encode(), valid_path.encode(), auth=b"Bearer \xff\xfe"),
        want=401,
    )
    for host in REBINDING_HOSTS:
        yield case("host", host, content=valid_body, headers={"Host": host}, want=403)
    yield case(
        "host", "not-utf8", raw=raw_request(method.encode(), valid_path.encode(), host=b"\xff\xfe"), want=403
    )

    for name in route.params:
        names = name in route.names
        for label, value in [("unknown", unknown[name]), *((v[:24], v) for v in BAD_IDS)]:
            path = fill(canonical, {**seeded, name: value})
            yield case(
                "ids", f"{name}={label}", path=path, content=valid_body, bad=not (names and valid_body)
            )
        # Literal dot segments go raw: a client (httpx too) would resolve them before sending.
        for dots in (".", ".."):
            path = fill(canonical, {**seeded, name: dots})
            raw = raw_request(method.encode(), path.encode(), body=valid_body)
            yield case("ids", f"{name}={dots}", path=path, raw=raw, bad=not (names and valid_body))

    for name in route.query:
        for value in BAD_QUERY:
            path = f"{valid_path}?{name}={value}"
            words = name in route.text and value in PLAIN_TEXT
            yield case("query", f"{name}={value[:24]}", path=path, content=valid_body, bad=not words)

    methods = resource_methods()
    for other in OTHER_METHODS:
        if other not in methods[canonical]:
            # /api/bots/presets is also /api/bots/{id}: PUT there is a bot update, refused otherwise.
            shadowed = any(other in m and matches(p, valid_path) for p, m in methods.items())
            yield Case("methods", other, other, valid_path, want=None if shadowed else 405)
    for odd in ("FOO", "get", "G\x01T", "BREW"):
        yield case("methods", odd, raw=raw_request(odd.encode(), valid_path.encode()), want=400)
    yield case(
        "http", "line-too-long", raw=raw_request(method.encode(), valid_path.encode() + b"?q=" + b"a" * 9000)
    )

    if template is None:
        bad = route.command
        for index, content in enumerate([b"{", b"[" * 100_000, encode({"a": "\ud800"})]):
            yield case("body", f"ignored{index}", path=body_path, content=content, bad=bad)
        yield case("body", "10MB", path=body_path, content=b"x" * (10 * MB), bad=bad)
        return

    def body_case(
        family: str,
        label: str,
        content: bytes,
        *,
        bad: bool = True,
        want: int | None = None,
        names: str | None = None,
    ) -> Case:
        return case(family, label, path=body_path, content=content, bad=bad, want=want, names=names)

    for index, content in enumerate(MALFORMED):
        yield body_case("malformed", str(index), content)
    for index, content in enumerate([b"", b" \r\n\t "]):
        yield body_case("empty", str(index), content, bad=not route.body_optional)
    for index, content in enumerate(NOT_OBJECTS):
        yield body_case("not-object", str(index), content)
    for index, content in enumerate(DEEP):
        yield body_case("deep", str(index), content)
    first = route.fields[0]
    yield body_case("deep", "40 lists", encode(with_value(template, first.path, NESTED_40)))

    over = 413 if not route.body_cap else 400
    yield body_case("size", "10MB", encode(with_value(template, first.path, "a" * (10 * MB))), want=over)
    yield case(
        "size",
        "2MB chunked",
        path=body_path,
        content=encode({"text": "a" * (2 * MB)}),
        chunked=True,
        want=over,
    )
    if route.body_cap:
        past = encode(with_value(template, first.path, "a" * (route.body_cap + MB)))
        yield body_case("size", "past the route's cap", past, want=413)
    for key in ("\ud800", "a\x00"):
        yield body_case("text", f"key {key!r}", encode({key: "x", **template}))

    for f in route.fields:
        name = f.name
        # The message names the field, as the body spells it ("apiKey", "schedule.days[0]" or "days").
        named = next(str(step) for step in reversed(f.path) if isinstance(step, str))
        for literal in CONSTANTS:
            body = encode(with_value(template, f.path, Raw(literal)))
            yield body_case("constants", f"{name}={literal}", body, names=named)
        for wrong in WRONG_TYPES[f.kind]:
            body = encode(with_value(template, f.path, wrong))
            yield body_case("types", f"{name}={wrong!r}"[:60], body, names=named)
        yield body_case(
            "types", f"{name}=null", encode(with_value(template, f.path, None)), bad=not f.accepts_null
        )
        if f.required:
            yield body_case("missing", name, encode(without(template, f.path)))
        if f.kind in ("num", "amount", "instant"):
            for number in BAD_NUMBERS:
                label = f"{name}={number.text[:12] if isinstance(number, Raw) else number}"
                body = encode(with_value(template, f.path, number))
                yield body_case("numbers", label, body, names=named)
        if f.kind == "obj":
            yield body_case(
                "text",
                f"{name} key",
                encode(with_value(template, f.path, {**value_at(template, f.path), "\ud800": 1})),
            )
        if f.kind == "str":
            valid = value_at(template, f.path)
            for text in BAD_TEXT:
                body = encode(with_value(template, f.path, valid + text))
                yield body_case("text", f"{name}={text!r}", body, names=named)
            for big in (MB, 900_000):
                yield body_case(
                    "size", f"{name}={big} chars", encode(with_value(template, f.path, "a" * big))
                )
    if any(f.required and len(f.path) == 1 for f in route.fields):
        yield body_case("missing", "all", b"{}")
    for index, extra in enumerate(route.more_bad(seed) if route.more_bad else []):
        yield body_case("more", str(index), encode(extra))
    yield body_case("unknown", "field", encode({**template, "zzz": 1}), bad=route.strict)

    # What the route may accept: only the answer's status is checked.
    for f in route.fields:
        if f.kind == "str":
            valid = value_at(template, f.path)
            for mark in RTL:
                yield body_case(
                    "rtl", f"{f.name}", encode(with_value(template, f.path, mark + valid + mark)), bad=False
                )


# ---- state --------------------------------------------------------------------------------------------


class State:
    """What a refused request must leave as it was."""

    def __init__(self, client: httpx.AsyncClient, data_dir: Path, secrets: MemorySecretStore) -> None:
        self._client = client
        self._data_dir = data_dir
        self._secrets = secrets
        self._db = sqlite3.connect(f"file:{data_dir / 'errand.db'}?mode=ro", uri=True)

    def close(self) -> None:
        self._db.close()

    def all_sent(self, task_id: str) -> bool:
        """The task has something to deliver and all of it is delivered."""
        rows = self._db.execute("SELECT status FROM deliveries WHERE task_id = ?", (task_id,)).fetchall()
        return bool(rows) and all(status == "sent" for (status,) in rows)

    def quick(self) -> tuple[Any, ...]:
        """Cheap enough for every request: SQLite's data_version moves with every commit by the host."""
        (version,) = self._db.execute("PRAGMA data_version").fetchone()
        return version, self._files(), sorted(self._secrets.values.items())

    def _files(self) -> list[tuple[str, int]]:
        found: list[tuple[str, int]] = []
        root_length = len(str(self._data_dir)) + 1
        for root, dirs, files in os.walk(self._data_dir):
            found += [(os.path.join(root, name)[root_length:], -1) for name in dirs]
            for name in files:
                if not name.startswith("errand.db"):
                    path = os.path.join(root, name)
                    found.append((path[root_length:], os.lstat(path).st_size))
        return sorted(found)

    async def full(self) -> dict[str, Any]:
        lists = (
            "/api/bots",
            "/api/conversations",
            "/api/tasks",
            "/api/rules",
            "/api/attention",
            "/api/prices",
        )
        seen = await self._all(lists)
        details = [
            f"/api/conversations/{c['id']}/messages" for c in seen["/api/conversations"]["conversations"]
        ]
        details += [f"/api/tasks/{t['id']}" for t in seen["/api/tasks"]["tasks"]]
        details += [f"/api/rules/{r['id']}/versions" for r in seen["/api/rules"]["rules"]]
        seen.update(await self._all(details))
        tables = [row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        seen["rows"] = {
            t: self._db.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in sorted(tables)
        }
        seen["quick"] = self.quick()[1:]
        return seen

    async def _all(self, paths: Iterable[str]) -> dict[str, Any]:
        paths = list(paths)
        answers = await asyncio.gather(*(self._client.get(path) for path in paths))
        for path, r in zip(paths, answers, strict=True):
            assert r.status_code == 200, (path, r.text)
        return {path: r.json() for path, r in zip(paths, answers, strict=True)}


# ---- sending -------------------------------------------------------------------------------------------


async def send(client: httpx.AsyncClient, case: Case) -> tuple[int, bytes]:
    SENT["requests"] += 1
    if case.raw is not None:
        status, body = await send_raw(client, case.raw)
    else:
        content: bytes | AsyncIterator[bytes] | None = case.content
        if case.chunked and case.content is not None:
            content = _chunks(case.content)
        # As UTF-8 bytes: httpx would refuse a str header that is not ASCII.
        headers = {name.encode(): value.encode() for name, value in case.headers.items()}
        request = client.build_request(case.method, case.path, content=content, headers=headers)
        if case.drop_auth:
            del request.headers["Authorization"]
        response = await client.send(request)
        status, body = response.status_code, response.content
    if status >= 500:
        SENT["5xx"] += 1
    return status, body


async def _chunks(content: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(content), 65_536):
        yield content[start : start + 65_536]


async def send_raw(client: httpx.AsyncClient, data: bytes) -> tuple[int, bytes]:
    url = client.base_url
    reader, writer = await asyncio.open_connection(url.host, url.port)
    try:
        writer.write(data)
        await writer.drain()
        answer = await reader.read()  # Connection: close, and aiohttp closes after a parse error anyway
    finally:
        writer.close()
        await writer.wait_closed()
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def problems_with(case: Case, status: int, body: bytes) -> list[str]:
    found: list[str] = []
    if status >= 500:
        found.append(f"{case}: {status} {body[:300]!r}")
    if case.want is not None and status != case.want:
        found.append(f"{case}: wanted {case.want}, got {status} {body[:200]!r}")
    elif case.bad and not 400 <= status < 500:
        found.append(f"{case}: bad input answered {status} {body[:200]!r}")
    if 400 <= status < 500 and case.method != "HEAD":
        try:
            error = json.loads(body)["error"]
            if not (isinstance(error["code"], str) and isinstance(error["message"], str)):
                raise TypeError(error)
        except (ValueError, KeyError, TypeError):
            found.append(f"{case}: {status} without the JSON error shape: {body[:200]!r}")
        else:
            if case.names is not None and case.names not in error["message"]:
                found.append(f"{case}: the message does not name {case.names}: {error['message'][:200]!r}")
    return found


# ---- the host ------------------------------------------------------------------------------------------


SEED_TASK = "Seed question"
NEEDS_TASK = frozenset({"task", "run", "item"})


@dataclass
class Sweep:
    host: Host
    client: httpx.AsyncClient
    state: State
    model_url: str

    async def seed_for(self, route: Route) -> Seed:
        """One of everything the route's path names; a task waiting on a question only where it is named,
        since running it is most of a host's set-up time."""
        client = self.client
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        task = run = item = ""
        if NEEDS_TASK & set(route.params.values()):
            created = (await client.post("/api/tasks", json={"text": SEED_TASK})).json()
            task, conversation = created["id"], created["conversationId"]

            async def asked() -> bool:
                # Settled: the run ended and its question was pushed, so nothing writes after this.
                if self.host.tasks.runner.active_run(task) is not None or not self.state.all_sent(task):
                    return False
                items = (await client.get("/api/attention")).json()["items"]
                return any(i["taskId"] == task for i in items)

            await wait_until(self.host.bus, asked, timeout=10, what="the seeded task's question")
            item = (await client.get("/api/attention")).json()["items"][0]["id"]
            run = (await client.get(f"/api/tasks/{task}")).json()["runs"][0]["id"]
        else:
            conversation = (await client.post("/api/conversations", json={"title": "Seed"})).json()["id"]
        rule = await client.post(
            "/api/rules", json={"title": "Seed rule", "instruction": "check X", "schedule": DAILY_8}
        )
        price = await client.put("/api/prices/seed-model", json=PRICE)
        assert (rule.status_code, price.status_code) == (201, 200), (rule.text, price.text)
        channel = new_id("ch")  # stored as a login leaves it, without reaching a platform

        def stored(s: Session) -> None:
            channel_rows.insert_channel(s, id=channel, bot_id=bot, kind="wechat", now=1.0)
            s.add(ChannelPeerRow(channel_id=channel, peer=SEED_GROUP, title="Seed group"))
            s.flush()
            channel_rows.ask_admission(s, channel, SEED_GROUP)  # a group it was added to

        await self.host.db.write(stored)
        write_skill(self.host.data_dir / "bots" / bot / "skills", "seed-skill")
        note = await client.post(f"/api/bots/{bot}/memory", json={"text": "Seed note"})
        assert note.status_code == 201, note.text
        return Seed(
            bot=bot,
            conversation=conversation,
            task=task,
            run=run,
            rule=rule.json()["id"],
            price="seed-model",
            item=item,
            model_url=self.model_url,
            channel=channel,
            group=SEED_GROUP,
            memory=note.json()["id"],
        )


@pytest.fixture
async def feishu() -> AsyncIterator[FakeFeishu]:
    async with FakeFeishu(app_id=FEISHU_APP, app_secret=FEISHU_SECRET) as server:
        yield server


@pytest.fixture
async def sweep(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    clock: FakeClock,
    script: SessionScript,
    feishu: FakeFeishu,
) -> AsyncIterator[Sweep]:
    secrets = MemorySecretStore()
    # A channel added by a valid request tries its login here, where nothing listens, not at WeChat; an
    # app is checked against the fake Feishu.
    nowhere = {"ERRAND_WECHAT_BASE_URL": "http://127.0.0.1:9", "ERRAND_FEISHU_DOMAIN": feishu.url}
    host = make_host(
        tmp_path / "data", model_server.base_url, home=home, secrets=secrets, clock=clock, environ=nowhere
    )
    script.add(SEED_TASK, [report("needs_you", "need a choice", question="Which one?", options=["A", "B"])])
    async with running_api(host) as client:
        state = State(client, tmp_path / "data", secrets)
        try:
            yield Sweep(host, client, state, model_server.base_url)
        finally:
            state.close()


# ---- the tests -----------------------------------------------------------------------------------------

TABLE = route_table()
# aiohttp adds HEAD to every GET; a GET's test sweeps its HEAD too, on the same host.
SWEPT = [pytest.param(m, p, id=f"{m} {p}") for m, p in TABLE if m != "HEAD"]


def test_every_route_has_a_case_generator() -> None:
    missing = [f"{m} {p}" for m, p in TABLE if spec_of(m, p) is None]
    assert not missing, f"routes without an entry in ROUTES (say what a valid request is): {missing}"
    stale = sorted(set(ROUTES) - set(TABLE))
    assert not stale, f"ROUTES has entries for routes that no longer exist: {stale}"
    lone_heads = [p for m, p in TABLE if m == "HEAD" and ("GET", p) not in TABLE]
    assert not lone_heads, f"HEAD routes without a GET, which would go unswept: {lone_heads}"


@pytest.mark.parametrize(("method", "path"), SWEPT)
async def test_bad_input_is_refused_with_a_json_error_and_changes_nothing(
    method: str, path: str, sweep: Sweep
) -> None:
    route = spec_of(method, path)
    assert route is not None, f"no case generator for {method} {path}: add it to ROUTES"
    seed = await sweep.seed_for(route)
    methods = [method, *(["HEAD"] if ("HEAD", path) in TABLE else [])]
    cases = [c for m in methods for c in cases_for(m, path, route, seed)]
    problems: list[str] = []
    baseline = await sweep.state.full()
    before = sweep.state.quick()
    for case in sorted((c for c in cases if c.bad), key=lambda c: c.family):
        status, body = await send(sweep.client, case)
        problems += problems_with(case, status, body)
        after = sweep.state.quick()
        if after != before:
            problems.append(f"{case}: answered {status} but changed the database, files or keys")
            before = after
    if await sweep.state.full() != baseline:
        problems.append("the refused requests changed what the API shows")
    for case in (c for c in cases if not c.bad):
        status, body = await send(sweep.client, case)
        problems += problems_with(case, status, body)
    health = await sweep.client.get("/api/health")
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert not problems, f"{len(problems)} of {len(cases)} requests went wrong:\n" + "\n".join(problems[:60])


async def test_only_exact_loopback_hosts_are_served(sweep: Sweep) -> None:
    for host in (
        "127.0.0.1",
        "localhost",
        "[::1]",
        "localhost:1234",
        "[::1]:8080",
        "LOCALHOST",
        "127.0.0.1:80",
    ):
        r = await sweep.client.get("/api/health", headers={"Host": host})
        assert r.status_code == 200, host
    for host in FOREIGN_HOSTS:
        r = await sweep.client.get("/api/health", headers={b"Host": host.encode()})
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden_host", host


@pytest.mark.slow
async def test_a_token_from_a_previous_start_is_refused(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    data_dir = tmp_path / "data"
    env = serve_env(model_server, home)
    tokens: list[dict[str, str]] = []
    for _ in range(2):
        async with serve_process(data_dir, env) as proc:
            await read_until_listening(proc)
            tokens.append(json.loads((data_dir / "api.json").read_text()))
            if len(tokens) == 2:
                old, new = tokens
                assert old["token"] != new["token"]
                async with httpx.AsyncClient(base_url=new["url"], timeout=10) as client:
                    for path in ("/api/health", "/api/bots", "/api/tasks"):
                        stale = await client.get(path, headers={"Authorization": f"Bearer {old['token']}"})
                        assert stale.status_code == 401 and stale.json()["error"]["code"] == "unauthorized"
                        fresh = await client.get(path, headers={"Authorization": f"Bearer {new['token']}"})
                        assert fresh.status_code == 200
            proc.terminate()
            assert await proc.wait() == 0


async def test_a_preview_from_the_last_accepted_time_still_answers(client: httpx.AsyncClient) -> None:
    """Fifty times of a sparse cron (or as many as its five-year horizon finds) from the year 9000 stay
    inside the calendar, which ends with 9999."""
    from core.api.rule_routes import LAST_INSTANT

    for schedule in ({"kind": "cron", "cron": "0 0 29 2 *"}, dict(SCHEDULE)):
        body = {"schedule": schedule, "from": LAST_INSTANT, "count": 50}
        r = await client.post("/api/rules/preview", json=body)
        assert r.status_code == 200, r.text
        assert r.json()["next"][0].startswith("900")


# The outside sweep's findings (issue 12), each with the answer it now gets: (method, path, body, status,
# the start of the error message). `{bot}` is the default bot.
FOUND = [
    ("POST", "/api/bots", b'{"name": "\\ud800"}', 400, "name: the text holds a lone surrogate"),
    ("POST", "/api/tasks", b'{"text": "x\\ud800"}', 400, "text: the text holds a lone surrogate"),
    ("PUT", "/api/bots/{bot}", b'{"model": {"model": "\\udfff"}}', 400, "model.model: the text holds"),
    ("POST", "/api/rules", b'{"title": "\\ud800"}', 400, "title: the text holds a lone surrogate"),
    ("POST", "/api/conversations", b'{"title": "\\ud800"}', 400, "title: the text holds"),
    ("POST", "/api/bots", b'{"name": "a\\u0000b"}', 400, "name: the text holds a NUL character"),
    ("POST", "/api/bots", b"[" * 100_000, 400, "body: nests deeper than 32 levels"),
    ("POST", "/api/tasks", b'{"text": "x", "budgetUsd": NaN}', 400, "budgetUsd: must be a finite number"),
    ("POST", "/api/tasks", b'{"text": "x", "budgetUsd": true}', 400, "budgetUsd: must be a number"),
    ("PUT", "/api/bots/{bot}", b'{"taskSlots": true}', 400, "taskSlots: must be a whole number"),
    ("PUT", "/api/bots/{bot}", b'{"taskSlots": -1}', 400, "taskSlots: must be between 1 and 4"),
    ("PUT", "/api/bots/{bot}", b'{"model": {"apiKey": "sk-\\u00e9"}}', 400, "apiKey: must be plain ASCII"),
    ("POST", "/api/bots", b'{"name": "x", "apiKey": "sk-\\u00e9"}', 400, "apiKey: must be plain ASCII"),
    (
        "POST",
        "/api/bots/{bot}/test-connection",
        b'{"apiKey": "sk-\\u00e9"}',
        400,
        "apiKey: must be plain ASCII characters; paste the key again",
    ),
    (
        "POST",
        "/api/bots/{bot}/test-connection",
        b'{"baseUrl": "http://127.0.0.1:9/v1\\u0000"}',
        400,
        "baseUrl: the text holds a NUL",
    ),
    (
        "POST",
        "/api/bots/{bot}/test-connection",
        b'{"baseUrl": "http://127.0.0.1:9/v1\\r\\nX-Evil: 1"}',
        400,
        "baseUrl: has spaces, line breaks or control characters inside",
    ),
    (
        "POST",
        "/api/bots/{bot}/test-connection",
        b'{"baseUrl": "http://127.0.0.1:9/' + b"v" * 200_000 + b'"}',
        400,
        "baseUrl: is longer than 2048 characters",
    ),
    (
        "POST",
        "/api/rules/preview",
        b'{"schedule": {"kind": "daily", "time": "08:00"}, "from": 1' + b"0" * 400 + b"}",
        400,
        "from: is too large a number",
    ),
    (
        "POST",
        "/api/rules/preview",
        b'{"schedule": {"kind": "daily", "time": "08:00"}, "from": 1e308}',
        400,
        "from: must be a time between 1970 and the year 9000",
    ),
    (
        "POST",
        "/api/rules/preview",
        b'{"schedule": {"kind": "daily", "time": "08:00"}, "from": "10000-01-01"}',
        400,
        "from: must be an ISO 8601 time",
    ),
    (
        "POST",
        "/api/rules/preview",
        b'{"schedule": {"kind": "daily", "time": "08:00"}, "from": 253402300800}',
        400,
        "from: must be a time between 1970 and the year 9000",
    ),
    (
        "POST",
        "/api/tasks",
        b'{"text": "' + b"a" * (10 * MB) + b'"}',
        413,
        "body: is larger than 1000000 bytes",
    ),
    ("GET", "/api/tasks/%2e%2e%2f%2e%2e%2fetc%2fpasswd", None, 404, "No task with id '../../etc/passwd'"),
    ("PATCH", "/api/tasks", None, 405, "PATCH is not allowed on /api/tasks"),
]


@pytest.mark.parametrize(("method", "path", "body", "status", "message"), FOUND)
async def test_what_the_outside_sweep_found_is_refused_plainly(
    client: httpx.AsyncClient,
    tmp_path: Path,
    method: str,
    path: str,
    body: bytes | None,
    status: int,
    message: str,
) -> None:
    bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
    folders = sorted((tmp_path / "data" / "bots").rglob("*"))
    r = await client.request(method, path.replace("{bot}", bot), content=body)
    assert r.status_code == status, r.text
    assert r.json()["error"]["message"].startswith(message), r.text
    assert sorted((tmp_path / "data" / "bots").rglob("*")) == folders  # no bot or task folder left behind


async def test_a_header_or_method_the_http_parser_refuses_gets_the_json_error_too(
    client: httpx.AsyncClient,
) -> None:
    for data, status, code in [
        (raw_request(b"GET", b"/api/health", auth=b"Bearer \xff\xfe"), 401, "unauthorized"),
        (raw_request(b"GET", b"/api/health", host=b"[::1].evil.com"), 403, "forbidden_host"),
        (raw_request(b"FOO", b"/api/health"), 400, "bad_method"),
        (raw_request(b"GET", b"/api/health?" + b"a" * 9000), 400, "bad_request"),
    ]:
        answer_status, answer = await send_raw(client, data)
        assert (answer_status, json.loads(answer)["error"]["code"]) == (status, code)


async def test_a_refused_upload_does_not_hold_up_stopping(rules_host: Host) -> None:
    """A body refused unread leaves its connection lingering; that once held stop() (SIGTERM) for 10 s."""
    async with running_api(rules_host) as client:
        r = await client.post("/api/tasks", content=b'{"text": "' + b"a" * (10 * MB) + b'"}')
        assert r.status_code == 413
        started = time.perf_counter()
    assert time.perf_counter() - started < LINGER_S + 3

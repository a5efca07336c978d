"""A bot's MCP servers, run for real: the fake server of tests/fakes/mcp_server.py, written with the SDK's
own server API, started over stdio and over streamable HTTP, with its faults chosen on its command line."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.agent.session_spec import SessionSpec
from core.agent.tool_api import ToolError
from core.bus import EventBus
from core.clock import SystemClock
from core.errors import InvalidInputError, NotFoundError
from core.mcp.config import KEPT_SECRET
from core.mcp.service import McpService
from core.mcp.toolset import BotToolset
from core.store.bots import insert_bot
from core.store.database import Database
from core.store.mcp_servers import list_servers
from tests.fakes.secrets import MemorySecretStore
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
BOT = "b_000000000001"


def fake(*options: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server", *options], "cwd": str(ROOT)}


@dataclass
class Rig:
    db: Database
    service: McpService
    bus: EventBus
    secrets: MemorySecretStore
    tmp: Path

    async def toolset(self, *, observing: bool = False) -> BotToolset:
        spec = SessionSpec(
            session_id="chat-c_1",
            kind="chat",
            bot_id=BOT,
            cwd=self.tmp,
            model=None,  # type: ignore[arg-type]
            permission=None,  # type: ignore[arg-type]
            observing=observing,
        )
        return await self.service.for_session(spec)

    async def state(self, name: str) -> str:
        view = await self.service.view(BOT)
        return next(s.state for s in view.servers if s.name == name)

    async def wait_state(self, name: str, *states: str, timeout: float = 20.0) -> None:
        async def reached() -> bool:
            return await self.state(name) in states

        await wait_until(self.bus, reached, timeout, what=f"{name} to be {'/'.join(states)}")

    async def status(self, name: str) -> Any:
        view = await self.service.view(BOT)
        return next(s for s in view.servers if s.name == name)


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    db = Database.for_data_dir(tmp_path)
    await db.open()
    await db.write(lambda s: insert_bot(s, id=BOT, name="Scout", workspace=str(tmp_path), now=0.0))
    bus = EventBus()
    secrets = MemorySecretStore()

    async def require_bot(bot_id: str) -> None:
        if bot_id != BOT:
            raise NotFoundError("bot", bot_id)

    service = McpService(
        db,
        secrets,
        SystemClock(),
        bus,
        logs_dir=tmp_path / "logs",
        workspace_of=lambda _: tmp_path,
        require_bot=require_bot,
    )
    yield Rig(db, service, bus, secrets, tmp_path)
    await service.close()
    await db.close()


class _Ctx:
    """The parts of a ToolContext an MCP tool reads."""

    def __init__(self, approve: bool | None = None) -> None:
        self.session_id = "chat-c_1"
        self.asked: list[tuple[str, str]] = []
        self._approve = approve
        self.approvals = self if approve is not None else None

    async def request(self, session_id: str, action: str, detail: str) -> bool:
        self.asked.append((action, detail))
        return bool(self._approve)


async def call(toolset: BotToolset, name: str, ctx: _Ctx | None = None, **arguments: Any) -> str:
    spec = next(t for t in toolset.tools() if t.name == name)
    args = spec.args_model.model_validate(arguments)
    return await spec.handler(ctx or _Ctx(), args)  # type: ignore[arg-type]


async def test_a_stdio_server_starts_on_first_use_and_its_tools_answer(rig: Rig) -> None:
    await rig.service.replace(BOT, {"mcpServers": {"fake": {**fake(), "permission": "allow"}}})
    assert await rig.state("fake") == "stopped"  # saving does not start it: a session's use does
    toolset = await rig.toolset()
    await rig.wait_state("fake", "running")
    names = [t.name for t in toolset.tools()]
    assert {"fake__echo", "fake__add", "fake__slow", "fake__grow"} <= set(names)
    echo = next(t for t in toolset.tools() if t.name == "fake__echo")
    assert echo.json_schema()["properties"]["text"]["type"] == "string"
    assert echo.description.startswith("[fake] Say the text back")
    assert await call(toolset, "fake__echo", text="你好") == "你好"
    assert "stderr" not in (await rig.status("fake")).reason
    assert "fake MCP server starting" in (await rig.status("fake")).stderr_tail


async def test_bad_arguments_are_refused_before_the_call_and_a_tool_error_is_the_models_to_read(
    rig: Rig, tmp_path: Path
) -> None:
    calls = tmp_path / "calls.jsonl"
    await rig.service.replace(
        BOT, {"mcpServers": {"fake": {**fake("--calls", str(calls)), "permission": "allow"}}}
    )
    toolset = await rig.toolset()
    await rig.wait_state("fake", "running")
    with pytest.raises(ToolError, match="invalid arguments for fake__add: 'b' is a required property"):
        await call(toolset, "fake__add", a=1)
    with pytest.raises(ToolError, match=r"fake__fail reported an error: .*failed on purpose"):
        await call(toolset, "fake__fail")
    assert [json.loads(line)["tool"] for line in calls.read_text().splitlines()] == ["fail"]
    assert "[image image/png" in await call(toolset, "fake__picture")


async def test_a_call_that_times_out_fails_alone_and_the_server_keeps_running(rig: Rig) -> None:
    await rig.service.replace(BOT, {"mcpServers": {"fake": {**fake(), "permission": "allow", "timeout": 1}}})
    toolset = await rig.toolset()
    await rig.wait_state("fake", "running")
    with pytest.raises(ToolError, match="did not answer within 1 s; the call was given up"):
        await call(toolset, "fake__slow", seconds=30)
    assert await rig.state("fake") == "running"
    assert await call(toolset, "fake__echo", text="still here") == "still here"


async def test_new_tools_appear_when_the_server_says_its_list_changed(rig: Rig) -> None:
    await rig.service.replace(BOT, {"mcpServers": {"fake": {**fake(), "permission": "allow"}}})
    toolset = await rig.toolset()
    await rig.wait_state("fake", "running")
    before = toolset.version()
    assert await call(toolset, "fake__grow") == "grown"

    async def grown() -> bool:
        return "fake__extra" in {t.name for t in toolset.tools()}

    await wait_until(rig.bus, grown, 10, what="the new tool")
    assert toolset.version() != before
    assert await call(toolset, "fake__extra") == "extra here"


async def test_a_crashed_server_is_started_again_and_its_tools_come_back(rig: Rig) -> None:
    await rig.service.replace(BOT, {"mcpServers": {"fake": {**fake(), "permission": "allow"}}})
    toolset = await rig.toolset()
    await rig.wait_state("fake", "running")
    with pytest.raises(ToolError, match="stopped during the call"):
        await call(toolset, "fake__die")
    await rig.wait_state("fake", "failed", "starting")
    assert not toolset.tools()  # no tools of a server that is not running
    await rig.wait_state("fake", "running")
    assert await call(toolset, "fake__echo", text="back") == "back"
    assert (await rig.status("fake")).attempts == 0


async def test_a_server_that_exits_at_once_shows_its_reason_and_stderr_and_the_others_work(rig: Rig) -> None:
    await rig.service.replace(BOT, {"mcpServers": {"broken": fake("--exit-at-once"), "good": fake()}})
    toolset = await rig.toolset()
    await rig.wait_state("good", "running")
    status = await rig.status("broken")
    assert status.state in ("starting", "failed")
    # The backoff pauses add up to 31 s before it gives up; what a person sees meanwhile is the reason.
    await rig.wait_state("broken", "failed")
    status = await rig.status("broken")
    assert "exited while starting" in status.reason
    assert "fatal: no configuration found" in status.stderr_tail
    assert {t.name for t in toolset.tools()} >= {"good__echo"}  # the rest of the bot is unaffected


async def test_garbage_on_stdout_is_named_and_a_hang_fails_after_the_start_time_out(rig: Rig) -> None:
    await rig.service.replace(
        BOT,
        {"mcpServers": {"chatty": fake("--garbage"), "stuck": {**fake("--hang"), "startTimeout": 1}}},
    )
    await rig.toolset()
    await rig.wait_state("chatty", "running")  # a banner line is skipped, the server still works
    await rig.wait_state("stuck", "failed")
    assert "did not answer within 1 s of starting" in (await rig.status("stuck")).reason


async def test_a_slow_server_gets_its_tools_when_it_is_ready(rig: Rig, tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    await rig.service.replace(BOT, {"mcpServers": {"slow": fake("--wait-for", str(ready))}})
    toolset = await rig.toolset()
    await rig.wait_state("slow", "starting")
    assert toolset.tools() == []
    ready.touch()
    await rig.wait_state("slow", "running")
    assert "slow__echo" in {t.name for t in toolset.tools()}


async def test_ask_permission_waits_for_a_person_and_a_refusal_makes_no_call(
    rig: Rig, tmp_path: Path
) -> None:
    calls = tmp_path / "calls.jsonl"
    await rig.service.replace(BOT, {"mcpServers": {"fake": fake("--calls", str(calls))}})
    toolset = await rig.toolset()
    await rig.wait_state("fake", "running")
    refusing = _Ctx(approve=False)
    with pytest.raises(ToolError, match="did not approve"):
        await call(toolset, "fake__echo", refusing, text="rm everything")
    assert refusing.asked == [("use an outside tool", 'fake · echo {"text": "rm everything"}')]
    assert not calls.exists()
    approving = _Ctx(approve=True)
    assert await call(toolset, "fake__echo", approving, text="ok") == "ok"
    assert len(approving.asked) == 1


async def test_an_observing_run_gets_only_read_only_servers(rig: Rig) -> None:
    await rig.service.replace(
        BOT,
        {"mcpServers": {"looks": {**fake(), "readOnly": True}, "acts": {**fake(), "permission": "allow"}}},
    )
    observing = await rig.toolset(observing=True)
    await rig.wait_state("looks", "running")
    assert await rig.state("acts") == "stopped"  # not even started for it
    names = {t.name for t in observing.tools()}
    assert "looks__echo" in names and not any(n.startswith("acts__") for n in names)
    # Read-only servers never ask: a rule that only looks needs no person.
    assert await call(observing, "looks__echo", _Ctx(approve=False), text="fine") == "fine"


async def test_secrets_reach_the_server_through_the_keyring_and_are_never_shown(rig: Rig) -> None:
    server = {**fake("--require-env", "FAKE_TOKEN=s3cret"), "env": {"FAKE_TOKEN": "s3cret"}}
    view = await rig.service.replace(BOT, {"mcpServers": {"fake": server}})
    assert view.config["mcpServers"]["fake"]["env"] == {"FAKE_TOKEN": KEPT_SECRET}
    stored = await rig.db.read(lambda s: list_servers(s, BOT))
    assert stored[0][1]["env"] == {"FAKE_TOKEN": KEPT_SECRET}  # the database never holds the value
    assert rig.secrets.values == {f"mcp/{BOT}/fake/env/FAKE_TOKEN": "s3cret"}
    await rig.toolset()
    await rig.wait_state("fake", "running")
    # Sending the config back as shown keeps the secret and the running server.
    await rig.service.replace(BOT, view.config)
    assert await rig.state("fake") == "running"
    assert rig.secrets.values == {f"mcp/{BOT}/fake/env/FAKE_TOKEN": "s3cret"}
    await rig.service.replace(BOT, {"mcpServers": {}})
    assert rig.secrets.values == {}


async def test_a_bad_config_saves_nothing_and_stops_nothing(rig: Rig) -> None:
    await rig.service.replace(BOT, {"mcpServers": {"fake": {**fake(), "permission": "allow"}}})
    await rig.toolset()
    await rig.wait_state("fake", "running")
    bad: list[dict[str, Any]] = [
        {"mcpServers": {"fake": {}}},
        {"mcpServers": {"other": {"command": "x", "env": {"T": KEPT_SECRET}}}},
    ]
    for body in bad:
        with pytest.raises(InvalidInputError):
            await rig.service.replace(BOT, body)
    view = await rig.service.view(BOT)
    assert list(view.config["mcpServers"]) == ["fake"]
    assert await rig.state("fake") == "running"
    with pytest.raises(NotFoundError):
        await rig.service.view("b_000000000999")


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.fakes.mcp_server",
            "--http",
            "--require-header",
            "Authorization=Bearer tok",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.kill()
        process.wait()


async def test_a_streamable_http_server_is_reached_with_its_headers(rig: Rig, http_server: str) -> None:
    servers = {
        "remote": {"url": http_server, "headers": {"Authorization": "Bearer tok"}, "permission": "allow"},
        "nokey": {"url": http_server},
    }
    await rig.service.replace(BOT, {"mcpServers": servers})
    toolset = await rig.toolset()
    await rig.wait_state("remote", "running")
    assert await call(toolset, "remote__add", a=2, b=3) == "5"
    await rig.wait_state("nokey", "failed")
    assert "401" in (await rig.status("nokey")).reason


async def test_closing_stops_every_server(rig: Rig) -> None:
    await rig.service.replace(BOT, {"mcpServers": {"fake": fake()}})
    await rig.toolset()
    await rig.wait_state("fake", "running")
    await asyncio.wait_for(rig.service.close(), 10)
    assert await rig.state("fake") == "stopped"

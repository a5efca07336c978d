"""MCP tools end to end: configured through the API, offered to the model in a chat turn, called, and
approved from needs-you when the server asks for it. A real host, the scripted model over HTTP and the fake
MCP server of tests/fakes/mcp_server.py over stdio."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.host_fixtures import running_api
from tests.integration.test_chat_api import messages, new_conversation, wait_for_roles
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def fake(*options: str, **settings: Any) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-m", "tests.fakes.mcp_server", *options],
        "cwd": str(ROOT),
    } | settings


async def bot_id(client: httpx.AsyncClient) -> str:
    bots = (await client.get("/api/bots")).json()["bots"]
    return str(next(b["id"] for b in bots if b["isDefault"]))


def tool_names(request_body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request_body.get("tools", [])]


async def test_a_chat_turn_is_offered_the_servers_tools_and_calls_one(
    host: Host, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    model_server.push_many(
        [
            Reply.tool_calls([ToolCallSpec("fake__add", {"a": 2, "b": 3})]),
            Reply.text("2 + 3 = 5"),
        ]
    )
    async with running_api(host) as client:
        bot = await bot_id(client)
        r = await client.put(f"/api/bots/{bot}/mcp", json={"mcpServers": {"fake": fake(permission="allow")}})
        assert r.status_code == 200, r.text
        saved = r.json()
        assert saved["servers"] == [
            {"name": "fake", "state": "stopped", "reason": "", "stderr": [], "tools": [], "attempts": 0}
        ]
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "add 2 and 3"})
        _, reply = await wait_for_roles(host, client, cid, ["user", "assistant"])
        assert reply["text"] == "2 + 3 = 5"
        tool_step = next(s for s in reply["steps"] if s["kind"] == "tool")
        assert tool_step["ok"] and "5" in tool_step["detail"]
        # The first request already had the server's tools: the turn waited for the server it started.
        first = model_server.requests[0].body
        assert "fake__add" in tool_names(first) and "bash" in tool_names(first)
        assert model_server.requests[1].messages[-1]["content"] == "5"
        state = (await client.get(f"/api/bots/{bot}/mcp")).json()["servers"][0]
        assert state["state"] == "running" and "add" in state["tools"]


async def test_a_call_to_an_ask_server_waits_in_needs_you_until_approved(
    host: Host, model_server: ScriptedModelServer, tmp_path: Path
) -> None:
    calls = tmp_path / "calls.jsonl"
    model_server.push_many(
        [
            Reply.tool_calls([ToolCallSpec("fake__echo", {"text": "ship it"})]),
            Reply.text("Done."),
        ]
    )
    async with running_api(host) as client:
        bot = await bot_id(client)
        r = await client.put(
            f"/api/bots/{bot}/mcp", json={"mcpServers": {"fake": fake("--calls", str(calls))}}
        )
        assert r.status_code == 200
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "ship it"})

        async def asked() -> bool:
            return bool((await client.get("/api/attention")).json()["items"])

        await wait_until(host.bus, asked, timeout=20, what="the approval in needs-you")
        [item] = (await client.get("/api/attention", params={"lang": "en"})).json()["items"]
        assert item["kind"] == "approval" and "fake · echo" in item["line"]
        assert not calls.exists()  # nothing reached the server before the person said yes
        assert (await client.post(f"/api/attention/{item['id']}/approve")).status_code == 200

        async def answered() -> bool:
            return "Done." in [m["text"] for m in await messages(client, cid)]

        await wait_until(host.bus, answered, timeout=20, what="the reply after the approval")
        assert '"ship it"' in calls.read_text()


async def test_bad_mcp_configs_are_refused_with_the_field_and_nothing_is_saved(host: Host) -> None:
    async with running_api(host) as client:
        bot = await bot_id(client)
        url = f"/api/bots/{bot}/mcp"
        assert (await client.put(url, json={"mcpServers": {"ok": fake()}})).status_code == 200
        for body, field in [
            ({"mcpServers": {"x": {}}}, "mcpServers.x"),
            ({"mcpServers": {"x": {"command": "npx", "env": {"KEY": 5}}}}, "mcpServers.x.env.KEY"),
            ({"mcpServers": "npx"}, "mcpServers"),
        ]:
            r = await client.put(url, json=body)
            assert r.status_code == 400, body
            assert r.json()["error"]["message"].startswith(field + ":")
        assert (await client.put(url, content=b"{not json")).status_code == 400
        assert list((await client.get(url)).json()["mcpServers"]) == ["ok"]
        assert (await client.get("/api/bots/b_000000000000/mcp")).status_code == 404

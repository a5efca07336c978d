"""A failed chat reply reads in the conversation's language (issue 17): a Chinese conversation gets Chinese
words that still name the server, an English one keeps the English sentence scripts read."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.model_server import ScriptedModelServer
from tests.integration.host_fixtures import make_host, running_api
from tests.integration.test_chat_api import new_conversation, wait_for_roles

WHERE = "http://127.0.0.1:9/v1"


async def test_an_unreachable_model_is_worded_in_chinese_for_a_chinese_conversation(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer
) -> None:
    host = make_host(tmp_path / "data", WHERE, home=home)
    async with running_api(host) as client:
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "你好"})
        got = await wait_for_roles(host, client, cid, ["user", "error"])
        assert got[1]["text"].startswith(f"连不上模型服务 {WHERE}")
        assert "Base URL" in got[1]["text"] and "Could not reach" not in got[1]["text"]


async def test_an_english_conversation_keeps_the_english_sentence(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer
) -> None:
    host = make_host(tmp_path / "data", WHERE, home=home)
    async with running_api(host) as client:
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "hello"})
        got = await wait_for_roles(host, client, cid, ["user", "error"])
        assert got[1]["text"].startswith(f"Could not reach the model server at {WHERE}")

"""Full-text search end to end: a real host on a real SQLite file, GET /api/search over real HTTP."""

from __future__ import annotations

import httpx
import pytest

from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.integration.host_fixtures import running_api
from tests.integration.test_chat_api import new_conversation, wait_for_roles


async def test_a_word_inside_a_reply_is_found_with_its_message_and_snippet(
    host: Host, model_server: ScriptedModelServer
) -> None:
    model_server.push(Reply.text("去成都的机票明天是780元，后天更便宜。"))
    async with running_api(host) as client:
        cid = await new_conversation(client)
        r = await client.post(f"/api/conversations/{cid}/messages", json={"text": "查一下机票"})
        assert r.status_code == 202
        _user, reply = await wait_for_roles(host, client, cid, ["user", "assistant"])

        r = await client.get("/api/search", params={"q": "成都的机票"})
        assert r.status_code == 200
        (hit,) = r.json()["hits"]
        assert (hit["kind"], hit["conversationId"], hit["messageId"]) == ("message", cid, reply["id"])
        start, end = hit["spans"][0]
        assert hit["snippet"][start:end] == "成都的机票"

        r = await client.get("/api/search", params={"q": '机票 "*'})
        assert r.status_code == 200 and r.json()["hits"] == []  # a query's quotes are text, never syntax


@pytest.mark.parametrize(
    "params", [{}, {"q": ""}, {"q": "   "}, {"q": "x", "limit": "0"}, {"q": "x", "limit": "a"}]
)
async def test_a_missing_query_or_bad_limit_is_a_json_400(host: Host, params: dict[str, str]) -> None:
    async with running_api(host) as client:
        r: httpx.Response = await client.get("/api/search", params=params)
    assert r.status_code == 400
    assert r.json()["error"]["code"] == "invalid_input"

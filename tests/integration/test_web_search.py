"""Web search end to end: absent from the model's tools until a service is set up through the API, then
searched by the model with the hits in its tool result, and gone again when turned off. A real host, the
scripted model and a fake SearXNG over HTTP (docs/web-search.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from core.host import Host
from tests.fakes.fake_search import FakeSearch
from tests.fakes.model_server import Reply, ToolCallSpec
from tests.integration.host_fixtures import running_api
from tests.integration.task_script import SessionScript
from tests.integration.test_chat_api import new_conversation
from tests.integration.test_memory import chat_once
from tests.integration.test_skills import tool_names, tool_result

pytestmark = pytest.mark.slow


@pytest.fixture
async def searxng() -> AsyncIterator[FakeSearch]:
    async with FakeSearch() as server:
        server.hits = [("GPU prices 2026", "https://example.com/gpu", "An H100 costs $2.10 an hour.")]
        yield server


async def test_the_model_searches_once_a_service_is_set_up_and_not_after_it_is_turned_off(
    host: Host, script: SessionScript, searxng: FakeSearch
) -> None:
    script.add(
        "chat",
        [
            Reply.text("I cannot search."),
            Reply.tool_calls([ToolCallSpec("web_search", {"query": "GPU  prices", "count": 3})]),
            Reply.text("An H100 is $2.10 an hour."),
            Reply.text("No search now."),
        ],
    )
    async with running_api(host) as client:
        shown = (await client.get("/api/web-search")).json()
        assert shown == {
            "provider": None,
            "url": "",
            "key": "",
            "active": None,
            "fromEnvironment": False,
            "problem": "",
        }
        cid = await new_conversation(client)
        await chat_once(host, client, cid, "what do GPUs cost?", 1)
        assert "web_search" not in tool_names(script.requests["chat"][0])

        saved = await client.put("/api/web-search", json={"provider": "searxng", "url": f"{searxng.url}/"})
        assert saved.status_code == 200, saved.text
        assert saved.json()["active"] == {"provider": "searxng", "url": searxng.url}
        assert (await client.put("/api/web-search", json=saved.json())).status_code == 200  # GET's shape back

        await chat_once(host, client, cid, "search it", 2)
        assert "web_search" in tool_names(script.requests["chat"][1])
        found = tool_result(script.requests["chat"][2])
        assert found.startswith("SearXNG results for “GPU prices”:")
        assert "https://example.com/gpu" in found and "$2.10 an hour" in found
        assert searxng.requests == [("searxng", "GPU prices", 0)]

        assert (await client.put("/api/web-search", json={"provider": None})).status_code == 200
        await chat_once(host, client, cid, "and now?", 3)
        assert "web_search" not in tool_names(script.requests["chat"][3])


async def test_a_bad_setup_is_refused_and_the_working_one_stays(host: Host, searxng: FakeSearch) -> None:
    async with running_api(host) as client:
        good = {"provider": "searxng", "url": searxng.url}
        assert (await client.put("/api/web-search", json=good)).status_code == 200
        for body, said in [
            ({"provider": "brave"}, "key: is required for Brave Search"),
            ({"provider": "searxng", "url": "localhost:8080"}, "http:// or https://"),
            ({"provider": "bing"}, "must be one of"),
        ]:
            r = await client.put("/api/web-search", json=body)
            assert r.status_code == 400 and said in r.json()["error"]["message"], r.text
        assert (await client.get("/api/web-search")).json()["active"] == {
            "provider": "searxng",
            "url": searxng.url,
        }

"""Web search without a host: each service asked in its own way and its answer read into hits, every
failure said in words, and the setup checked whole, with its key in the keyring (docs/web-search.md)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.bus import EventBus
from core.changes import WebSearchChanged
from core.clock import FakeClock
from core.errors import InvalidInputError
from core.store.database import Database
from core.web_search.providers import SearchFailed, SearchHit, SearchTarget, search
from core.web_search.service import WebSearchService
from core.web_search.settings import KEPT_KEY, parse_change
from core.web_search.tool import results_text
from tests.fakes.fake_search import FakeSearch
from tests.fakes.secrets import MemorySecretStore

HITS = [
    ("Errand &amp; friends", "https://example.com/errand", "Errand is a desktop assistant."),
    ("No link", "javascript:alert(1)", "dropped: not a web address"),
    ("Second", "https://example.com/2", "Another desktop page."),
]


@pytest.fixture
async def server() -> AsyncIterator[FakeSearch]:
    async with FakeSearch(key="key-123") as fake:
        fake.hits = list(HITS)
        yield fake


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5) as c:
        yield c


@pytest.mark.parametrize("provider", ["searxng", "brave", "tavily"])
async def test_each_service_is_read_into_titles_urls_and_snippets(
    server: FakeSearch, client: httpx.AsyncClient, provider: Any
) -> None:
    hits = await search(client, SearchTarget(provider, server.url, "key-123"), "desktop", 5)
    assert hits == [
        SearchHit("Errand & friends", "https://example.com/errand", "Errand is a desktop assistant."),
        SearchHit("Second", "https://example.com/2", "Another desktop page."),
    ]  # Brave's <strong> and the entities are gone, a link that is no web address left out
    assert server.requests[-1][:2] == (provider, "desktop")


async def test_the_count_is_asked_for_and_kept(server: FakeSearch, client: httpx.AsyncClient) -> None:
    server.hits = [(f"Page {n}", f"https://example.com/{n}", "") for n in range(20)]
    for provider in ("searxng", "brave", "tavily"):
        hits = await search(client, SearchTarget(provider, server.url, "key-123"), "q", 3)
        assert [h.title for h in hits] == ["Page 0", "Page 1", "Page 2"]
    assert [count for _, _, count in server.requests[1:]] == [3, 3]


@pytest.mark.parametrize(
    ("provider", "status", "body", "said"),
    [
        ("brave", 200, None, "refused the key (401)"),  # the wrong key
        ("searxng", 429, None, "too many searches"),
        ("searxng", 500, None, "failed to search (500)"),
        ("searxng", 403, None, "add json to search.formats in its settings.yml"),
        ("searxng", 200, "<html>not json</html>", "not JSON"),
        ("searxng", 200, '{"answers": []}', "shape Errand does not know"),
    ],
)
async def test_a_failure_says_what_went_wrong(
    server: FakeSearch, client: httpx.AsyncClient, provider: Any, status: int, body: str | None, said: str
) -> None:
    server.status, server.body = status, body
    with pytest.raises(SearchFailed, match=re.escape(said)):
        await search(client, SearchTarget(provider, server.url, "wrong-key"), "q", 5)


async def test_a_wrong_address_and_a_server_that_is_not_there_are_told_apart(
    server: FakeSearch, client: httpx.AsyncClient
) -> None:
    with pytest.raises(SearchFailed, match=re.escape("no search at this address (404)")):
        await search(client, SearchTarget("searxng", f"{server.url}/elsewhere", ""), "q", 5)
    unused = server.url
    await server.__aexit__(None, None, None)
    with pytest.raises(SearchFailed, match="cannot be reached"):
        await search(client, SearchTarget("searxng", unused, ""), "q", 5)


def test_results_read_as_a_numbered_list_and_nothing_found_says_so() -> None:
    text = results_text("Brave Search", "gpu", [SearchHit("A", "https://a.example", "snip")])
    assert text == "Brave Search results for “gpu”:\n1. A\n   https://a.example\n   snip"
    assert "found nothing" in results_text("Tavily", "gpu", [])


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ({}, "provider: is required"),
        ({"provider": "google"}, "must be one of searxng, brave, tavily"),
        ({"provider": "searxng"}, "url: is required for SearXNG"),
        ({"provider": "searxng", "url": "ftp://x"}, "http:// or https://"),
        ({"provider": "searxng", "url": "http://h/?q=1"}, "without ?query"),
        ({"provider": "searxng", "url": "http://h", "key": "k"}, "takes no key"),
        ({"provider": "brave", "url": "http://h"}, "has its own address"),
        ({"provider": "brave", "key": "two words"}, "does not look like a key"),
        ({"provider": "brave", "key": 5}, "key: must be a string"),
        ({"provider": None, "colour": "red"}, "colour"),
    ],
)
def test_a_bad_setup_is_refused_with_the_field_and_what_to_do(body: dict[str, Any], said: str) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(said)):
        parse_change(body)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database.for_data_dir(tmp_path / "data", clock=FakeClock())
    await database.open()
    yield database
    await database.close()


async def test_the_setup_keeps_its_key_in_the_keyring_and_the_tool_follows_it(db: Database) -> None:
    secrets, bus = MemorySecretStore(), EventBus()
    seen: list[object] = []
    bus.subscribe(seen.append)
    service = WebSearchService(db, secrets, FakeClock(), bus, environ={})
    assert (await service.view()).provider is None and not service.ready
    with pytest.raises(InvalidInputError, match="key: is required for Brave Search"):
        await service.update({"provider": "brave"})

    view = await service.update({"provider": "brave", "key": "bsa-secret"})
    assert view.has_key and view.active_url == "https://api.search.brave.com" and service.ready
    assert await secrets.get("web-search.brave") == "bsa-secret" and WebSearchChanged() in seen
    kept = await service.update({"provider": "brave", "key": KEPT_KEY})
    assert kept.has_key and await secrets.get("web-search.brave") == "bsa-secret"

    await service.update({"provider": None})
    assert not service.ready and await secrets.get("web-search.brave") is None  # no key left behind
    again = WebSearchService(db, secrets, FakeClock(), EventBus(), environ={})  # after a restart
    assert (await again.view()).provider is None


async def test_a_key_gone_from_the_keyring_is_a_problem_not_a_silent_failure(db: Database) -> None:
    secrets = MemorySecretStore()
    service = WebSearchService(db, secrets, FakeClock(), EventBus(), environ={})
    await service.update({"provider": "tavily", "key": "tvly-1"})
    await secrets.delete("web-search.tavily")
    restarted = WebSearchService(db, secrets, FakeClock(), EventBus(), environ={})
    view = await restarted.view()
    assert "key is missing" in view.problem and not restarted.ready


async def test_errand_search_url_takes_the_place_of_the_address(db: Database, server: FakeSearch) -> None:
    service = WebSearchService(
        db, MemorySecretStore(), FakeClock(), EventBus(), environ={"ERRAND_SEARCH_URL": server.url}
    )
    view = await service.view()
    assert (view.active_provider, view.active_url, view.from_environment) == ("searxng", server.url, True)
    name, hits = await service.search("desktop", 5)
    assert name == "SearXNG" and len(hits) == 2
    await service.update({"provider": "tavily", "key": "key-123"})
    name, hits = await service.search("desktop", 1)
    assert name == "Tavily" and server.requests[-1] == ("tavily", "desktop", 1)
    await service.close()

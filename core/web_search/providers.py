"""The search services a person can point Errand at, and how each is asked (docs/web-search.md#services).

SearXNG (a server of the person's own, no key), Brave Search and Tavily (a key each). Each answer is checked
and turned into the same hits: a title, a URL and a snippet. A failure is a `SearchFailed` whose words say
what went wrong and what the person can do, never a raw status line.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from core.web_search.views import NAMES, Provider

DEFAULT_URLS: Mapping[Provider, str] = {
    "brave": "https://api.search.brave.com",
    "tavily": "https://api.tavily.com",
}
MAX_SNIPPET = 300
_TAGS = re.compile(r"<[^>]{0,200}>")


class SearchFailed(Exception):
    """Why a search found nothing to give, worded for the model and the person."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    title: str
    url: str
    snippet: str


@dataclass(frozen=True, slots=True)
class SearchTarget:
    provider: Provider
    base_url: str
    key: str = ""


async def search(client: httpx.AsyncClient, target: SearchTarget, query: str, count: int) -> list[SearchHit]:
    name = NAMES[target.provider]
    base = target.base_url.rstrip("/")
    try:
        if target.provider == "searxng":
            response = await client.get(f"{base}/search", params={"q": query, "format": "json"})
        elif target.provider == "brave":
            response = await client.get(
                f"{base}/res/v1/web/search",
                params={"q": query, "count": str(count)},
                headers={"X-Subscription-Token": target.key, "Accept": "application/json"},
            )
        else:
            response = await client.post(
                f"{base}/search",
                json={"query": query, "max_results": count},
                headers={"Authorization": f"Bearer {target.key}"},
            )
    except httpx.TimeoutException:
        raise SearchFailed(f"{name} did not answer in time; try again in a moment") from None
    except httpx.HTTPError as exc:
        raise SearchFailed(
            f"{name} cannot be reached at {base} ({type(exc).__name__}); check the address"
        ) from None
    _check_status(target, response)
    try:
        body = response.json()
    except ValueError:
        raise SearchFailed(f"{name} answered with something that is not JSON; check the address") from None
    hits = _hits(target.provider, body)
    if hits is None:
        raise SearchFailed(f"{name} answered in a shape Errand does not know; check the address")
    return hits[:count]


def _check_status(target: SearchTarget, response: httpx.Response) -> None:
    name = NAMES[target.provider]
    status = response.status_code
    if status < 300:
        return
    if target.provider == "searxng" and status == 403:
        raise SearchFailed(
            f"{name} refused to answer in JSON (403); add json to search.formats in its settings.yml"
        )
    if status in (401, 403):
        raise SearchFailed(f"{name} refused the key ({status}); check the key in Errand's settings")
    if status == 429:
        raise SearchFailed(f"{name} says too many searches for now (429); try again later")
    if status == 404:
        raise SearchFailed(f"{name} has no search at this address (404); check the address")
    raise SearchFailed(f"{name} failed to search ({status}); try again later")


def _hits(provider: Provider, body: Any) -> list[SearchHit] | None:
    if not isinstance(body, dict):
        return None
    if provider == "brave":
        web = body.get("web", {"results": []})  # no "web" part: nothing found
        results = web.get("results") if isinstance(web, dict) else None
        snippet_key = "description"
    else:
        results = body.get("results")
        snippet_key = "content"
    if not isinstance(results, list):
        return None
    hits = []
    for item in results:
        if not isinstance(item, dict):
            continue
        url = item.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            continue
        hits.append(
            SearchHit(_text(item.get("title")) or url, url, _text(item.get(snippet_key))[:MAX_SNIPPET])
        )
    return hits


def _text(value: object) -> str:
    # Brave marks the words that matched with <strong>; all of them may carry entities.
    if not isinstance(value, str):
        return ""
    return " ".join(html.unescape(_TAGS.sub("", value)).split())

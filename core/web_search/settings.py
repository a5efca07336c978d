"""How web search is set up: which service, at which address, with which key (docs/web-search.md#settings).

One setup for the whole app, in the `settings` table under `web_search`; a key lives in the keyring. A
change is checked whole first: on any problem nothing is saved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import urlsplit

from core.errors import InvalidInputError
from core.web_search.views import NEEDS_KEY, PROVIDERS, Provider

SETTING = "web_search"
KEPT_KEY = "********"  # what GET shows for a stored key, and what PUT sends to keep it
_FIELDS = frozenset({"provider", "url", "key"})


def secret_name(provider: Provider) -> str:
    return f"web-search.{provider}"


@dataclass(frozen=True, slots=True)
class StoredSetup:
    provider: Provider | None  # None: no web search
    url: str  # SearXNG's address; for Brave and Tavily '' (their own)


@dataclass(frozen=True, slots=True)
class SetupChange:
    provider: Provider | None
    url: str
    key: str | None  # None: keep the stored key (or none is needed)


def stored_setup(value: object) -> StoredSetup:
    """What the settings row holds; anything unreadable is no web search."""
    if not isinstance(value, dict) or value.get("provider") not in PROVIDERS:
        return StoredSetup(None, "")
    url = value.get("url")
    return StoredSetup(cast(Provider, value["provider"]), url if isinstance(url, str) else "")


def parse_change(body: Mapping[str, Any]) -> SetupChange:
    extra = sorted(set(body) - _FIELDS)
    if extra:
        raise InvalidInputError(extra[0], "is not a web search setting; send provider, url and key")
    if "provider" not in body:
        raise InvalidInputError("provider", "is required: searxng, brave, tavily, or null for none")
    provider = body["provider"]
    if provider is None or provider == "":
        return SetupChange(None, "", None)
    if provider not in PROVIDERS:
        raise InvalidInputError("provider", f"must be one of {', '.join(PROVIDERS)}, or null for none")
    url = body.get("url") or ""
    if not isinstance(url, str):
        raise InvalidInputError("url", "must be a string")
    key = body.get("key")
    if key is not None and not isinstance(key, str):
        raise InvalidInputError("key", "must be a string")
    key = (key or "").strip() or None
    if key == KEPT_KEY:
        key = None
    if provider == "searxng":
        url = url.strip()
        problem = url_problem(url)
        if problem:
            raise InvalidInputError("url", problem)
        if key is not None:
            raise InvalidInputError("key", "SearXNG takes no key; leave it out")
    elif url.strip():
        raise InvalidInputError("url", f"{provider} has its own address; leave url out")
    if key is not None and (len(key) > 500 or any(c.isspace() for c in key)):
        raise InvalidInputError("key", "does not look like a key: it has spaces or is very long")
    return SetupChange(cast(Provider, provider), url.rstrip("/") if provider == "searxng" else "", key)


def needs_key(provider: Provider | None) -> bool:
    return provider in NEEDS_KEY


def url_problem(url: str) -> str | None:
    if not url:
        return "is required for SearXNG: the address of your server, like http://127.0.0.1:8080"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "must be an http:// or https:// address, like http://127.0.0.1:8080"
    if parts.query or parts.fragment:
        return "must be the server's address only, without ?query or #part"
    return None

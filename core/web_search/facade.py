"""The reads and commands the desktop uses for web search (docs/web-search.md#settings).
`WebSearchService` implements it; UI tests use the real one on a SQLite file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from core.web_search.views import WebSearchView


class WebSearchFacade(Protocol):
    async def view(self) -> WebSearchView: ...

    async def update(self, body: Mapping[str, Any]) -> WebSearchView:
        """Save `{provider, url?, key?}` whole (provider None: no web search; key `********` keeps the
        stored one). InvalidInputError naming the field (nothing saved); UnavailableError when the key
        cannot be kept because no keyring works."""
        ...

"""The search the desktop UI calls. `SearchService` implements it; UI tests fake it (FakeChatFacade)."""

from __future__ import annotations

from typing import Protocol

from core.search.views import SearchHit

DEFAULT_LIMIT = 30


class SearchFacade(Protocol):
    async def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[SearchHit]:
        """Messages, tasks and rules holding every word of `query` (any case, anywhere in the text), the
        newest first. An empty query finds nothing; no query is ever an error."""
        ...

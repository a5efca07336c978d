"""What the settings and the API read about web search: the services one can choose and the setup as it
stands (docs/web-search.md#settings). Kept apart from the searching so the window can import it cheaply."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Provider = Literal["searxng", "brave", "tavily"]
PROVIDERS: tuple[Provider, ...] = ("searxng", "brave", "tavily")
NEEDS_KEY: frozenset[Provider] = frozenset({"brave", "tavily"})
NAMES: Mapping[Provider, str] = {"searxng": "SearXNG", "brave": "Brave Search", "tavily": "Tavily"}


@dataclass(frozen=True, slots=True)
class WebSearchView:
    provider: Provider | None  # as the person set it up
    url: str
    has_key: bool
    # What searches use: the setup, or ERRAND_SEARCH_URL in its place.
    active_provider: Provider | None
    active_url: str
    from_environment: bool
    problem: str  # why there is no web search although one is set up ('' when it works or none is set up)

    @property
    def key_missing(self) -> bool:
        """A service that needs a key is chosen and the keyring holds none for it."""
        return self.provider in NEEDS_KEY and not self.has_key

    @property
    def working(self) -> bool:
        """Whether bots have the web_search tool now."""
        return self.active_provider is not None and not self.problem

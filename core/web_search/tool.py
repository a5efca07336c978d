"""`web_search {query, count?}`: the model's way to search the web, there only while a search service is
set up (docs/web-search.md#the-tool)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field

from core.agent.tool_api import ToolContext, ToolError, ToolSpec
from core.web_search.providers import SearchFailed, SearchHit

WEB_SEARCH = "web_search"
DEFAULT_COUNT = 5
MAX_COUNT = 10


class WebSearchArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=400, description="What to search for, as you would type it.")
    count: int = Field(default=DEFAULT_COUNT, ge=1, le=MAX_COUNT, description="How many results (1-10).")


Search = Callable[[str, int], Awaitable[tuple[str, list[SearchHit]]]]  # (service name, hits)


def web_search_tool(search: Search) -> ToolSpec:
    async def run(ctx: ToolContext, args: WebSearchArgs) -> str:
        query = " ".join(args.query.split())
        if not query:
            raise ToolError("The query is empty; say what to search for.")
        try:
            name, hits = await search(query, args.count)
        except SearchFailed as exc:
            raise ToolError(f"The search failed: {exc}.") from exc
        return results_text(name, query, hits)

    return ToolSpec(
        WEB_SEARCH,
        "Search the web. Returns each result's title, URL and a snippet; read a page in full with web_fetch. "
        "Use it for what may have changed since your training or what you do not know.",
        WebSearchArgs,
        run,
    )


def results_text(name: str, query: str, hits: list[SearchHit]) -> str:
    if not hits:
        return f"{name} found nothing for “{query}”. Try other words."
    lines = [f"{name} results for “{query}”:"]
    for n, hit in enumerate(hits, 1):
        lines.append(f"{n}. {hit.title}\n   {hit.url}")
        if hit.snippet:
            lines.append(f"   {hit.snippet}")
    return "\n".join(lines)

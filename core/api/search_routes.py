"""The search route of the local API: the same full-text search as the desktop's search box.

    GET /api/search?q=<words>&limit=<1-200>  -> {"hits": [{kind, title, snippet, spans, at, botId,
                                                 conversationId, messageId, taskId, ruleId}]}

Newest first. A missing or blank `q` is a 400 naming `q`; any other text is words to look for, never syntax.
"""

from __future__ import annotations

import unicodedata

from core.api import web
from core.errors import InvalidInputError
from core.search.facade import DEFAULT_LIMIT, SearchFacade
from core.search.service import MAX_LIMIT
from core.store.search import MAX_QUERY_CHARS


def add_search_routes(router: web.Router, search: SearchFacade) -> None:
    router.add_get("/api/search", SearchRoutes(search).search)


class SearchRoutes:
    def __init__(self, search: SearchFacade) -> None:
        self._search = search

    async def search(self, request: web.Request) -> web.Response:
        query = request.query.get("q", "")
        if not query.strip():
            raise InvalidInputError("q", "is required: the words to look for")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidInputError("q", f"must be at most {MAX_QUERY_CHARS} characters")
        if not is_text(query):
            raise InvalidInputError("q", "must be UTF-8 text without control characters")
        limit = _limit(request.query.get("limit", ""))
        hits = await self._search.search(query, limit)
        return web.json_response({"hits": [hit.to_json() for hit in hits]})


def is_text(query: str) -> bool:
    """No control characters (a NUL would end the pattern early in SQLite and match everything) and nothing
    that was not UTF-8 on the wire (decoded to U+FFFD or a lone surrogate)."""
    return not any(
        (unicodedata.category(ch) == "Cc" and ch not in "\t\n")
        or ch == "\ufffd"
        or "\ud800" <= ch <= "\udfff"
        for ch in query
    )


def _limit(raw: str) -> int:
    if not raw:
        return DEFAULT_LIMIT
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInputError("limit", f"must be a whole number, not {raw!r}") from None
    if not 1 <= value <= MAX_LIMIT:
        raise InvalidInputError("limit", f"must be between 1 and {MAX_LIMIT}")
    return value

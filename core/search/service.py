"""SearchService: the search box's reads, on the database's own thread so the loop never waits on them.

It asks the store once whether migration 14 built the trigram index (docs: core.store.search) and then
looks there or with LIKE; either way the same things are found, newest first.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from core.search.facade import DEFAULT_LIMIT
from core.search.snippet import snippet
from core.search.views import SearchHit
from core.store import search as store_search
from core.store.database import Database

MAX_LIMIT = 200


class SearchService:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._indexed: bool | None = None

    async def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[SearchHit]:
        words = store_search.query_words(query)
        if not words:
            return []
        limit = max(1, min(limit, MAX_LIMIT))

        def read(s: Session) -> list[store_search.StoredHit]:
            if self._indexed is None:
                self._indexed = store_search.has_index(s)
            return store_search.search(s, query, limit=limit, indexed=self._indexed)

        return [_view(hit, words) for hit in await self._db.read(read)]


def _view(hit: store_search.StoredHit, words: list[str]) -> SearchHit:
    # A task or rule found by its title alone still shows its brief or instruction (the title is shown too).
    line, spans = snippet(hit.text or hit.title, words)
    return SearchHit(
        kind=hit.kind,
        title=hit.title,
        snippet=line,
        spans=spans,
        at=hit.at,
        bot_id=hit.bot_id,
        conversation_id=hit.conversation_id,
        message_id=hit.message_id,
        task_id=hit.task_id,
        rule_id=hit.rule_id,
    )

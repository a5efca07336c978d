"""What the sidebar's search box finds inside messages, tasks and rules (full text, through the SearchFacade).

Typing waits ~150 ms for a pause before it asks, so a word typed quickly is one query, not one per key;
the query runs on the loop (the database on its own thread), never in a slot. Only the answer to the
latest query is announced: one for an older query that comes back late is dropped.
"""

from __future__ import annotations

import contextlib
import logging

from PySide6.QtCore import QObject, QTimer, Signal

from core.search.facade import SearchFacade
from core.search.views import SearchHit
from ui.async_calls import AsyncCalls
from ui.sidebar_search import normalized

log = logging.getLogger(__name__)

DEBOUNCE_MS = 150


class ContentSearch(QObject):
    # (the query, list[SearchHit]) once the hits for what the box says now are read; ("", []) when cleared.
    found = Signal(str, object)

    def __init__(self, search: SearchFacade, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._search = search
        self._query = ""
        self._calls = AsyncCalls()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self._ask)

    @property
    def query(self) -> str:
        return self._query

    def set_query(self, query: str) -> None:
        query = " ".join(query.split())
        if normalized(query) == normalized(self._query):
            return
        self._query = query
        if not query:
            self._timer.stop()
            self._calls.cancel_all()
            self.found.emit("", [])
            return
        self._timer.start()  # restarted by every key: the search goes once typing pauses

    def search_now(self) -> None:
        """Ask at once for what the box says (Enter in the box does not wait for the pause)."""
        if self._query:
            self._timer.stop()
            self._ask()

    def shutdown(self) -> None:
        self._calls.cancel_all()
        with contextlib.suppress(RuntimeError):  # the window (and its timer) may be gone already
            self._timer.stop()

    def _ask(self) -> None:
        query = self._query
        self._calls.start(
            self._search.search(query),
            done=lambda hits: self._answered(query, hits),
            failed=lambda exc: self._failed(query, exc),
        )

    def _answered(self, query: str, hits: list[SearchHit]) -> None:
        if query == self._query:
            self.found.emit(query, hits)

    def _failed(self, query: str, exc: Exception) -> None:
        log.warning("search for %r failed: %s", query, exc)
        self._answered(query, [])

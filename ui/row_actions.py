"""Running a needs-you row's action (answer, approve, retry, ...) through the AttentionFacade, wherever the
row is shown (the needs-you page, the bot panel's 待审批): the row is busy while the action runs; then it
is done, or it says why not and can be tried again. Either way the list may have moved on, so `after` runs
and the owner reads it again."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from core.attention.facade import AttentionFacade
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.attention_row import AttentionRow
from ui.i18n import t

log = logging.getLogger(__name__)


class RowActions:
    def __init__(
        self,
        attention: AttentionFacade,
        find_row: Callable[[str], AttentionRow | None],
        after: Callable[[], None],
    ) -> None:
        self._attention = attention
        self._find_row = find_row
        self._after = after
        self._calls = AsyncCalls()
        self.running: set[str] = set()  # item ids whose action is in flight

    def act(self, item_id: str, action: str, answer: str) -> None:
        row = self._find_row(item_id)
        if row is None or row.busy:
            return
        row.set_busy(True)
        self.running.add(item_id)
        body: dict[str, Any] = {"answer": answer} if action == "answer" else {}
        self._calls.start(
            self._attention.act(item_id, action, body),
            done=lambda _result: self._acted(item_id, None),
            failed=lambda exc: self._acted(item_id, exc),
        )

    def cancel_all(self) -> None:
        self._calls.cancel_all()
        self.running.clear()

    def _acted(self, item_id: str, exc: Exception | None) -> None:
        self.running.discard(item_id)
        row = self._find_row(item_id)
        if row is not None:
            if exc is None:
                row.done()
            else:
                log.info("needs-you action on %s refused: %s", item_id, reason(exc))
                row.show_error(t("needs.act_failed", reason=reason(exc)))
        self._after()

"""需要你 / Needs you: everything that waits for a person, in one place (docs/desktop.md#needs-you-view).

The page shows the rows in the order the core gives them, each with its actions inline (see
`ui.attention_row`). The window reads the list (one read feeds both the sidebar's count and this page) and
hands it over with `set_items`; the page runs the actions through the AttentionFacade without ever waiting
on them, and asks for a re-read (`changed`) when one went through: the item then goes away by itself.
When nothing waits, it says so quietly: 「没有需要你处理的事」.

`NeedsYouButton` is the sidebar's row: 需要你 with an amber count, there only while the count is above 0.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QByteArray, QEvent, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QVBoxLayout, QWidget

from core.attention.facade import AttentionFacade
from core.attention.items import AttentionItem
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.attention_row import AttentionRow
from ui.i18n import t
from ui.row_actions import RowActions
from ui.task_list import TaskPane

log = logging.getLogger(__name__)

# Relative times ("2 分钟前") are brought up to date this often while the page is shown.
TICK_MS = 30_000

# The sidebar row's inbox icon (monochrome; tinted like the other sidebar icons).
INBOX_SVG = b"""<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16">
  <path d="M2.25 8.75 L4 3.5 A1 1 0 0 1 4.95 2.75 H11.05 A1 1 0 0 1 12 3.5 L13.75 8.75 V12.25
    A1 1 0 0 1 12.75 13.25 H3.25 A1 1 0 0 1 2.25 12.25 Z" fill="none" stroke="#000" stroke-width="1.3"
    stroke-linejoin="round"/>
  <path d="M2.25 8.75 H5.5 L6.5 10.25 H9.5 L10.5 8.75 H13.75" fill="none" stroke="#000"
    stroke-width="1.3" stroke-linejoin="round"/>
</svg>"""


def inbox_icon(color: str, size: int = 16) -> QIcon:
    screen = QGuiApplication.primaryScreen()
    ratio = screen.devicePixelRatio() if screen is not None else 1.0
    pixmap = QPixmap(QSize(int(size * ratio), int(size * ratio)))
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    QSvgRenderer(QByteArray(INBOX_SVG)).render(painter, QRectF(0, 0, pixmap.width(), pixmap.height()))
    painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceIn)
    painter.fillRect(pixmap.rect(), QColor(color))
    painter.end()
    pixmap.setDevicePixelRatio(ratio)
    return QIcon(pixmap)


class NeedsYouButton(QPushButton):
    """The sidebar's 「需要你  3」: styled like 任务, the count in an amber badge on the right."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(t("sidebar.needs_you"), parent)
        self.setObjectName("needsYouButton")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setCheckable(True)  # checked while the page (or a task opened from it) is shown
        self.badge = QLabel("0", self)
        self.badge.setObjectName("needsYouBadge")
        self.badge.setFont(theme.font("caption"))
        self.badge.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.badge.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 10, 0)
        row.addStretch(1)
        row.addWidget(self.badge, 0, Qt.AlignmentFlag.AlignVCenter)
        self._count = 0
        self._tint()

    @property
    def count(self) -> int:
        return self._count

    def set_count(self, count: int) -> None:
        self._count = count
        self.badge.setText(str(count))
        self.setAccessibleName(t("sidebar.needs_you_count", count=count))
        self.setVisible(count > 0)

    def _tint(self) -> None:
        self.setIcon(inbox_icon(theme.colors().muted))

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:
            self._tint()
        super().changeEvent(event)


class NeedsYouView(TaskPane):
    """The page. `changed` asks the window to re-read the list; `openRequested(task_id, conversation_id)`
    asks it to show the task (when set) or else the conversation; `botOpenRequested(kind, bot_id)` what
    an item about the bot itself concerns (its memory, its settings); `channelLoginRequested(bot_id,
    channel_id)` asks it for a new scan of a channel whose login expired."""

    changed = Signal()
    openRequested = Signal(str, str)
    botOpenRequested = Signal(str, str)
    channelLoginRequested = Signal(str, str)

    def __init__(
        self, attention: AttentionFacade, parent: QWidget | None = None, now: Callable[[], float] = time.time
    ) -> None:
        super().__init__("needsYou", parent)
        self._attention = attention
        self._now = now
        self._actions = RowActions(attention, self.row, self.changed.emit)
        self._calls = AsyncCalls()
        self._shown: list[AttentionItem] | None = None
        self.rows: list[AttentionRow] = []
        self._lines: list[QFrame] = []
        self.set_title(t("needs.title"))
        self.set_back_text(t("tasks.back_to_chat"))

        self.well = QFrame(self.column)
        self.well.setObjectName("taskWell")
        self._rows_layout = QVBoxLayout(self.well)
        self._rows_layout.setContentsMargins(0, 0, 0, 0)
        self._rows_layout.setSpacing(0)
        self.well.hide()
        self.hint = QLabel(t("needs.empty"), self.column)
        self.hint.setObjectName("needsEmpty")
        self.hint.setProperty("role", "faint")
        self.hint.setWordWrap(True)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.hint.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Expanding)
        self.hint.hide()
        self.column_layout.addWidget(self.well)
        self.column_layout.addWidget(self.hint, 1)
        self.column_layout.addStretch(0)

        self._ticker = QTimer(self)
        self._ticker.setInterval(TICK_MS)
        self._ticker.timeout.connect(self._tick)

    # -- what the window drives ------------------------------------------------------------------------

    def open(self) -> None:
        self._tick()
        self._ticker.start()

    def close_pane(self) -> None:
        self._ticker.stop()

    def shutdown(self) -> None:
        self._actions.cancel_all()
        self._calls.cancel_all()
        with contextlib.suppress(RuntimeError):  # the widget (and its timer) may be gone already
            self._ticker.stop()

    def set_items(self, items: list[AttentionItem]) -> None:
        """Show these items, in this order. Rows whose item is unchanged are kept (with a half-typed reply,
        focus and an error under them); the rest are built afresh."""
        if items == self._shown:
            self._wake_rows()
            return
        self._shown = list(items)
        kept = {row.item.id: row for row in self.rows if row.item in items}
        for row in self.rows:
            if row.item.id not in kept or kept[row.item.id] is not row:
                self._drop(row)
        for line in self._lines:
            self._drop(line)
        self._lines = []
        # removeWidget, not takeAt: a taken item lives on in Python with the row's old size cached, so a kept
        # row whose reply box opens later would keep its old height.
        for row in kept.values():
            self._rows_layout.removeWidget(row)
        self.rows = []
        for position, item in enumerate(items):
            if position:
                line = QFrame(self.well)
                line.setObjectName("taskRowLine")
                line.setFixedHeight(1)
                self._rows_layout.addWidget(line)
                self._lines.append(line)
            row = kept.get(item.id) or self._new_row(item)
            self._rows_layout.addWidget(row)
            row.show()
            self.rows.append(row)
        self._wake_rows()
        self.well.setVisible(bool(items))
        self.hint.setText(t("needs.empty"))
        self.hint.setVisible(not items)

    def _new_row(self, item: AttentionItem) -> AttentionRow:
        row = AttentionRow(item, self.well, self._now)
        row.actRequested.connect(self._actions.act)
        row.openRequested.connect(self.openRequested)
        row.botOpenRequested.connect(self.botOpenRequested)
        row.loginRequested.connect(self._open_login)
        return row

    def set_failed(self, exc: Exception) -> None:
        """The list couldn't be read: say so where the rows would be, keeping the rows already shown."""
        if self.rows:
            return
        self.hint.setText(t("needs.load_failed", reason=reason(exc)))
        self.hint.show()

    def row(self, item_id: str) -> AttentionRow | None:
        return next((row for row in self.rows if row.item.id == item_id), None)

    # -- acting ----------------------------------------------------------------------------------------

    def _open_login(self, item_id: str) -> None:
        """重新扫码 on 「微信登录已过期」: the item's open names the channel and its bot."""
        self._calls.start(
            self._attention.act(item_id, "open", {}),
            done=self._login_found,
            failed=lambda exc: self._login_not_found(item_id, exc),
        )

    def _login_found(self, result: dict[str, Any]) -> None:
        bot_id, channel_id = str(result.get("botId") or ""), str(result.get("channelId") or "")
        if bot_id and channel_id:
            self.channelLoginRequested.emit(bot_id, channel_id)

    def _login_not_found(self, item_id: str, exc: Exception) -> None:
        row = self.row(item_id)
        if row is not None:
            row.show_error(t("needs.act_failed", reason=reason(exc)))

    # -- helpers ---------------------------------------------------------------------------------------

    def _wake_rows(self) -> None:
        """A row whose action went through stays off until the list is read again; if its item is still
        there after that read, it comes back to life."""
        for row in self.rows:
            if row.busy and row.item.id not in self._actions.running:
                row.set_busy(False)

    def _tick(self) -> None:
        for row in self.rows:
            row.tick()

    def _drop(self, widget: QWidget) -> None:
        self._rows_layout.removeWidget(widget)
        widget.hide()
        widget.deleteLater()

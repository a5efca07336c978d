"""The sidebar's list: conversations, most recent first (title with 微信 after it when its person writes
from WeChat, last line, and a dot plus 处理中 while busy), grouped under a row per bot once the window
knows its bots (`ui.bot_list`): the bot's avatar with its state ring and its activity line. The search box
narrows it as you type; a conversation the app opens itself (a new chat, a task's 来自) shows even when the
search would hide it, and a search that keeps nothing says so in one quiet line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import (
    QAbstractListModel,
    QItemSelectionModel,
    QModelIndex,
    QPersistentModelIndex,
    QPointF,
    QRect,
    QRectF,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QListView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from core.bots.views import BotActivity, BotView
from core.chat.views import ConversationView
from ui import formatting, theme
from ui.bot_list import BotEntry, idle, paint_bot_row, row_height
from ui.channel_rows import kind_name
from ui.i18n import t
from ui.sidebar_search import matches

ConversationRole = Qt.ItemDataRole.UserRole + 1
BotRole = Qt.ItemDataRole.UserRole + 2
IndentRole = Qt.ItemDataRole.UserRole + 3  # a conversation listed under its bot's row
# Under a bot's row, a conversation's title lines up with the bot's name.
BOT_INDENT = 38

Index = QModelIndex | QPersistentModelIndex


def display_title(conversation: ConversationView) -> str:
    return conversation.title.strip() or t("conversation.untitled")


def one_line(text: str) -> str:
    return " ".join(text.split())


class ConversationListModel(QAbstractListModel):
    """Conversations, most recent first; with bots, grouped under a row per bot (in the bots' order, the
    conversations of a bot the list doesn't know last). A filter keeps what matches the search box."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._conversations: list[ConversationView] = []
        self._bots: list[BotView] = []
        self._activity: dict[str, BotActivity] = {}
        self._query = ""
        self._pinned: str | None = None  # shown whatever the search says, until the search changes
        self._rows: list[ConversationView | BotEntry] = []

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's own signature
        return 0 if parent.isValid() else len(self._rows)

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        if isinstance(self._rows[index.row()], BotEntry):
            return Qt.ItemFlag.ItemIsEnabled  # a bot's row opens its panel; only conversations are chosen
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        if isinstance(row, BotEntry):
            if role == Qt.ItemDataRole.DisplayRole:
                return row.bot.name
            if role == Qt.ItemDataRole.ToolTipRole:
                return row.line or None
            if role == BotRole:
                return row
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return display_title(row)
        if role == Qt.ItemDataRole.AccessibleTextRole:
            tag = kind_name(row.channel) if row.channel != "desktop" else ""
            return f"{display_title(row)} · {tag}" if tag else display_title(row)
        if role == Qt.ItemDataRole.ToolTipRole:
            return one_line(row.last_line)[:300] or None
        if role == ConversationRole:
            return row
        if role == IndentRole:
            return bool(self._bots) and row.bot_id in {bot.id for bot in self._bots}
        return None

    def conversations(self) -> list[ConversationView]:
        return list(self._conversations)

    def bot_entries(self) -> list[BotEntry]:
        return [row for row in self._rows if isinstance(row, BotEntry)]

    def conversation(self, conversation_id: str) -> ConversationView | None:
        """Shown or filtered out by the search."""
        return next((c for c in self._conversations if c.id == conversation_id), None)

    def row_of(self, conversation_id: str) -> int:
        for i, row in enumerate(self._rows):
            if isinstance(row, ConversationView) and row.id == conversation_id:
                return i
        return -1

    def set_conversations(self, conversations: list[ConversationView]) -> None:
        self._conversations = sorted(conversations, key=lambda c: c.updated_at, reverse=True)
        self._rebuild()

    def set_bots(self, bots: list[BotView]) -> None:
        self._bots = list(bots)
        self._rebuild()

    def set_activity(self, activity: list[BotActivity]) -> None:
        self._activity = {a.bot_id: a for a in activity}
        self._rebuild()

    def set_query(self, query: str) -> None:
        self._query = query
        self._pinned = None  # a new search is a fresh look: it alone decides what shows
        self._rebuild()

    def query(self) -> str:
        return self._query

    def pin(self, conversation_id: str) -> None:
        """Show this conversation even if the search would hide it (the app opened it, not the person)."""
        if self._pinned != conversation_id:
            self._pinned = conversation_id
            self._rebuild()

    def _rebuild(self) -> None:
        rows = self._grouped()
        if [_key(r) for r in rows] == [_key(r) for r in self._rows]:
            # Same rows in the same order: repaint in place so selection and scroll stay put.
            self._rows = rows
            if rows:
                self.dataChanged.emit(self.index(0), self.index(len(rows) - 1))
            return
        self.beginResetModel()
        self._rows = rows
        self.endResetModel()

    def _grouped(self) -> list[ConversationView | BotEntry]:
        query = self._query
        pinned = self._pinned

        def kept(c: ConversationView) -> bool:
            return c.id == pinned or matches(query, display_title(c), c.last_line)

        if not self._bots:
            return [c for c in self._conversations if kept(c)]
        rows: list[ConversationView | BotEntry] = []
        known = {bot.id for bot in self._bots}
        for bot in self._bots:
            entry = BotEntry(bot, self._activity.get(bot.id) or idle(bot.id))
            own = [c for c in self._conversations if c.bot_id == bot.id]
            if matches(query, bot.name, entry.line):
                shown = own  # the bot itself was looked for: all of its conversations come with it
            else:
                shown = [c for c in own if kept(c)]
                if not shown:
                    continue
            rows.append(entry)
            rows.extend(shown)
        rows.extend(c for c in self._conversations if c.bot_id not in known and kept(c))
        return rows


def _key(row: ConversationView | BotEntry) -> tuple[str, str]:
    return ("bot", row.bot.id) if isinstance(row, BotEntry) else ("conversation", row.id)


class ConversationDelegate(QStyledItemDelegate):
    PAD_X = 12
    PAD_Y = 9
    INSET = 6
    GAP = 3
    TAG_GAP = 6

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        if isinstance(index.data(BotRole), BotEntry):
            return QSize(200, row_height())
        title = QFontMetrics(theme.font("strong"))
        small = QFontMetrics(theme.font("small"))
        return QSize(200, self.PAD_Y * 2 + title.height() + self.GAP + small.height())

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        entry = index.data(BotRole)
        if isinstance(entry, BotEntry):
            paint_bot_row(painter, option.rect, entry, bool(option.state & QStyle.StateFlag.State_MouseOver))
            return
        row = index.data(ConversationRole)
        if not isinstance(row, ConversationView):
            return
        c = theme.colors()
        indent = BOT_INDENT if index.data(IndentRole) else 0
        rect: QRect = option.rect.adjusted(self.INSET + indent, 2, -self.INSET, -2)
        state = option.state
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        if state & QStyle.StateFlag.State_Selected:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(c.selection))
            painter.drawRoundedRect(QRectF(rect), 8, 8)
        elif state & QStyle.StateFlag.State_MouseOver:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(c.hover))
            painter.drawRoundedRect(QRectF(rect), 8, 8)

        inner = rect.adjusted(self.PAD_X - self.INSET + 4, self.PAD_Y - 2, -(self.PAD_X - self.INSET + 4), 0)
        title_font = theme.font("strong")
        small_font = theme.font("small")
        caption_font = theme.font("caption")
        title_fm = QFontMetrics(title_font)
        small_fm = QFontMetrics(small_font)
        caption_fm = QFontMetrics(caption_font)

        # Right side of the title line: the time, or a dot plus 处理中 while a reply is being worked on.
        right = t("conversation.working") if row.busy else formatting.when(row.updated_at)
        right_w = caption_fm.horizontalAdvance(right)
        dot_w = 12 if row.busy else 0
        line = one_line(row.last_line)
        # A conversation with nothing said yet has one line; centre it rather than leave a gap below.
        top = inner.top() if line else rect.center().y() - title_fm.height() // 2
        title_rect = QRect(inner.left(), top, inner.width() - right_w - dot_w - 10, title_fm.height())
        painter.setFont(caption_font)
        painter.setPen(QColor(c.muted if row.busy else c.faint))
        right_rect = QRect(inner.right() - right_w, top, right_w, title_fm.height())
        painter.drawText(right_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, right)
        if row.busy:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(c.dot("working"))
            painter.drawEllipse(QPointF(right_rect.left() - 7, right_rect.center().y() + 1), 3.5, 3.5)

        self._paint_title(painter, title_rect, row)

        line_rect = QRect(inner.left(), title_rect.bottom() + 1 + self.GAP, inner.width(), small_fm.height())
        painter.setFont(small_font)
        painter.setPen(QColor(c.muted))
        shown = small_fm.elidedText(line, Qt.TextElideMode.ElideRight, line_rect.width())
        painter.drawText(line_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, shown)
        painter.restore()

    def _paint_title(self, painter: QPainter, title_rect: QRect, row: ConversationView) -> None:
        """The title, and right after it, quietly, the channel its person writes from: 「张三  微信」."""
        c = theme.colors()
        title_fm = QFontMetrics(theme.font("strong"))
        caption_font = theme.font("caption")
        caption_fm = QFontMetrics(caption_font)
        tag = kind_name(row.channel) if row.channel != "desktop" else ""
        tag_w = caption_fm.horizontalAdvance(tag) + self.TAG_GAP if tag else 0
        painter.setFont(theme.font("strong"))
        painter.setPen(QColor(c.text))
        room = max(0, title_rect.width() - tag_w)
        title = title_fm.elidedText(display_title(row), Qt.TextElideMode.ElideRight, room)
        painter.drawText(title_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, title)
        if tag:
            left = title_rect.left() + title_fm.horizontalAdvance(title) + self.TAG_GAP
            tag_rect = QRect(left, title_rect.top(), tag_w, title_rect.height())
            painter.setFont(caption_font)
            painter.setPen(QColor(c.faint))
            painter.drawText(tag_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, tag)


class ConversationList(QListView):
    conversationSelected = Signal(str)
    # A bot's row was clicked: the window opens that bot's info panel.
    botActivated = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("conversationList")
        self._model = ConversationListModel(self)
        self.setModel(self._model)
        self.setItemDelegate(ConversationDelegate(self))
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setMouseTracking(True)
        self.viewport().setAttribute(Qt.WidgetAttribute.WA_Hover)
        self.setFrameShape(QListView.Shape.NoFrame)
        self._current: str | None = None
        self._quiet = False
        self.selectionModel().currentChanged.connect(self._on_current_changed)
        self.clicked.connect(self._on_clicked)

    @property
    def current_id(self) -> str | None:
        return self._current

    def conversations(self) -> list[ConversationView]:
        return self._model.conversations()

    def conversation(self, conversation_id: str) -> ConversationView | None:
        return self._model.conversation(conversation_id)

    def bot_entries(self) -> list[BotEntry]:
        """The bots' rows as shown, top to bottom (tests read this, people see it)."""
        return self._model.bot_entries()

    def shown_titles(self) -> list[str]:
        """Every row's text as shown: bot names and conversation titles, top to bottom."""
        model = self._model
        return [str(model.index(row).data()) for row in range(model.rowCount())]

    def set_conversations(self, conversations: list[ConversationView]) -> None:
        self._keeping(lambda: self._model.set_conversations(conversations))

    def set_bots(self, bots: list[BotView]) -> None:
        self._keeping(lambda: self._model.set_bots(bots))

    def set_activity(self, activity: list[BotActivity]) -> None:
        self._keeping(lambda: self._model.set_activity(activity))

    def set_query(self, query: str) -> None:
        self._keeping(lambda: self._model.set_query(query))
        self.viewport().update()  # the 没有找到 line follows the query even when no row changes

    def _keeping(self, change: Callable[[], None]) -> None:
        """Change the rows, keeping the chosen conversation marked (without announcing it again)."""
        self._quiet = True
        try:
            change()
            if self._current is not None:
                self._mark(self._current)
        finally:
            self._quiet = False

    def nothing_found(self) -> str:
        """The line drawn in place of the rows when the search keeps none ('' when there are rows)."""
        query = " ".join(self._model.query().split())
        if not query or self._model.rowCount():
            return ""
        return t("search.nothing_found", query=query)

    def select(self, conversation_id: str) -> None:
        """Select a conversation and announce it (also when it is already the selected one); a search that
        would hide it lets it show, so what is opened is always marked in the list."""
        self._current = conversation_id
        self._quiet = True
        try:
            self._model.pin(conversation_id)
            self._mark(conversation_id)
        finally:
            self._quiet = False
        self.conversationSelected.emit(conversation_id)

    def _mark(self, conversation_id: str) -> None:
        row = self._model.row_of(conversation_id)
        if row < 0:
            self.selectionModel().clearSelection()
            return
        index = self._model.index(row)
        self.selectionModel().setCurrentIndex(index, QItemSelectionModel.SelectionFlag.ClearAndSelect)

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        line = self.nothing_found()
        if not line:
            return
        painter = QPainter(self.viewport())
        painter.setFont(theme.font("small"))
        painter.setPen(QColor(theme.colors().muted))
        room = (
            self.viewport()
            .rect()
            .adjusted(ConversationDelegate.PAD_X + 6, 14, -ConversationDelegate.PAD_X, 0)
        )
        flags = Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap
        painter.drawText(room, int(flags), line)
        painter.end()

    def _on_clicked(self, index: QModelIndex) -> None:
        entry = index.data(BotRole)
        if isinstance(entry, BotEntry):
            self.botActivated.emit(entry.bot.id)

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self._quiet or not current.isValid():
            return
        row = current.data(ConversationRole)
        if isinstance(row, ConversationView) and row.id != self._current:
            self._current = row.id
            self.conversationSelected.emit(row.id)

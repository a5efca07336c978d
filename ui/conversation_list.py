"""The sidebar's list: conversations, most recent first (title with 微信 after it when its person writes
from WeChat, last line, and a dot plus 处理中 while busy), grouped under a row per bot once the window
knows its bots (`ui.bot_list`): the bot's avatar with its state ring and its activity line. The search box
narrows it as you type; a conversation the app opens itself (a new chat, a task's 来自) shows even when the
search would hide it, and a search that keeps nothing says so in one quiet line.

Under the conversations a search lists what it found inside messages, tasks and rules (`ui.content_search`
reads them): a quiet section line, then one row per hit with where it came from and a line of its text, the
words looked for in the accent colour. Clicking a hit announces it (`hitActivated`); it is never selected,
so the chosen conversation stays marked."""

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
from PySide6.QtGui import QColor, QFont, QFontMetrics, QMouseEvent, QPainter, QPaintEvent
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
from core.search.snippet import match_spans
from core.search.views import SearchHit
from ui import attachment_words, formatting, theme
from ui.bot_list import BotEntry, idle, paint_bot_row, row_height
from ui.channel_rows import kind_name
from ui.i18n import t
from ui.sidebar_search import matches, normalized

ConversationRole = Qt.ItemDataRole.UserRole + 1
BotRole = Qt.ItemDataRole.UserRole + 2
IndentRole = Qt.ItemDataRole.UserRole + 3  # a conversation listed under its bot's row
HitRole = Qt.ItemDataRole.UserRole + 4  # a search hit inside a message, task or rule
# Under a bot's row, a conversation's title lines up with the bot's name.
BOT_INDENT = 38

Index = QModelIndex | QPersistentModelIndex


def display_title(conversation: ConversationView) -> str:
    return conversation.title.strip() or t("conversation.untitled")


def one_line(text: str) -> str:
    return " ".join(text.split())


class HitsHeader:
    """The quiet line over the search's hits in messages, tasks and rules."""


HITS_HEADER = HitsHeader()
Row = ConversationView | BotEntry | HitsHeader | SearchHit


def hit_where(hit: SearchHit) -> str:
    """Where a hit came from, as its row says it: the conversation, the task or the rule by title."""
    if hit.kind == "task":
        return hit.title.strip() or t("search_results.untitled_task")
    if hit.kind == "rule":
        return hit.title.strip() or t("search_results.untitled_rule")
    return hit.title.strip() or t("conversation.untitled")


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
        self._hits: list[SearchHit] = []
        self._hits_for: str | None = None  # the (normalized) query the hits answer
        self._expects_hits = False  # a content search is wired: "nothing found" waits for its answer
        self._rows: list[Row] = []

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's own signature
        return 0 if parent.isValid() else len(self._rows)

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        row = self._rows[index.row()]
        if isinstance(row, HitsHeader):
            return Qt.ItemFlag.NoItemFlags
        if isinstance(row, BotEntry | SearchHit):
            return (
                Qt.ItemFlag.ItemIsEnabled
            )  # a bot's row opens its panel, a hit what it found; neither is chosen
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        if isinstance(row, HitsHeader):
            return t("search_results.header") if role == Qt.ItemDataRole.DisplayRole else None
        if isinstance(row, SearchHit):
            if role == Qt.ItemDataRole.DisplayRole:
                return hit_where(row)
            if role in (Qt.ItemDataRole.AccessibleTextRole, Qt.ItemDataRole.ToolTipRole):
                return f"{t(f'search_results.kind_{row.kind}')} · {hit_where(row)}: {row.snippet}"
            if role == HitRole:
                return row
            return None
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
            return one_line(attachment_words.shown(row.last_line))[:300] or None
        if role == ConversationRole:
            return row
        if role == IndentRole:
            return bool(self._bots) and row.bot_id in {bot.id for bot in self._bots}
        return None

    def conversations(self) -> list[ConversationView]:
        return list(self._conversations)

    def bot_entries(self) -> list[BotEntry]:
        return [row for row in self._rows if isinstance(row, BotEntry)]

    def hits(self) -> list[SearchHit]:
        """The hits shown, top to bottom."""
        return [row for row in self._rows if isinstance(row, SearchHit)]

    def row_of_hit(self, hit: SearchHit) -> int:
        return next((i for i, row in enumerate(self._rows) if row is hit), -1)

    def set_hits(self, query: str, hits: list[SearchHit]) -> None:
        """What the content search found for `query`; dropped when the box says something else by now."""
        if normalized(query) != normalized(self._query):
            return
        self._hits = list(hits)
        self._hits_for = normalized(query)
        self._rebuild()

    def expect_hits(self, expected: bool) -> None:
        self._expects_hits = expected

    def awaiting_hits(self) -> bool:
        """A search is typed whose hits inside messages, tasks and rules are not read yet."""
        return (
            self._expects_hits and bool(normalized(self._query)) and self._hits_for != normalized(self._query)
        )

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
        # Until the new query's hits are read, the old ones that still match stay, so the list doesn't blink.
        self._hits = [h for h in self._hits if normalized(query) and matches(query, hit_where(h), h.snippet)]
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

    def _grouped(self) -> list[Row]:
        rows = self._conversation_rows()
        if self._hits and normalized(self._query):
            rows.append(HITS_HEADER)
            rows.extend(self._hits)
        return rows

    def _conversation_rows(self) -> list[Row]:
        query = self._query
        pinned = self._pinned

        def kept(c: ConversationView) -> bool:
            return c.id == pinned or matches(query, display_title(c), c.last_line)

        if not self._bots:
            return [c for c in self._conversations if kept(c)]
        rows: list[Row] = []
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


def _key(row: Row) -> tuple[str, str]:
    if isinstance(row, BotEntry):
        return ("bot", row.bot.id)
    if isinstance(row, HitsHeader):
        return ("hits", "")
    if isinstance(row, SearchHit):
        return (f"hit-{row.kind}", f"{row.message_id}{row.task_id}{row.rule_id}")
    return ("conversation", row.id)


class ConversationDelegate(QStyledItemDelegate):
    PAD_X = 12
    PAD_Y = 9
    INSET = 6
    GAP = 3
    TAG_GAP = 6

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        if isinstance(index.data(BotRole), BotEntry):
            return QSize(200, row_height())
        if index.data(HitRole) is None and index.data(ConversationRole) is None:  # the hits' section line
            return QSize(200, 14 + QFontMetrics(theme.font("caption")).height() + 4)
        title = QFontMetrics(theme.font("strong"))
        small = QFontMetrics(theme.font("small"))
        return QSize(200, self.PAD_Y * 2 + title.height() + self.GAP + small.height())

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        entry = index.data(BotRole)
        if isinstance(entry, BotEntry):
            paint_bot_row(painter, option.rect, entry, bool(option.state & QStyle.StateFlag.State_MouseOver))
            return
        hit = index.data(HitRole)
        if isinstance(hit, SearchHit):
            self._paint_hit(painter, option, hit)
            return
        row = index.data(ConversationRole)
        if isinstance(row, ConversationView):
            self._paint_conversation(painter, option, row, indent=bool(index.data(IndentRole)))
        else:
            self._paint_hits_header(painter, option.rect)

    def _paint_conversation(
        self, painter: QPainter, option: QStyleOptionViewItem, row: ConversationView, *, indent: bool
    ) -> None:
        c = theme.colors()
        rect: QRect = option.rect.adjusted(self.INSET + (BOT_INDENT if indent else 0), 2, -self.INSET, -2)
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
        line = one_line(attachment_words.shown(row.last_line))
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

    def _paint_hits_header(self, painter: QPainter, rect: QRect) -> None:
        """A quiet caption with a hairline, between the conversations found and the hits inside them."""
        c = theme.colors()
        painter.save()
        font = theme.font("caption")
        fm = QFontMetrics(font)
        text_rect = QRect(
            rect.left() + self.PAD_X + 4, rect.bottom() - 3 - fm.height(), rect.width(), fm.height()
        )
        painter.setPen(QColor(c.line))
        painter.drawLine(rect.left() + self.PAD_X, rect.top() + 6, rect.right() - self.PAD_X, rect.top() + 6)
        painter.setFont(font)
        painter.setPen(QColor(c.faint))
        painter.drawText(
            text_rect,
            int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
            t("search_results.header"),
        )
        painter.restore()

    def _paint_hit(self, painter: QPainter, option: QStyleOptionViewItem, hit: SearchHit) -> None:
        """「消息 <conversation>  time」 over a line of its text, the words found in the accent colour."""
        c = theme.colors()
        rect: QRect = option.rect.adjusted(self.INSET, 2, -self.INSET, -2)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        if option.state & QStyle.StateFlag.State_MouseOver:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QColor(c.hover))
            painter.drawRoundedRect(QRectF(rect), 8, 8)
        inner = rect.adjusted(self.PAD_X - self.INSET + 4, self.PAD_Y - 2, -(self.PAD_X - self.INSET + 4), 0)
        caption_font = theme.font("caption")
        caption_fm = QFontMetrics(caption_font)
        title_fm = QFontMetrics(theme.font("strong"))
        small_fm = QFontMetrics(theme.font("small"))
        top_rect = QRect(inner.left(), inner.top(), inner.width(), title_fm.height())
        right = formatting.when(hit.at)
        right_w = caption_fm.horizontalAdvance(right)
        painter.setFont(caption_font)
        painter.setPen(QColor(c.faint))
        centred = Qt.AlignmentFlag.AlignVCenter
        painter.drawText(top_rect, int(centred | Qt.AlignmentFlag.AlignRight), right)
        kind = t(f"search_results.kind_{hit.kind}")
        kind_w = caption_fm.horizontalAdvance(kind) + self.TAG_GAP
        painter.drawText(top_rect, int(centred | Qt.AlignmentFlag.AlignLeft), kind)
        where_rect = QRect(
            top_rect.left() + kind_w,
            top_rect.top(),
            top_rect.width() - kind_w - right_w - 10,
            top_rect.height(),
        )
        words = normalized(self._query()).split()
        paint_marked(
            painter,
            where_rect,
            hit_where(hit),
            match_spans(hit_where(hit), words),
            theme.font("strong"),
            c.text,
        )
        line_rect = QRect(inner.left(), top_rect.bottom() + 1 + self.GAP, inner.width(), small_fm.height())
        paint_marked(painter, line_rect, hit.snippet, hit.spans, theme.font("small"), c.muted)
        painter.restore()

    def _query(self) -> str:
        view = self.parent()
        return view.query() if isinstance(view, ConversationList) else ""


def paint_marked(
    painter: QPainter, rect: QRect, text: str, spans: tuple[tuple[int, int], ...], font: QFont, colour: str
) -> None:
    """One line of `text` in `colour`, its `spans` in the accent colour and bold, cut with … where it ends."""
    accent = QColor(theme.colors().accent)
    marked = QFont(font)
    marked.setBold(True)
    x = rect.left()
    end_x = rect.right()
    position = 0
    pieces: list[tuple[str, bool]] = []
    for start, stop in sorted(spans):
        if start < position:
            continue
        pieces.append((text[position:start], False))
        pieces.append((text[start:stop], True))
        position = stop
    pieces.append((text[position:], False))
    flags = int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft)
    for piece, is_match in pieces:
        if not piece:
            continue
        piece_font = marked if is_match else font
        fm = QFontMetrics(piece_font)
        room = end_x - x
        if room <= 0:
            break
        width = fm.horizontalAdvance(piece)
        shown = piece if width <= room else fm.elidedText(piece, Qt.TextElideMode.ElideRight, room)
        painter.setFont(piece_font)
        painter.setPen(accent if is_match else QColor(colour))
        painter.drawText(QRect(x, rect.top(), room, rect.height()), flags, shown)
        if width > room:
            break
        x += width


class ConversationList(QListView):
    conversationSelected = Signal(str)
    # A bot's row was clicked: the window opens that bot's info panel.
    botActivated = Signal(str)
    # A search hit was clicked (or Enter on it): the window opens what it found (a SearchHit).
    hitActivated = Signal(object)

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
        self.activated.connect(self._on_activated)

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

    def hits(self) -> list[SearchHit]:
        """The search's hits inside messages, tasks and rules, as shown top to bottom."""
        return self._model.hits()

    def hit_rect(self, hit: SearchHit) -> QRect:
        """Where a hit's row is in the viewport (tests click it)."""
        return self.visualRect(self._model.index(self._model.row_of_hit(hit)))

    def query(self) -> str:
        return self._model.query()

    def set_hits(self, query: str, hits: object) -> None:
        """The content search's answer (`ContentSearch.found`): hits for `query`, shown under the
        conversations while the box still says it."""
        found = [hit for hit in hits if isinstance(hit, SearchHit)] if isinstance(hits, list) else []
        self._keeping(lambda: self._model.set_hits(query, found))
        self.viewport().update()

    def expect_hits(self, expected: bool = True) -> None:
        """A content search answers this list's queries: "nothing found" waits for its hits."""
        self._model.expect_hits(expected)

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
        if not query or self._model.rowCount() or self._model.awaiting_hits():
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

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if self._is_hit_area(event):
            event.accept()  # a hit is never made current or selected: the chosen conversation stays marked
            return
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._is_hit_area(event):
            # Announced here rather than through `clicked`, which the window answers by showing the chat:
            # a task's or rule's hit opens elsewhere.
            hit = self.indexAt(event.position().toPoint()).data(HitRole)
            if isinstance(hit, SearchHit) and event.button() == Qt.MouseButton.LeftButton:
                self.hitActivated.emit(hit)
            event.accept()
            return
        super().mouseReleaseEvent(event)

    def _is_hit_area(self, event: QMouseEvent) -> bool:
        index = self.indexAt(event.position().toPoint())
        if not index.isValid():
            return False
        return index.data(HitRole) is not None or (
            index.data(ConversationRole) is None and index.data(BotRole) is None
        )

    def _on_activated(self, index: QModelIndex) -> None:
        hit = index.data(HitRole)
        if isinstance(hit, SearchHit):
            self.hitActivated.emit(hit)

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

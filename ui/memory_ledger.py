"""A bot's 记忆 ledger, a page of the bot panel (docs/memory.md#the-ledger, docs/desktop.md#memory):

    ‹ 天天
    记忆
    12 条 · 已用 3,400/6,000 字
    ┌ ● 记忆已满 · 3 小时前                  only while a note was refused for want of room
    │   天天 记不下新的事了……    [知道了]
    └
    [添加…]                                 opens the editor in place: 保存 / 取消, 0/500
    ┌ 用户希望回复用英文。
    │ 11月30日 · 来自对话「周报」     编辑  删除
    │ ───
    │ 服务器是 build-2。
    │ 今天 09:12 · 你写的             编辑  删除
    └
    已删除一条记忆 · 撤销                    the last delete or edit, given back its words

Every note, oldest first, with when and where it came from. 编辑 turns the note into the same editor. The
page reads through the MemoryFacade and sends every command as a task on the loop; a refusal is said where
it happened and nothing changes. It re-reads on the bridge's `memoryChanged` for its bot (the panel passes
it on while shown), keeping a half-written edit. A note and its editor are `ui.memory_note`.
`MemoryPanelRow` is the panel's 「记忆 · 12 条」, which follows each read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.attention_row import ago
from ui.elided_text import ElidedText
from ui.form import button, small_label
from ui.i18n import t
from ui.memory_note import NoteEditor, NoteRow, kept_text, limits, link, refusal
from ui.reloader import Reloader
from ui.status_dot import StatusDot
from ui.task_chip import PressableRow
from ui.task_list import ARROW
from ui.wrapped_label import WrappedLabel

if TYPE_CHECKING:
    from core.memory.facade import MemoryFacade
    from core.memory.views import MemoryView
    from core.store.memory import MemoryEntry

# The count of notes is shown against its limit once the notebook is this full (the characters always are).
NEAR_FULL = 0.8

UndoKind = Literal["deleted", "changed"]


def notes_words(count: int, cap: int) -> str:
    if count >= cap * NEAR_FULL:
        return t("memory.notes_of", n=count, max=cap)
    return t("memory.notes_one") if count == 1 else t("memory.notes", n=count)


def usage_words(view: MemoryView) -> str:
    """「12 条 · 已用 3,400/6,000 字」"""
    caps = limits()
    return t(
        "memory.usage",
        notes=notes_words(view.usage.entries, caps.entries),
        chars=f"{view.usage.chars:,}",
        max_chars=f"{caps.chars:,}",
    )


def row_words(view: MemoryView) -> str:
    """The panel's row: 「记忆 · 12 条」, 「记忆 · 还没有」, 「记忆 · 50/50 条 · 已满」."""
    count = view.usage.entries
    if count == 0:
        words = t("panel.memory_none")
    else:
        words = t("panel.memory", notes=notes_words(count, limits().entries))
    return t("panel.memory_full", row=words) if view.full_since is not None else words


@dataclass(frozen=True, slots=True)
class Undo:
    kind: UndoKind
    entry_id: str
    text: str  # the words the note had before


class MemoryLedger(QWidget):
    """The page's body. `viewShown(view)` after every read, so the panel's 记忆 row says the same."""

    viewShown = Signal(object)

    def __init__(
        self, memory: MemoryFacade, parent: QWidget | None = None, now: Callable[[], float] = time.time
    ) -> None:
        super().__init__(parent)
        self.setObjectName("memoryLedger")
        self._memory = memory
        self._now = now
        self._bot_id: str | None = None
        self._bot_name = ""
        self._view: MemoryView | None = None
        self._undo: Undo | None = None
        self._calls = AsyncCalls()
        self._reader: Reloader[MemoryView | None] = Reloader(self._load, self._apply, self._failed)
        self.rows: list[NoteRow] = []
        self._lines: list[QFrame] = []
        self.add_editor: NoteEditor | None = None

        self._column = QVBoxLayout(self)
        self._column.setContentsMargins(0, 0, 0, 0)
        self._column.setSpacing(8)
        self._build_head()
        self._build_full()
        self._build_add()
        self._build_list()
        self._build_undo()
        self.notice = small_label("", "danger", "memoryNotice", self)
        self.notice.setContentsMargins(4, 0, 0, 0)
        self._column.addWidget(self.notice)
        self._set_body_visible(False)

    # -- building --------------------------------------------------------------------------------------

    def _build_head(self) -> None:
        self.title_label = QLabel(t("memory.title"), self)
        self.title_label.setObjectName("memoryTitle")
        self.title_label.setFont(theme.font("strong"))
        self.usage_label = QLabel(self)
        self.usage_label.setObjectName("memoryUsage")
        self.usage_label.setProperty("role", "muted")
        self.usage_label.setFont(theme.font("small"))
        head = QVBoxLayout()
        head.setContentsMargins(4, 0, 0, 0)
        head.setSpacing(2)
        head.addWidget(self.title_label)
        head.addWidget(self.usage_label)
        self._column.addLayout(head)

    def _build_full(self) -> None:
        # The needs-you row's words, where the notes are: an amber dot, what happened, and 知道了.
        self.full_box = QFrame(self)
        self.full_box.setObjectName("taskWell")
        self.full_dot = StatusDot("needs", 8, self.full_box)
        self.full_title = QLabel(self.full_box)
        self.full_title.setObjectName("memoryFullTitle")
        self.full_title.setFont(theme.font("strong"))
        self.full_line = WrappedLabel("", self.full_box)
        self.full_line.setObjectName("memoryFullLine")
        self.full_line.setTextFormat(Qt.TextFormat.PlainText)
        self.full_line.setFont(theme.font("small"))
        self.full_line.setContentsMargins(0, 0, 4, 0)
        self.dismiss_button = link(t("memory.full_dismiss"), "dismiss", self.full_box, accent=True)
        self.dismiss_button.clicked.connect(lambda _checked=False: self.dismiss_full())
        self.full_error = small_label("", "danger", "memoryError", self.full_box)
        head = QHBoxLayout()
        head.setSpacing(8)
        head.addWidget(self.full_dot, 0, Qt.AlignmentFlag.AlignVCenter)
        head.addWidget(self.full_title, 1)
        head.addWidget(self.dismiss_button, 0, Qt.AlignmentFlag.AlignVCenter)
        under = QVBoxLayout()
        under.setContentsMargins(self.full_dot.sizeHint().width() + 8, 0, 0, 0)
        under.setSpacing(3)
        under.addWidget(self.full_line)
        under.addWidget(self.full_error)
        box = QVBoxLayout(self.full_box)
        box.setContentsMargins(14, 10, 10, 10)
        box.setSpacing(3)
        box.addLayout(head)
        box.addLayout(under)
        self._column.addWidget(self.full_box)

    def _build_add(self) -> None:
        self.add_button = button(t("memory.add"), self)
        self.add_button.setFont(theme.font("small"))
        self.add_button.clicked.connect(lambda _checked=False: self.start_add())
        self._add_line = QHBoxLayout()
        self._add_line.setContentsMargins(0, 0, 0, 0)
        self._add_line.addWidget(self.add_button)
        self._add_line.addStretch(1)
        self._column.addLayout(self._add_line)
        self._add_at = self._column.count()  # where the editor goes when it is first opened

    def _build_list(self) -> None:
        self.well = QFrame(self)
        self.well.setObjectName("taskWell")
        self._rows_layout = QVBoxLayout(self.well)
        self._rows_layout.setContentsMargins(0, 0, 0, 0)
        self._rows_layout.setSpacing(0)
        self._column.addWidget(self.well)
        self.empty_label = small_label("", "faint", "memoryEmpty", self)
        self.empty_label.setContentsMargins(4, 0, 0, 0)
        self._column.addWidget(self.empty_label)

    def _build_undo(self) -> None:
        self.undo_box = QWidget(self)
        self.undo_box.setObjectName("memoryUndo")
        self.undo_label = QLabel(self.undo_box)
        self.undo_label.setObjectName("memoryUndoText")
        self.undo_label.setProperty("role", "muted")
        self.undo_label.setFont(theme.font("small"))
        self.undo_dot = QLabel("·", self.undo_box)
        self.undo_dot.setProperty("role", "muted")
        self.undo_dot.setFont(theme.font("small"))
        self.undo_button = link(t("memory.undo"), "undo", self.undo_box, accent=True)
        self.undo_button.clicked.connect(lambda _checked=False: self.undo())
        self.undo_error = small_label("", "danger", "memoryError", self.undo_box)
        # The link has 4 px of padding on each side: the dot gets as much on its left, so the gaps match.
        self.undo_dot.setContentsMargins(4, 0, 0, 0)
        line = QHBoxLayout()
        line.setContentsMargins(0, 0, 0, 0)
        line.setSpacing(0)
        line.addWidget(self.undo_label)
        line.addWidget(self.undo_dot)
        line.addWidget(self.undo_button)
        line.addStretch(1)
        column = QVBoxLayout(self.undo_box)
        column.setContentsMargins(4, 0, 0, 0)
        column.setSpacing(2)
        column.addLayout(line)
        column.addWidget(self.undo_error)
        self.undo_box.hide()
        self._column.addWidget(self.undo_box)

    # -- what the panel drives -------------------------------------------------------------------------

    @property
    def bot_id(self) -> str | None:
        return self._bot_id

    @property
    def view(self) -> MemoryView | None:
        return self._view

    def set_bot(self, bot_id: str | None, name: str = "") -> None:
        """Show this bot's notebook (read on the next request); another bot starts from a clean page."""
        self._bot_name = name
        if bot_id == self._bot_id:
            if self._view is not None:
                self._show_full(self._view)
                self._show_empty()
            return
        self._reader.reset()
        self._calls.cancel_all()
        self._bot_id = bot_id
        self._view = None
        self._undo = None
        self._show_undo()
        self.notice.hide()
        if self.add_editor is not None:
            self.add_editor.hide()
        self.add_button.show()
        self._clear_rows()
        self._set_body_visible(False)

    def request(self) -> asyncio.Future[None] | None:
        """Read the notebook again; the future resolves once it is shown (None without a bot)."""
        if self._bot_id is None:
            return None
        return self._reader.request()

    def on_memory_changed(self, bot_id: str) -> None:
        if bot_id == self._bot_id:
            self.request()

    def reset(self) -> None:
        """The panel closed: a read in flight no longer belongs on screen."""
        self._reader.reset()

    def shutdown(self) -> None:
        self._reader.reset()
        self._calls.cancel_all()

    def note_texts(self) -> list[str]:
        """The notes as listed, oldest first (tests read this)."""
        return [row.entry.text for row in self.rows]

    def meta_lines(self) -> list[str]:
        return [row.meta.text() for row in self.rows]

    def row(self, entry_id: str) -> NoteRow | None:
        return next((row for row in self.rows if row.entry.id == entry_id), None)

    # -- reading ---------------------------------------------------------------------------------------

    async def _load(self) -> MemoryView | None:
        bot_id = self._bot_id
        if bot_id is None:
            return None
        return await self._memory.view(bot_id)

    def _apply(self, view: MemoryView | None) -> None:
        if view is None or view.bot_id != self._bot_id:
            return  # read for a bot that is no longer shown
        self._view = view
        self.notice.hide()
        self.usage_label.setText(usage_words(view))
        self._show_full(view)
        self._show_rows(view.entries)
        self._show_empty()
        self._set_body_visible(True)
        self.viewShown.emit(view)

    def _failed(self, exc: Exception) -> None:
        self.notice.setText(t("memory.load_failed", reason=reason(exc)))
        self.notice.show()

    # -- showing ---------------------------------------------------------------------------------------

    def _set_body_visible(self, visible: bool) -> None:
        for widget in (self.title_label, self.usage_label, self.add_button):
            widget.setVisible(visible and (widget is not self.add_button or not self._adding()))
        if not visible:
            self.full_box.hide()
            self.well.hide()
            self.empty_label.hide()

    def _show_full(self, view: MemoryView) -> None:
        since = view.full_since
        self.full_box.setVisible(since is not None)
        if since is None:
            return
        self.full_title.setText(f"{t('memory.full_title')} · {ago(since, self._now())}")
        self.full_line.setText(t("memory.full_line", name=self._bot_name or t("memory.title")))

    def _show_empty(self) -> None:
        empty = not self.rows
        self.well.setVisible(not empty)
        self.empty_label.setText(t("memory.empty", name=self._bot_name) if empty else "")
        self.empty_label.setVisible(empty and not self._adding())

    def _show_rows(self, entries: Sequence[MemoryEntry]) -> None:
        """The notes in order. A row is kept for a note it still shows, so an open edit keeps its words; a
        note being edited stays, where it was, until it is saved or cancelled, even if it went meanwhile."""
        now = self._now()
        old = {row.entry.id: row for row in self.rows}
        wanted = {entry.id for entry in entries}
        rows: list[NoteRow] = []
        for entry in entries:
            kept = old.get(entry.id)
            if kept is None:
                kept = self._new_row(entry, now)
            elif kept.entry != entry and not kept.editing:
                kept.set_entry(entry, now)
            rows.append(kept)
        for position, row in enumerate(self.rows):
            if row.entry.id not in wanted and row.editing:
                rows.insert(min(position, len(rows)), row)
        for line in self._lines:
            self._rows_layout.removeWidget(line)
            line.deleteLater()
        self._lines = []
        # removeWidget, not takeAt: an item taken out lives on in Python and keeps the widget's size cache,
        # so a kept row that grew later (its editor opened) would be laid out at its old height.
        for row in self.rows:
            self._rows_layout.removeWidget(row)
            if row not in rows:
                row.hide()
                row.deleteLater()
        for position, row in enumerate(rows):
            if position:
                line = QFrame(self.well)
                line.setObjectName("taskRowLine")
                line.setFixedHeight(1)
                self._rows_layout.addWidget(line)
                self._lines.append(line)
            self._rows_layout.addWidget(row)
            row.show()
        self.rows = rows

    def _new_row(self, entry: MemoryEntry, now: float) -> NoteRow:
        row = NoteRow(entry, now, self.well)
        row.editRequested.connect(self.start_edit)
        row.deleteRequested.connect(self.delete)
        row.editSaved.connect(self._edit_saved)
        row.editCancelled.connect(self._edit_cancelled)
        return row

    def _clear_rows(self) -> None:
        for widget in [*self._lines, *self.rows]:
            self._rows_layout.removeWidget(widget)
            widget.hide()
            widget.deleteLater()
        self._lines = []
        self.rows = []

    def _show_undo(self) -> None:
        undo = self._undo
        self.undo_box.setVisible(undo is not None)
        self.undo_error.hide()
        self.undo_button.setEnabled(True)
        if undo is not None:
            self.undo_label.setText(t("memory.deleted" if undo.kind == "deleted" else "memory.changed"))

    def _adding(self) -> bool:
        return self.add_editor is not None and not self.add_editor.isHidden()

    # -- adding ----------------------------------------------------------------------------------------

    def start_add(self) -> NoteEditor:
        """添加…: the empty editor in place of the button, the cursor in it."""
        self._end_edits()
        if self.add_editor is None:
            self.add_editor = NoteEditor(self, t("memory.placeholder"))
            self.add_editor.saved.connect(self._save_add)
            self.add_editor.cancelled.connect(self._cancel_add)
            self._column.insertWidget(self._add_at, self.add_editor)
        self.add_button.hide()
        self.empty_label.hide()
        self.add_editor.start("")
        return self.add_editor

    def _cancel_add(self) -> None:
        if self.add_editor is not None:
            self.add_editor.hide()
        self.add_button.setVisible(self._view is not None)
        self._show_empty()

    def _save_add(self, text: str) -> None:
        editor, bot_id = self.add_editor, self._bot_id
        if editor is None or bot_id is None:
            return
        known = {row.entry.id for row in self.rows}
        editor.set_busy(True)

        def added(entry: MemoryEntry) -> None:
            if bot_id != self._bot_id:
                return
            editor.set_busy(False)
            if entry.id in known:
                editor.show_error(t("memory.already"))  # the same words are kept once
                return
            self._cancel_add()
            self.request()

        def refused(exc: Exception) -> None:
            if bot_id == self._bot_id:
                editor.set_busy(False)
                editor.show_error(refusal(exc, text))

        self._calls.start(self._memory.add(bot_id, text), added, refused)

    # -- editing ---------------------------------------------------------------------------------------

    def start_edit(self, entry_id: str) -> NoteEditor | None:
        """编辑: the note's words become the editor, in place (one note at a time)."""
        row = self.row(entry_id)
        if row is None:
            return None
        self._end_edits(but=row)
        if self._adding():
            self._cancel_add()
        return row.begin_edit()

    def _end_edits(self, but: NoteRow | None = None) -> None:
        for row in self.rows:
            if row is not but and row.editing:
                self._cancel_edit(row)

    def _edit_cancelled(self, entry_id: str) -> None:
        row = self.row(entry_id)
        if row is not None:
            self._cancel_edit(row)

    def _edit_saved(self, entry_id: str, text: str) -> None:
        row = self.row(entry_id)
        if row is not None:
            self._save_edit(row, text)

    def _cancel_edit(self, row: NoteRow) -> None:
        row.end_edit()
        if row.entry.id not in {entry.id for entry in (self._view.entries if self._view else ())}:
            self.request()  # it went while it was being edited: the list catches up

    def _save_edit(self, row: NoteRow, text: str) -> None:
        editor, bot_id, entry = row.editor, self._bot_id, row.entry
        if editor is None or bot_id is None:
            return
        if kept_text(text) == entry.text:
            self._cancel_edit(row)  # nothing changed: nothing to undo either
            return
        editor.set_busy(True)

        def changed(_entry: MemoryEntry) -> None:
            if bot_id != self._bot_id:
                return
            editor.set_busy(False)
            row.end_edit()
            self._set_undo(Undo("changed", entry.id, entry.text))
            self.request()

        def refused(exc: Exception) -> None:
            if bot_id == self._bot_id:
                editor.set_busy(False)
                editor.show_error(refusal(exc, text))

        self._calls.start(self._memory.edit(bot_id, entry.id, text), changed, refused)

    # -- deleting and undoing --------------------------------------------------------------------------

    def delete(self, entry_id: str) -> None:
        row, bot_id = self.row(entry_id), self._bot_id
        if row is None or bot_id is None:
            return
        row.set_busy(True)
        row.show_error("")

        def deleted(entry: MemoryEntry) -> None:
            if bot_id != self._bot_id:
                return
            self._set_undo(Undo("deleted", entry.id, entry.text))
            self.request()

        def refused(exc: Exception) -> None:
            if bot_id == self._bot_id:
                row.set_busy(False)
                row.show_error(t("memory.delete_failed", reason=reason(exc)))

        self._calls.start(self._memory.delete(bot_id, entry_id), deleted, refused)

    def _set_undo(self, undo: Undo) -> None:
        self._undo = undo
        self._show_undo()

    def undo(self) -> None:
        """撤销: the note gets its words back (a deleted one comes back, with its id and its date)."""
        undo, bot_id = self._undo, self._bot_id
        if undo is None or bot_id is None:
            return
        self.undo_button.setEnabled(False)
        self.undo_error.hide()

        def undone(_entry: MemoryEntry) -> None:
            if bot_id != self._bot_id or self._undo is not undo:
                return
            self._undo = None
            self._show_undo()
            self.request()

        def refused(exc: Exception) -> None:
            if bot_id == self._bot_id and self._undo is undo:
                self.undo_button.setEnabled(True)
                self.undo_error.setText(t("memory.undo_failed", reason=reason(exc)))
                self.undo_error.show()

        self._calls.start(self._memory.edit(bot_id, undo.entry_id, undo.text), undone, refused)

    def dismiss_full(self) -> None:
        """知道了 on 「记忆已满」: the same as the needs-you row's."""
        bot_id = self._bot_id
        if bot_id is None:
            return
        self.dismiss_button.setEnabled(False)
        self.full_error.hide()

        def done(_result: None) -> None:
            self.dismiss_button.setEnabled(True)
            self.request()

        def refused(exc: Exception) -> None:
            self.dismiss_button.setEnabled(True)
            self.full_error.setText(t("memory.dismiss_failed", reason=reason(exc)))
            self.full_error.show()

        self._calls.start(self._memory.dismiss_full(bot_id), done, refused)


class MemoryPanelRow(PressableRow):
    """The panel's 「记忆 · 12 条 ›」, amber-dotted while the notebook is full; it opens the ledger."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("panelTaskRow")
        self.dot = StatusDot("needs", 7, self)
        self.dot.hide()
        self.label = ElidedText("", 1, self)
        self.label.setObjectName("panelMemoryText")
        self.arrow = QLabel(ARROW, self)
        self.arrow.setProperty("role", "muted")
        self.arrow.setFont(theme.font("small"))
        for child in (self.dot, self.label, self.arrow):
            child.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 9, 12, 9)
        row.setSpacing(8)
        row.addWidget(self.dot, 0, Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.label, 1)
        row.addWidget(self.arrow, 0, Qt.AlignmentFlag.AlignVCenter)
        self._tint()

    def set_view(self, view: MemoryView) -> None:
        words = row_words(view)
        self.label.set_text(words)
        self.setText(words)  # not drawn (the label is): what tests and screen readers read
        self.setAccessibleName(words)
        self.dot.setVisible(view.full_since is not None)

    def _tint(self) -> None:
        self.label.set_color(theme.colors().text)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:
            self._tint()
        super().changeEvent(event)

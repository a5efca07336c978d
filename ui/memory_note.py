"""One note of a bot's memory as the ledger shows it (`ui.memory_ledger`, docs/desktop.md#memory): its
words, wrapped, and a faint line with the day it was kept and where it came from, with 编辑 and 删除; 编辑
turns it into `NoteEditor`, the editor 添加… opens too (the words, [保存] [取消], 「120/500」).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QKeyEvent, QPainter, QPaintEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from core.errors import InvalidInputError
from core.memory import notebook
from ui import theme
from ui.answer_bar import reason
from ui.form import button, small_label
from ui.i18n import t
from ui.wrapped_label import SELECTABLE, WrappedLabel

if TYPE_CHECKING:
    from core.store.memory import MemoryEntry

# The editor shows this many lines; a longer note scrolls inside it (one note is one short fact).
EDITOR_LINES = 4
SEPARATOR = " · "


@dataclass(frozen=True, slots=True)
class Limits:
    entry_chars: int
    entries: int
    chars: int


def limits() -> Limits:
    # Read at each call, not copied at import: what the notebook allows is the notebook's to say.
    return Limits(notebook.MAX_ENTRY_CHARS, notebook.MAX_ENTRIES, notebook.MAX_CHARS)


def kept_text(text: str) -> str:
    """The note as the notebook keeps it: lines joined, spaces collapsed."""
    return notebook.clean_text(text)


def kept_length(text: str) -> int:
    return len(kept_text(text))


def note_date(stamp: float, now: float) -> str:
    """「今天 09:12」, 「昨天」, 「11月30日」, or with the year once it is not this year's."""
    moment = datetime.fromtimestamp(stamp)
    today = datetime.fromtimestamp(now).date()
    if moment.date() == today:
        return t("memory.today", time=moment.strftime("%H:%M"))
    if moment.date() == today - timedelta(days=1):
        return t("time.yesterday")
    if moment.year == today.year:
        return t("time.date", month=moment.month, day=moment.day)
    return t("memory.date_year", year=moment.year, month=moment.month, day=moment.day)


def source_words(entry: MemoryEntry) -> str:
    """Where the note came from: 来自对话「周报」, 你写的, or a plain fallback once the title is gone."""
    kind = entry.source_kind
    if kind == "person":
        return t("memory.from.person")
    if kind not in ("conversation", "task", "rule"):
        return ""
    title = entry.source_title.strip()
    if not title:
        # A conversation may just be untitled; a task or a rule always has a title while it exists.
        return t(f"memory.from.{kind}_gone")
    return t(f"memory.from.{kind}", title=title)


def meta_parts(entry: MemoryEntry, now: float) -> list[str]:
    """「11月30日」「来自对话「周报」」「你改过」: when it was kept, where from, and whether the person
    changed it since."""
    parts = [note_date(entry.created_at, now), source_words(entry)]
    if entry.edited_by == "person" and entry.source_kind != "person":
        parts.append(t("memory.edited"))
    return [part for part in parts if part]


def refusal(exc: Exception, text: str) -> str:
    """What to say under an editor whose note was refused. The core words a bad note for the model and the
    API (in English); the person reads it in the UI's words, with the limit."""
    if isinstance(exc, InvalidInputError) and exc.field == "text":
        length, cap = kept_length(text), limits().entry_chars
        if length > cap:
            return t("memory.error.too_long", n=length, max=cap)
        return t("memory.error.empty")
    return reason(exc)


def link(text: str, name: str, parent: QWidget, accent: bool = False) -> QPushButton:
    """A quiet text button in the panel's link look (resources/styles/*.channels.qss)."""
    made = QPushButton(text, parent)
    made.setObjectName("panelChannelAction" if accent else "panelConnectChannel")
    made.setAccessibleName(text)
    made.setProperty("memoryAction", name)
    made.setFlat(True)
    made.setCursor(Qt.CursorShape.PointingHandCursor)
    made.setFont(theme.font("small"))
    return made


class PartsLine(QWidget):
    """Small faint parts joined by 「 · 」 that wrap only between parts, or between the words of a part:
    Qt breaks Chinese between any two characters, which split 「你改过」 over two lines beside the note's
    buttons. A piece wider than the line is cut with …, the whole line in the tooltip."""

    def __init__(self, parts: Sequence[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._parts: list[str] = []
        self.setFont(theme.font("small"))
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.set_parts(parts)

    def text(self) -> str:
        return SEPARATOR.join(self._parts)

    def set_parts(self, parts: Sequence[str]) -> None:
        self._parts = [part for part in parts if part]
        self.setToolTip(self.text())
        self.updateGeometry()
        self.update()

    def lines(self, width: int) -> list[str]:
        """The parts laid out at `width`: as many words on a line as fit, a line ending in 「 ·」 when the
        next part starts the next line."""
        fm = QFontMetrics(self.font())
        pieces = [
            (word, SEPARATOR if first and index else " ")
            for index, part in enumerate(self._parts)
            for first, word in ((n == 0, w) for n, w in enumerate(part.split()))
        ]
        lines: list[str] = []
        line = ""
        for word, glue in pieces:
            joined = f"{line}{glue}{word}" if line else word
            if not line or fm.horizontalAdvance(joined) <= width:
                line = joined
                continue
            lines.append(line + (SEPARATOR.rstrip() if glue == SEPARATOR else ""))
            line = word
        if line:
            lines.append(line)
        return lines

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return QFontMetrics(self.font()).lineSpacing() * max(1, len(self.lines(width)))

    def sizeHint(self) -> QSize:
        fm = QFontMetrics(self.font())
        return QSize(fm.horizontalAdvance(self.text()), fm.lineSpacing())

    def minimumSizeHint(self) -> QSize:
        fm = QFontMetrics(self.font())
        return QSize(fm.horizontalAdvance("…" * 4), fm.lineSpacing())

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self.updateGeometry()
        super().changeEvent(event)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setFont(self.font())
        painter.setPen(QColor(theme.colors().faint))
        fm = QFontMetrics(self.font())
        y = 0
        for line in self.lines(self.width()):
            shown = fm.elidedText(line, Qt.TextElideMode.ElideRight, self.width())
            painter.drawText(QRect(0, y, self.width(), fm.lineSpacing()), Qt.AlignmentFlag.AlignLeft, shown)
            y += fm.lineSpacing()
        painter.end()


class NoteInput(QPlainTextEdit):
    """The note's words. Enter saves and Shift+Enter starts a line (the notebook joins lines anyway);
    Escape cancels the edit before it can close the panel."""

    submitted = Signal()
    cancelled = Signal()

    def event(self, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.ShortcutOverride
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Escape
        ):
            event.accept()  # ours: it arrives as a key press instead of closing the panel
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.cancelled.emit()
            return
        shift = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not shift:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


class NoteEditor(QWidget):
    """The words in place, [保存] [取消] and 「120/500」 (red past the limit), a refusal under them.
    `saved(text)` and `cancelled()`; the ledger sends the command and says how it went."""

    saved = Signal(str)
    cancelled = Signal()

    def __init__(self, parent: QWidget, placeholder: str = "") -> None:
        super().__init__(parent)
        self.setObjectName("memoryEditor")
        self._cap = limits().entry_chars
        self.input = NoteInput(self)
        self.input.setObjectName("settingsText")
        self.input.setPlaceholderText(placeholder)
        self.input.setTabChangesFocus(True)
        metrics = self.input.fontMetrics()
        # A set height: a refusal appearing under it must not make the words jump.
        self.input.setFixedHeight(metrics.lineSpacing() * EDITOR_LINES + 18)
        self.save_button = button(t("memory.save"), self, "primary")
        self.cancel_button = button(t("memory.cancel"), self)
        for made in (self.save_button, self.cancel_button):
            made.setFont(theme.font("small"))
        self.count_label = QLabel(self)
        self.count_label.setObjectName("memoryCount")
        self.count_label.setFont(theme.font("small"))
        self.error = small_label("", "danger", "memoryError", self)
        self.input.textChanged.connect(self._edited)
        self.input.submitted.connect(self._save)
        self.input.cancelled.connect(self.cancelled.emit)
        self.save_button.clicked.connect(lambda _checked=False: self._save())
        self.cancel_button.clicked.connect(lambda _checked=False: self.cancelled.emit())

        foot = QHBoxLayout()
        foot.setContentsMargins(0, 0, 0, 0)
        foot.setSpacing(6)
        foot.addWidget(self.save_button)
        foot.addWidget(self.cancel_button)
        foot.addStretch(1)
        foot.addWidget(self.count_label, 0, Qt.AlignmentFlag.AlignVCenter)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(6)
        column.addWidget(self.input)
        column.addLayout(foot)
        column.addWidget(self.error)
        self._count()

    def text(self) -> str:
        return self.input.toPlainText()

    def start(self, text: str) -> None:
        """Open on these words, the cursor after them."""
        self.set_busy(False)
        self.input.setPlainText(text)
        self.input.moveCursor(self.input.textCursor().MoveOperation.End)
        self.show_error("")
        self.show()
        self.input.setFocus(Qt.FocusReason.OtherFocusReason)

    def set_busy(self, busy: bool) -> None:
        self.input.setReadOnly(busy)
        self.save_button.setEnabled(not busy)
        self.cancel_button.setEnabled(not busy)
        self.save_button.setText(t("memory.saving") if busy else t("memory.save"))

    @property
    def busy(self) -> bool:
        return self.input.isReadOnly()

    def show_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(bool(text))

    def _edited(self) -> None:
        self.show_error("")  # an old refusal never sits next to words it was not about
        self._count()

    def _count(self) -> None:
        length = kept_length(self.text())
        self.count_label.setText(t("memory.count", n=length, max=self._cap))
        role = "danger" if length > self._cap else "faint"
        if self.count_label.property("role") != role:
            self.count_label.setProperty("role", role)
            self.count_label.style().unpolish(self.count_label)
            self.count_label.style().polish(self.count_label)

    def _save(self) -> None:
        if not self.busy:
            self.saved.emit(self.text())


class NoteRow(QWidget):
    """One note: its words, wrapped, and under them 「11月30日 · 来自对话「周报」」 with 编辑 删除."""

    editRequested = Signal(str)
    deleteRequested = Signal(str)
    # From its editor, once 编辑 opened it: (entry id, the words) and (entry id).
    editSaved = Signal(str, str)
    editCancelled = Signal(str)

    def __init__(self, entry: MemoryEntry, now: float, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("memoryNote")
        self.entry = entry
        self.editor: NoteEditor | None = None
        self.text_label = WrappedLabel(entry.text, self)
        self.text_label.setObjectName("memoryText")
        self.text_label.setTextFormat(Qt.TextFormat.PlainText)
        self.text_label.setTextInteractionFlags(SELECTABLE)
        # The row's right margin is the links' (their padding adds 4 px): the words end where the links do.
        self.text_label.setContentsMargins(0, 0, 4, 0)
        self.meta = PartsLine(meta_parts(entry, now), self)
        self.meta.setObjectName("memoryMeta")
        self.edit_button = link(t("memory.edit"), "edit", self)
        self.delete_button = link(t("memory.delete"), "delete", self)
        self.edit_button.clicked.connect(lambda _checked=False: self.editRequested.emit(self.entry.id))
        self.delete_button.clicked.connect(lambda _checked=False: self.deleteRequested.emit(self.entry.id))
        self.error = small_label("", "danger", "memoryError", self)

        self._foot = QWidget(self)
        foot = QHBoxLayout(self._foot)
        foot.setContentsMargins(0, 0, 0, 0)
        foot.setSpacing(2)
        foot.addWidget(self.meta, 1, Qt.AlignmentFlag.AlignTop)
        foot.addSpacing(6)
        # On the meta's first line, however many lines it takes.
        foot.addWidget(self.edit_button, 0, Qt.AlignmentFlag.AlignTop)
        foot.addWidget(self.delete_button, 0, Qt.AlignmentFlag.AlignTop)
        self._column = QVBoxLayout(self)
        self._column.setContentsMargins(14, 10, 10, 8)
        self._column.setSpacing(2)
        self._column.addWidget(self.text_label)
        self._column.addWidget(self._foot)
        self._column.addWidget(self.error)
        self.setAccessibleName(entry.text)

    @property
    def editing(self) -> bool:
        return self.editor is not None and not self.editor.isHidden()

    def set_entry(self, entry: MemoryEntry, now: float) -> None:
        self.entry = entry
        self.text_label.setText(entry.text)
        self.meta.set_parts(meta_parts(entry, now))
        self.setAccessibleName(entry.text)

    def begin_edit(self) -> NoteEditor:
        if self.editor is None:
            self.editor = NoteEditor(self)
            self.editor.setContentsMargins(0, 0, 4, 4)
            self.editor.saved.connect(lambda text: self.editSaved.emit(self.entry.id, text))
            self.editor.cancelled.connect(lambda: self.editCancelled.emit(self.entry.id))
            self._column.insertWidget(0, self.editor)
        self.text_label.hide()
        self.edit_button.hide()
        self.delete_button.hide()
        self.show_error("")
        self.editor.start(self.entry.text)
        return self.editor

    def end_edit(self) -> None:
        if self.editor is not None:
            self.editor.hide()
        self.text_label.show()
        self.edit_button.show()
        self.delete_button.show()

    def set_busy(self, busy: bool) -> None:
        self.edit_button.setEnabled(not busy)
        self.delete_button.setEnabled(not busy)

    def show_error(self, text: str) -> None:
        self.error.setText(text)
        self.error.setVisible(bool(text))

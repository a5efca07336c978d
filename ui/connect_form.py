"""What the connect dialogs (ui.connect_dialog) show alike. Words that come and go without moving anything
(`ReservedLine`: a field's error, a test's result, the error above the buttons), and, in the dialogs of app
channels (Feishu, DingTalk), a small label over a well that lists names to paste into the platform's
developer console, each with what it is for:

    应用要开通的权限
    ┌──────────────────────────────────────────────────┐
    │ im:message           以应用身份发消息、回复和更新卡片 │
    │ …                                                │
    └──────────────────────────────────────────────────┘
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QFontMetrics, QResizeEvent
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QSizePolicy, QVBoxLayout, QWidget

from ui import theme
from ui.form import small_label
from ui.wrapped_label import SELECTABLE


class ReservedLine(QLabel):
    """Words that come and go without moving anything: the room for `lines` lines of small text is kept
    while it is empty, and words longer than that are cut with … (all of them in the tooltip)."""

    def __init__(self, role: str, name: str, lines: int, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        if role:
            self.setProperty("role", role)
        self.setFont(theme.font("small"))
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self._message = ""
        self._height = QFontMetrics(self.font()).lineSpacing() * lines + 2
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self._height)

    # Its room is its own, whatever the words: a wrapping label's height-for-width would let the layout
    # give it less (rows then overlap) or more (rows then move).
    def hasHeightForWidth(self) -> bool:
        return False

    def heightForWidth(self, width: int) -> int:
        return self._height

    def sizeHint(self) -> QSize:
        return QSize(0, self._height)

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self._height)

    def message(self) -> str:
        """All of the words, however many are shown."""
        return self._message

    def set_message(self, text: str) -> None:
        self._message = text
        self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        full = self._message
        width = self.contentsRect().width()
        metrics = QFontMetrics(self.font())

        def fits(text: str) -> bool:
            room = QRect(0, 0, width, 10_000)
            return metrics.boundingRect(room, Qt.TextFlag.TextWordWrap, text).height() <= self.height()

        if width <= 0 or fits(full):
            self.setText(full)
            self.setToolTip("")
            return
        low, high = 0, len(full)  # the longest start of the words that fits with … after it
        while low < high:
            middle = (low + high + 1) // 2
            if fits(full[:middle].rstrip() + "…"):
                low = middle
            else:
                high = middle - 1
        self.setText(full[:low].rstrip() + "…")
        self.setToolTip(full)


def names_width(*lists: Sequence[tuple[str, str]]) -> int:
    """The width of the widest name in any of the lists, so that every list's words start at one edge."""
    mono = QFontMetrics(theme.font("mono"))
    return max((mono.horizontalAdvance(name) for items in lists for name, _words in items), default=0)


def list_line(name: str, words: str) -> str:
    """「name · words」 as a test or a screen reader reads one listed item."""
    return f"{name} · {words}" if words else name


def list_section(
    parent: QWidget, title: str, items: Sequence[tuple[str, str]], name: str, width: int
) -> QVBoxLayout:
    """The label and the well, as a layout for the dialog's column. Names are monospace and selectable;
    `width` is their column's (see `names_width`). Object names: `{name}Name` and `{name}Words`."""
    heading = QLabel(title, parent)
    heading.setObjectName("settingsSectionLabel")
    heading.setFont(theme.font("small"))
    well = QFrame(parent)
    well.setObjectName("settingsWell")
    grid = QGridLayout(well)
    grid.setContentsMargins(14, 10, 14, 10)
    grid.setHorizontalSpacing(16)
    grid.setVerticalSpacing(5)
    # Both are top-aligned, for words that wrap; the smaller monospace name is let down onto the baseline
    # of their first line, where it would otherwise sit a little above it.
    drop = max(0, QFontMetrics(theme.font("small")).ascent() - QFontMetrics(theme.font("mono")).ascent())
    for row, (code, words) in enumerate(items):
        code_label = QLabel(code, well)
        code_label.setObjectName(f"{name}Name")
        code_label.setFont(theme.font("mono"))
        code_label.setTextInteractionFlags(SELECTABLE)
        code_label.setContentsMargins(0, drop, 0, 0)
        words_label = small_label(words, "muted", f"{name}Words", well)
        grid.addWidget(code_label, row, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(words_label, row, 1, Qt.AlignmentFlag.AlignTop)
    grid.setColumnMinimumWidth(0, width)
    grid.setColumnStretch(1, 1)
    section = QVBoxLayout()
    section.setSpacing(6)
    section.addWidget(heading)
    section.addWidget(well)
    return section

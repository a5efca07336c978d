"""Where the user writes: a growing multi-line input (Enter sends, Shift+Enter breaks the line), 发送, and
停止 while a reply is being worked on."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from ui import theme
from ui.i18n import t

MAX_VISIBLE_LINES = 8


class ComposerInput(QPlainTextEdit):
    submitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composerInput")
        self.setPlaceholderText(t("composer.placeholder"))
        self.setTabChangesFocus(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.document().setDocumentMargin(2)
        self.document().documentLayout().documentSizeChanged.connect(lambda _size: self._fit_height())
        self._fit_height()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
            else:
                self.submitted.emit()
            event.accept()
            return
        super().keyPressEvent(event)

    def _fit_height(self) -> None:
        # QPlainTextEdit's document size is in lines; grow with the text, then scroll.
        lines = max(1, min(MAX_VISIBLE_LINES, int(self.document().documentLayout().documentSize().height())))
        line_height = self.fontMetrics().lineSpacing()
        margins = self.contentsMargins()
        frame = int(self.document().documentMargin() * 2) + margins.top() + margins.bottom()
        self.setFixedHeight(lines * line_height + frame + 4)


class Composer(QFrame):
    submitted = Signal(str)
    stopRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composer")
        self.input = ComposerInput(self)
        self.input.submitted.connect(self._submit)
        self.input.textChanged.connect(self._update_send)

        self.stop_button = QPushButton(t("composer.stop"), self)
        self.stop_button.setObjectName("stopButton")
        self.stop_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.stop_button.clicked.connect(self.stopRequested)
        self.stop_button.hide()

        self.send_button = QPushButton(t("composer.send"), self)
        self.send_button.setObjectName("sendButton")
        self.send_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.send_button.clicked.connect(self._submit)

        self.error = QLabel(self)
        self.error.setObjectName("composerError")
        self.error.setProperty("role", "danger")
        self.error.setFont(theme.font("small"))
        self.error.setWordWrap(True)
        self.error.hide()

        row = QHBoxLayout()
        row.setSpacing(8)
        row.addWidget(self.input, 1)
        row.addWidget(self.stop_button, 0, Qt.AlignmentFlag.AlignBottom)
        row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)

        column = QVBoxLayout(self)
        column.setContentsMargins(14, 8, 8, 8)
        column.setSpacing(6)
        column.addLayout(row)
        column.addWidget(self.error)
        self._update_send()

    def text(self) -> str:
        return self.input.toPlainText()

    def set_text(self, text: str) -> None:
        self.input.setPlainText(text)
        self.input.moveCursor(self.input.textCursor().MoveOperation.End)

    def set_live(self, live: bool) -> None:
        self.stop_button.setVisible(live)

    def set_error(self, message: str | None) -> None:
        self.error.setText(message or "")
        self.error.setVisible(bool(message))

    def focus_input(self) -> None:
        self.input.setFocus(Qt.FocusReason.OtherFocusReason)

    def _update_send(self) -> None:
        self.send_button.setEnabled(bool(self.text().strip()))

    def _submit(self) -> None:
        text = self.text().strip()
        if not text:
            return
        self.set_error(None)
        self.input.clear()
        self.submitted.emit(text)

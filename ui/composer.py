"""Where the user writes: a growing multi-line input (Enter sends, Shift+Enter breaks the line), 发送, and
停止 while a reply is being worked on; files to send with the message, dropped on it, pasted into it or
chosen with the paperclip, wait as chips above the input (docs/desktop.md#chat-view)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QFontMetrics, QImage, QKeyEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.chat.attachment import MAX_FILE_BYTES, MAX_FILES
from ui import theme
from ui.composer_files import FileTooLarge, PendingFile, from_image, from_path
from ui.elided_text import ElidedText
from ui.formatting import human_size
from ui.i18n import t
from ui.icons import tinted_icon

MAX_VISIBLE_LINES = 8
CHIP_NAME_WIDTH = 170


def _local_paths(mime: QMimeData) -> list[Path]:
    return [Path(url.toLocalFile()) for url in mime.urls() if url.isLocalFile()]


class ComposerInput(QPlainTextEdit):
    """`filesGiven(paths)` and `imageGiven(QImage)` for what is dropped or pasted that is not text."""

    submitted = Signal()
    filesGiven = Signal(list)
    imageGiven = Signal(QImage)

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

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return bool(_local_paths(source)) or source.hasImage() or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        # Paste and drop both come here: files and pictures become attachments, never their path as text.
        paths = _local_paths(source)
        if paths:
            self.filesGiven.emit(paths)
        elif source.hasImage():
            image = source.imageData()
            if isinstance(image, QImage) and not image.isNull():
                self.imageGiven.emit(image)
        else:
            super().insertFromMimeData(source)

    def _fit_height(self) -> None:
        # QPlainTextEdit's document size is in lines; grow with the text, then scroll.
        lines = max(1, min(MAX_VISIBLE_LINES, int(self.document().documentLayout().documentSize().height())))
        line_height = self.fontMetrics().lineSpacing()
        margins = self.contentsMargins()
        frame = int(self.document().documentMargin() * 2) + margins.top() + margins.bottom()
        self.setFixedHeight(lines * line_height + frame + 4)


class FileChip(QFrame):
    """One file waiting to be sent: its name and size, and × to take it off."""

    removed = Signal(object)

    def __init__(self, item: PendingFile, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("composerChip")
        self.item = item
        words = t("composer.pasted_image") if item.image is not None else item.name
        self.name = ElidedText(words, 1, self)
        self.name.setObjectName("composerChipName")
        self.name.setFont(theme.font("small"))
        # Elided text takes no room of its own in a row: the chip gives its name what it needs, up to a cap.
        self.name.setFixedWidth(
            min(QFontMetrics(self.name.font()).horizontalAdvance(words) + 4, CHIP_NAME_WIDTH)
        )
        self.size_label = QLabel(human_size(item.size) if item.size else "", self)
        self.size_label.setProperty("role", "faint")
        self.size_label.setFont(theme.font("small"))
        self.remove_button = QToolButton(self)
        self.remove_button.setObjectName("composerChipRemove")
        self.remove_button.setText("×")
        self.remove_button.setAccessibleName(t("composer.remove_file", name=words))
        self.remove_button.setToolTip(t("composer.remove_file", name=words))
        self.remove_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.remove_button.clicked.connect(lambda _checked=False: self.removed.emit(self.item))
        line = QHBoxLayout(self)
        line.setContentsMargins(8, 2, 2, 2)
        line.setSpacing(6)
        line.addWidget(self.name, 1)
        line.addWidget(self.size_label)
        line.addWidget(self.remove_button)


class Composer(QFrame):
    """`submitted(text, files)`: the words and the files waiting (a list of PendingFile), at 发送."""

    submitted = Signal(str, list)
    stopRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composer")
        self.setAcceptDrops(True)
        self.files: list[PendingFile] = []
        self.input = ComposerInput(self)
        self.input.submitted.connect(self._submit)
        self.input.textChanged.connect(self._update_send)
        self.input.filesGiven.connect(self.add_paths)
        self.input.imageGiven.connect(self.add_image)

        self.attach_button = self._attach_button()
        self.chips = QWidget(self)
        self.chips.setObjectName("composerChips")
        self._chip_row = QHBoxLayout(self.chips)
        self._chip_row.setContentsMargins(0, 0, 0, 0)
        self._chip_row.setSpacing(6)
        self._chip_row.addStretch(1)
        self.chips.hide()

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
        row.addWidget(self.attach_button, 0, Qt.AlignmentFlag.AlignBottom)
        row.addWidget(self.input, 1)
        row.addWidget(self.stop_button, 0, Qt.AlignmentFlag.AlignBottom)
        row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)

        column = QVBoxLayout(self)
        column.setContentsMargins(14, 8, 8, 8)
        column.setSpacing(6)
        column.addWidget(self.chips)
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

    def _attach_button(self) -> QToolButton:
        made = QToolButton(self)
        made.setObjectName("attachButton")
        made.setIcon(tinted_icon("attach", theme.colors().muted, 16))
        made.setToolTip(t("composer.attach"))
        made.setAccessibleName(t("composer.attach"))
        made.setCursor(Qt.CursorShape.PointingHandCursor)
        made.clicked.connect(lambda _checked=False: self.choose_files())
        return made

    # -- files ---------------------------------------------------------------------------------------

    def choose_files(self) -> None:
        names, _filter = QFileDialog.getOpenFileNames(self, t("composer.attach"))
        self.add_paths([Path(name) for name in names])

    def add_paths(self, paths: list[Path]) -> None:
        refused: list[str] = []
        for path in paths:
            if len(self.files) >= MAX_FILES:
                refused.append(t("composer.too_many", count=MAX_FILES))
                break
            try:
                self._add(from_path(path))
            except FileTooLarge as exc:
                limit = human_size(MAX_FILE_BYTES)
                refused.append(t("composer.too_large", name=exc.name, size=human_size(exc.size), limit=limit))
            except OSError:
                refused.append(t("composer.unreadable", name=path.name or str(path)))
        self.set_error("\n".join(refused) or None)

    def add_image(self, image: QImage) -> None:
        if len(self.files) >= MAX_FILES:
            self.set_error(t("composer.too_many", count=MAX_FILES))
            return
        self._add(from_image(image))
        self.set_error(None)

    def set_files(self, files: list[PendingFile]) -> None:
        """Put files back (a send that failed): what the person attached is never lost."""
        for item in list(self.files):
            self._remove(item)
        for item in files[:MAX_FILES]:
            self._add(item)

    def _add(self, item: PendingFile) -> None:
        self.files.append(item)
        chip = FileChip(item, self.chips)
        chip.removed.connect(self._remove)
        self._chip_row.insertWidget(self._chip_row.count() - 1, chip)
        self.chips.show()
        self._update_send()

    def _remove(self, item: object) -> None:
        if item in self.files:
            self.files.remove(item)
        for chip in self.chips.findChildren(FileChip):
            if chip.item is item:
                self._chip_row.removeWidget(chip)
                chip.deleteLater()
        self.chips.setVisible(bool(self.files))
        self._update_send()

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        mime = event.mimeData()
        if _local_paths(mime) or mime.hasImage():
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:
        self.input.insertFromMimeData(event.mimeData())
        event.acceptProposedAction()

    # -- sending ---------------------------------------------------------------------------------------

    def _update_send(self) -> None:
        self.send_button.setEnabled(bool(self.text().strip() or self.files))

    def _submit(self) -> None:
        text = self.text().strip()
        if not text and not self.files:
            return
        files = list(self.files)
        self.set_error(None)
        self.input.clear()
        self.set_files([])
        self.submitted.emit(text, files)

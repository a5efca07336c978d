"""Opening a task's folder or one of its files with the system's program, and saying so in place when that
fails (no file manager, no program for the file type): 「打不开这个文件夹：这台电脑上没有能打开它的程序。」
with the path, selectable, and 复制路径 so the person can open it some other way."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QApplication, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from ui import theme
from ui.i18n import t
from ui.wrapped_label import SELECTABLE, WrappedLabel


def open_local(path: Path | str) -> bool:
    """Ask the desktop to open a local folder or file; False when nothing could."""
    return bool(QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))))


class OpenFailure(QWidget):
    """Hidden until an open failed: what could not be opened, its path, and 复制路径."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("openFailure")
        self.path = ""
        self.message = WrappedLabel("", self)
        self.message.setObjectName("openFailureMessage")
        self.message.setProperty("role", "danger")
        self.message.setFont(theme.font("small"))
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.path_label = WrappedLabel("", self)
        self.path_label.setObjectName("openFailurePath")
        self.path_label.setProperty("role", "muted")
        self.path_label.setFont(theme.font("small"))
        self.path_label.setTextFormat(Qt.TextFormat.PlainText)
        self.path_label.setTextInteractionFlags(SELECTABLE)
        self.copy_button = QPushButton(t("run_detail.copy_path"), self)
        self.copy_button.setObjectName("copyPathButton")
        self.copy_button.setFlat(True)
        self.copy_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.copy_button.clicked.connect(lambda _checked=False: self.copy())
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(8)
        row.addWidget(self.path_label, 1)
        row.addWidget(self.copy_button, 0, Qt.AlignmentFlag.AlignTop)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 2, 0, 0)
        column.setSpacing(2)
        column.addWidget(self.message)
        column.addLayout(row)
        self.hide()

    def open(self, path: Path | str, *, folder: bool) -> bool:
        """Open `path`; when that fails, say so here. Returns whether it opened."""
        if open_local(path):
            self.hide()
            return True
        self.show_failure(str(path), folder=folder)
        return False

    def show_failure(self, path: str, *, folder: bool) -> None:
        self.path = path
        if folder:
            self.message.setText(t("run_detail.folder_open_failed"))
        else:
            self.message.setText(t("run_detail.file_open_failed", name=Path(path).name))
        self.path_label.setText(path)
        self.copy_button.setText(t("run_detail.copy_path"))
        self.show()

    def copy(self) -> None:
        clipboard = QApplication.clipboard()
        if self.path and clipboard is not None:
            clipboard.setText(self.path)
            self.copy_button.setText(t("run_detail.copied"))

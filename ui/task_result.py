"""最新进展 in the task detail: what the task last said, with the files it names linked (`ui.result_links`),
then 「文件：…」 for the files its Report lists that the line does not name. A link opens the file with the
system's program; when nothing can, the failure is said under it with the path to copy."""

from __future__ import annotations

from PySide6.QtCore import Qt, QUrl
from PySide6.QtWidgets import QVBoxLayout, QWidget

from core.tasks.views import TaskDetail
from ui import theme
from ui.i18n import t
from ui.open_failure import OpenFailure
from ui.result_links import anchor, link_files, linked_path, listed_files
from ui.wrapped_label import SELECTABLE, WrappedLabel

LINKS = Qt.TextInteractionFlag.LinksAccessibleByMouse | Qt.TextInteractionFlag.LinksAccessibleByKeyboard


class TaskResult(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("taskResult")
        self._folder = ""
        self._task_id = ""
        self.label = WrappedLabel("", self)
        self.label.setObjectName("taskLatest")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setTextInteractionFlags(SELECTABLE)
        self.label.linkActivated.connect(self._open_link)
        self.files_label = WrappedLabel("", self)
        self.files_label.setObjectName("taskResultFiles")
        self.files_label.setFont(theme.font("small"))
        self.files_label.setTextFormat(Qt.TextFormat.RichText)
        self.files_label.setTextInteractionFlags(SELECTABLE | LINKS)
        self.files_label.linkActivated.connect(self._open_link)
        self.files_label.hide()
        self.open_failure = OpenFailure(self)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(2)
        column.addWidget(self.label)
        column.addWidget(self.files_label)
        column.addWidget(self.open_failure)

    @property
    def linked(self) -> bool:
        """Whether the line links a file (its text is then HTML)."""
        return self.label.textFormat() == Qt.TextFormat.RichText

    def set_detail(self, detail: TaskDetail) -> None:
        if detail.task.id != self._task_id:
            self._task_id = detail.task.id
            self.open_failure.hide()
        self._folder = detail.folder
        latest = detail.task.latest_line.strip()
        linked = link_files(latest, detail.folder) if latest else None
        if linked is not None and linked.files:
            self.label.setTextFormat(Qt.TextFormat.RichText)
            self.label.setTextInteractionFlags(SELECTABLE | LINKS)
            self.label.setText(linked.html)
        else:
            # Plain text when nothing is linked: what the model wrote is never read as markup.
            self.label.setTextFormat(Qt.TextFormat.PlainText)
            self.label.setTextInteractionFlags(SELECTABLE)
            self.label.setText(latest or t("task.no_latest"))
        self.label.setProperty("role", "" if latest else "faint")
        self.label.style().unpolish(self.label)
        self.label.style().polish(self.label)
        names = (detail.report or {}).get("files") or []
        listed = listed_files(
            detail.folder, names if isinstance(names, list) else [], linked.files if linked else ()
        )
        links = " · ".join(anchor(path, name) for path, name in listed)
        self.files_label.setText(t("run_detail.files", files=links) if links else "")
        self.files_label.setVisible(bool(links))

    def _open_link(self, href: str) -> None:
        path = linked_path(href, self._folder)
        if path is None:
            # Gone since the line was drawn (or never the task's): said the same way, with what it was.
            self.open_failure.show_failure(QUrl(href).toLocalFile() or href, folder=False)
            return
        self.open_failure.open(path, folder=False)

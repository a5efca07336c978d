"""导出 on a task's or a rule's detail (docs/retention.md#markdown-export).

A click asks where to save (a non-modal save dialog, suggesting `<title>.md` in Documents or the home
folder), then reads the Markdown from the facade and writes the file off the UI thread. Nothing waits on
the Qt loop. Afterwards one quiet line under the buttons says 「已导出到 …」, or why it could not.

Asking for the path is a callable the detail is given (`AskPath`), so tests answer it with a path of their
own instead of a dialog.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import tempfile
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QStandardPaths, Qt
from PySide6.QtWidgets import QFileDialog, QPushButton, QWidget

from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.delete_confirm import small_button
from ui.i18n import Language, language, t
from ui.wrapped_label import SELECTABLE, WrappedLabel

log = logging.getLogger(__name__)

# (parent, suggested path) -> the chosen path, or None when the person cancelled.
AskPath = Callable[[QWidget, Path], Awaitable[Path | None]]
# (id, lang) -> the Markdown document.
FetchMarkdown = Callable[[str, Language], Coroutine[Any, Any, str]]

NAME_LIMIT = 80
_UNSAFE = re.compile(r'[\x00-\x1f<>:"/\\|?*]+')


def file_name(title: str) -> str:
    """A title as a file name that every desktop system accepts: 「GPU 价格调研.md」."""
    name = " ".join(_UNSAFE.sub(" ", title).split()).strip(" .")[:NAME_LIMIT].strip(" .")
    return f"{name or t('export.untitled')}.md"


def export_folder() -> Path:
    """Documents when there is one, else the home folder."""
    documents = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    if documents and Path(documents).is_dir():
        return Path(documents)
    return Path.home()


async def ask_save_path(parent: QWidget, suggested: Path) -> Path | None:
    """The save dialog, opened without blocking the loop (`open()`, not `exec()`)."""
    dialog = QFileDialog(parent.window(), t("export.dialog_title"), str(suggested.parent))
    dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
    dialog.setFileMode(QFileDialog.FileMode.AnyFile)
    dialog.setNameFilter(t("export.filter"))
    dialog.setDefaultSuffix("md")
    dialog.selectFile(suggested.name)
    chosen: asyncio.Future[Path | None] = asyncio.get_running_loop().create_future()

    def finished(result: int) -> None:
        files = dialog.selectedFiles()
        accepted = result == int(QFileDialog.DialogCode.Accepted) and bool(files)
        if not chosen.done():
            chosen.set_result(Path(files[0]) if accepted else None)

    dialog.finished.connect(finished)
    dialog.open()
    try:
        return await chosen
    finally:
        if dialog.isVisible():
            dialog.reject()
        dialog.deleteLater()


def _write(path: Path, text: str) -> None:
    """Write the whole file or nothing: into a temporary file beside it, then moved into place, so a failed
    write (a full disk, a network drive gone) never leaves half a document over an earlier export."""
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    ) as out:
        temporary = Path(out.name)
        try:
            out.write(text)
        except BaseException:
            out.close()
            temporary.unlink(missing_ok=True)
            raise
    try:
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _why(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return reason(exc)


class ExportAction(QObject):
    """The 导出 button and the quiet line it leaves. The owner puts both in its layout and says what is
    shown (`set_target`)."""

    def __init__(self, fetch: FetchMarkdown, parent: QWidget, ask: AskPath | None = None) -> None:
        super().__init__(parent)
        self._fetch = fetch
        self._owner = parent
        self.ask: AskPath = ask or ask_save_path
        self._calls = AsyncCalls()
        self._target: tuple[str, str] | None = None  # (id, title)
        self.button: QPushButton = small_button(t("export.button"), "exportButton", self._on_click, parent)
        self.button.setToolTip(t("export.tip"))
        self.status = WrappedLabel("", parent)
        self.status.setObjectName("exportStatus")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setTextInteractionFlags(SELECTABLE)
        self.status.setFont(theme.font("small"))
        self.status.setContentsMargins(4, 0, 0, 0)
        self.status.hide()
        self.written: Path | None = None  # the last file written (tests read it)

    @property
    def busy(self) -> bool:
        return self._calls.pending > 0

    def set_target(self, item_id: str | None, title: str = "") -> None:
        """What 导出 exports; another item drops what was said about the last one."""
        target = (item_id, title) if item_id else None
        if item_id != (self._target[0] if self._target else None):
            self._calls.cancel_all()
            self._set_busy(False)
            self.status.hide()
        self._target = target

    def _on_click(self) -> None:
        self.start()

    def start(self) -> asyncio.Task[None] | None:
        if self._target is None or self.busy:
            return None
        item_id, title = self._target
        self._set_busy(True)
        self.status.hide()
        return self._calls.start(
            self._export(item_id, title),
            done=lambda _none: self._set_busy(False),
            failed=self._failed,
        )

    def shutdown(self) -> None:
        """Closing: drop what is under way (the widgets may already be gone, so they are left alone)."""
        self._calls.cancel_all()

    async def _export(self, item_id: str, title: str) -> None:
        path = await self.ask(self._owner, export_folder() / file_name(title))
        if path is None:
            return  # the person cancelled: nothing to say
        self.button.setText(t("export.busy"))
        text = await self._fetch(item_id, language())
        await asyncio.to_thread(_write, path, text)
        self.written = path
        self._say(t("export.done", path=str(path)), "faint")

    def _failed(self, exc: Exception) -> None:
        self._set_busy(False)
        log.info("export failed: %s", exc)
        self._say(t("export.failed", reason=_why(exc)), "danger")

    def _say(self, text: str, role: str) -> None:
        self.status.setText(text)
        self.status.setProperty("role", role)
        self.status.style().unpolish(self.status)
        self.status.style().polish(self.status)
        self.status.show()

    def _set_busy(self, busy: bool) -> None:
        self.button.setEnabled(not busy)
        if not busy:
            self.button.setText(t("export.button"))

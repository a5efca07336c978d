"""工具服务器 (MCP) in a bot's settings (docs/outside-tools.md):

    ● files       运行中 · 12 个工具
    ● github      失败
                  它在启动时退出了；2 秒后再试
                  fatal: GITHUB_PERSONAL_ACCESS_TOKEN is not set   (its last stderr lines)
    [编辑配置…]

The state is a dot plus words; what went wrong is said under the name. 编辑配置 opens the `mcpServers` JSON
as other desktop clients write it, with secrets shown as ********; saving sends it whole through
`McpFacade.replace_text`, which checks everything first: a refusal is said under the editor and nothing
changes. The list follows the bridge's `mcpChanged` while the page is open.
"""

from __future__ import annotations

import json

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from core.errors import ErrandError
from core.mcp.facade import McpFacade
from core.mcp.views import McpView, ServerStatus
from ui import theme
from ui.async_calls import AsyncCalls
from ui.elided_text import ElidedText
from ui.form import Section, button, dialog_footer, small_label
from ui.i18n import language, t
from ui.status_dot import StatusDot
from ui.theme import DotState

STDERR_SHOWN = 3
_DOTS: dict[str, DotState] = {
    "running": "working",
    "starting": "needs",
    "failed": "failed",
    "stopped": "idle",
}


def state_words(status: ServerStatus) -> str:
    words = t(f"mcp.state.{status.state}")
    if status.state == "running":
        return f"{words} · {t('mcp.tools', count=len(status.tools))}"
    return words


def config_text(view: McpView) -> str:
    return json.dumps(view.config, ensure_ascii=False, indent=2)


class McpServerRow(QWidget):
    def __init__(self, status: ServerStatus, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("settingsRow")
        self.status = status
        self.dot = StatusDot(_DOTS[status.state], 8, self)
        self.title = ElidedText(status.name, 1, self)
        self.title.setObjectName("settingsChannelTitle")
        self.state_label = QLabel(state_words(status), self)
        self.state_label.setObjectName("settingsChannelStatus")
        self.state_label.setProperty("role", "danger" if status.state == "failed" else "muted")
        self.state_label.setFont(theme.font("small"))
        indent = self.dot.sizeHint().width() + 8
        self.reason_label = small_label(status.reason, "faint", "settingsHint", self)
        self.reason_label.setContentsMargins(indent, 0, 0, 0)
        # What it last wrote to stderr says why far more often than our reason can: shown when it failed.
        tail = status.stderr_tail[-STDERR_SHOWN:] if status.state == "failed" else ()
        self.stderr_label = small_label("\n".join(tail), "faint", "mcpStderr", self)
        self.stderr_label.setFont(_mono(theme.font("small").pointSizeF()))
        self.stderr_label.setContentsMargins(indent, 0, 0, 0)
        line = QHBoxLayout()
        line.setSpacing(8)
        line.addWidget(self.dot, 0, Qt.AlignmentFlag.AlignVCenter)
        line.addWidget(self.title, 1)
        line.addWidget(self.state_label, 0, Qt.AlignmentFlag.AlignVCenter)
        column = QVBoxLayout(self)
        column.setContentsMargins(14, 8, 14, 8)
        column.setSpacing(4)
        column.addLayout(line)
        column.addWidget(self.reason_label)
        column.addWidget(self.stderr_label)
        self.setAccessibleName(f"{status.name} · {state_words(status)}")


class McpSection(Section):
    def __init__(
        self, mcp: McpFacade, bot_id: str, parent: QWidget, changed: SignalInstance | None = None
    ) -> None:
        super().__init__(t("mcp.section"), parent)
        self._mcp = mcp
        self._bot_id = bot_id
        self._calls = AsyncCalls()
        self._view: McpView | None = None
        self._reading = False
        self._again = False
        self.rows: list[McpServerRow] = []
        self.dialog: McpConfigDialog | None = None
        self.none_label = small_label(t("mcp.none"), "faint", "settingsHint", self.well)
        self.edit_button = button(t("mcp.edit"), self.well)
        self.edit_button.setEnabled(False)  # until the config is read
        self.edit_button.clicked.connect(lambda _checked=False: self.open_editor())
        self.error = small_label("", "danger", "settingsError", self.well)
        self._tail = QWidget(self.well)
        tail = QVBoxLayout(self._tail)
        tail.setContentsMargins(14, 10, 14, 10)
        tail.setSpacing(6)
        tail.addWidget(self.none_label)
        edit_line = QHBoxLayout()
        edit_line.addWidget(self.edit_button)
        edit_line.addStretch(1)
        tail.addLayout(edit_line)
        tail.addWidget(self.error)
        self.add(self._tail)
        if changed is not None:
            changed.connect(self.on_changed)

    def load(self) -> None:
        if self._reading:
            self._again = True  # one read at a time; one more after it covers whatever changed meanwhile
            return
        self._reading = True
        self._calls.start(self._mcp.view(self._bot_id), self._show, self._failed)

    def on_changed(self, bot_id: str) -> None:
        if bot_id == self._bot_id and self.isVisible():
            self.load()

    def shutdown(self) -> None:
        self._calls.cancel_all()
        if self.dialog is not None:
            self.dialog.reject()

    def open_editor(self) -> McpConfigDialog | None:
        if self._view is None:
            return None
        if self.dialog is not None:
            self.dialog.raise_()
            return self.dialog
        dialog = McpConfigDialog(self._mcp, self._bot_id, config_text(self._view), self.window())
        dialog.finished.connect(lambda _result: self._editor_closed())
        dialog.saved.connect(self._show)
        self.dialog = dialog
        dialog.open()
        return dialog

    def _editor_closed(self) -> None:
        self.dialog = None

    def _show(self, view: McpView) -> None:
        self._reading = False
        self._view = view
        _say(self.error, "")
        for row in self.rows:
            self._rows.removeWidget(row)
            row.deleteLater()
        for line in self.well.findChildren(QWidget, "settingsLine"):
            line.deleteLater()
        self.rows = []
        self._rows.removeWidget(self._tail)
        for status in view.servers:
            self.rows.append(McpServerRow(status, self.well))
            self.add(self.rows[-1])
        self.add(self._tail)
        self.none_label.setVisible(not view.servers)
        self.edit_button.setEnabled(True)
        if self._again:
            self._again = False
            self.load()

    def _failed(self, exc: Exception) -> None:
        self._reading = False
        _say(self.error, _words(exc))


class McpConfigDialog(QDialog):
    """`saved(McpView)` once the config went through (the dialog then closes)."""

    saved = Signal(object)

    def __init__(self, mcp: McpFacade, bot_id: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setWindowTitle(t("mcp.editor_title"))
        self.setModal(True)
        self.resize(620, 520)
        self._mcp = mcp
        self._bot_id = bot_id
        self._calls = AsyncCalls()
        self.hint = small_label(t("mcp.editor_hint"), "faint", "settingsHint", self)
        self.editor = QPlainTextEdit(self)
        self.editor.setObjectName("settingsText")
        self.editor.setFont(_mono(theme.font("body").pointSizeF()))
        self.editor.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.editor.setTabChangesFocus(True)
        self.editor.setPlainText(text)
        self.error = small_label("", "danger", "settingsFormError", self)
        self.cancel_button = button(t("settings.cancel"), self)
        self.cancel_button.clicked.connect(self.reject)
        self.save_button = button(t("settings.save"), self, "primary")
        self.save_button.setDefault(True)
        self.save_button.clicked.connect(self.save)
        foot = dialog_footer(self.error, self.cancel_button, self.save_button)
        column = QVBoxLayout(self)
        column.setContentsMargins(20, 16, 20, 14)
        column.setSpacing(10)
        column.addWidget(self.hint)
        column.addWidget(self.editor, 1)
        column.addLayout(foot)

    def save(self) -> None:
        self.save_button.setEnabled(False)
        self.save_button.setText(t("settings.saving"))
        _say(self.error, "")
        self._calls.start(
            self._mcp.replace_text(self._bot_id, self.editor.toPlainText()), self._saved, self._refused
        )

    def _saved(self, view: McpView) -> None:
        self.saved.emit(view)
        self.accept()

    def _refused(self, exc: Exception) -> None:
        self.save_button.setEnabled(True)
        self.save_button.setText(t("settings.save"))
        _say(self.error, _words(exc))

    def done(self, result: int) -> None:
        self._calls.cancel_all()
        super().done(result)


def _say(label: QLabel, text: str) -> None:
    label.setText(text)
    label.setVisible(bool(text))


def _words(exc: Exception) -> str:
    return exc.words(language()) if isinstance(exc, ErrandError) else str(exc)


def _mono(size: float) -> QFont:
    font = theme.font("mono")
    if size > 0:
        font.setPointSizeF(size)
    return font

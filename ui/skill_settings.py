"""技能 (skills) in a bot's settings (docs/skills.md):

    charts                          共享    [移除]
    Draw charts from CSV files.
    notes: the folder has no SKILL.md          (a folder that is not a skill, and why)
    [添加技能…] [打开技能文件夹]
    把技能文件夹或 .zip 拖到这里也可以添加。

添加技能… takes a .zip or a folder; dropping either on the section does the same. A refusal is said under
the buttons and nothing changes; a name already taken offers 替换. The list follows the bridge's
`skillsChanged` while the page is open.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QUrl, SignalInstance
from PySide6.QtGui import QDesktopServices, QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from core.errors import ConflictError, ErrandError
from core.skills.facade import SkillsFacade
from core.skills.views import SkillInfo, SkillsView
from ui import theme
from ui.async_calls import AsyncCalls
from ui.elided_text import ElidedText
from ui.form import Section, button, small_label
from ui.i18n import language, t


class SkillRow(QWidget):
    def __init__(self, skill: SkillInfo, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("settingsRow")
        self.skill = skill
        self.title = ElidedText(skill.name, 1, self)
        self.title.setObjectName("settingsChannelTitle")
        self.scope_label = QLabel(t(f"skills.scope.{skill.scope}"), self)
        self.scope_label.setObjectName("settingsChannelStatus")
        self.scope_label.setProperty("role", "muted")
        self.scope_label.setFont(theme.font("small"))
        self.remove_button = button(t("skills.remove"), self)
        self.description = small_label(skill.description, "faint", "settingsHint", self)
        line = QHBoxLayout()
        line.setSpacing(8)
        line.addWidget(self.title, 1)
        line.addWidget(self.scope_label)
        line.addWidget(self.remove_button)
        column = QVBoxLayout(self)
        column.setContentsMargins(14, 8, 14, 8)
        column.setSpacing(2)
        column.addLayout(line)
        column.addWidget(self.description)
        self.setAccessibleName(f"{skill.name} · {self.scope_label.text()}")


class SkillsSection(Section):
    def __init__(
        self, skills: SkillsFacade, bot_id: str, parent: QWidget, changed: SignalInstance | None = None
    ) -> None:
        super().__init__(t("skills.section"), parent)
        self._skills = skills
        self._bot_id = bot_id
        self._calls = AsyncCalls()
        self._reading = False
        self._again = False
        self._conflicted: Path | None = None  # what to add again when the person says 替换
        self.rows: list[SkillRow] = []
        self.setAcceptDrops(True)
        self.none_label = small_label(t("skills.none"), "faint", "settingsHint", self.well)
        self.problems_label = small_label("", "danger", "settingsHint", self.well)
        self.add_button = button(t("skills.add"), self.well)
        self.add_button.clicked.connect(lambda _checked=False: self.choose())
        self.open_button = button(t("skills.open_folder"), self.well)
        self.open_button.clicked.connect(lambda _checked=False: self.open_folder())
        self.replace_button = button(t("skills.replace"), self.well)
        self.replace_button.clicked.connect(lambda _checked=False: self._replace())
        self.replace_button.hide()
        self.drop_hint = small_label(t("skills.drop_hint"), "faint", "settingsHint", self.well)
        self.error = small_label("", "danger", "settingsError", self.well)
        self._tail = QWidget(self.well)
        tail = QVBoxLayout(self._tail)
        tail.setContentsMargins(14, 10, 14, 10)
        tail.setSpacing(6)
        tail.addWidget(self.none_label)
        tail.addWidget(self.problems_label)
        buttons = QHBoxLayout()
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.open_button)
        buttons.addStretch(1)
        tail.addLayout(buttons)
        tail.addWidget(self.drop_hint)
        error_line = QHBoxLayout()
        error_line.addWidget(self.error, 1)
        error_line.addWidget(self.replace_button)
        tail.addLayout(error_line)
        self.add(self._tail)
        if changed is not None:
            changed.connect(self.on_changed)

    # ---- reading ------------------------------------------------------------------------------------

    def load(self) -> None:
        if self._reading:
            self._again = True
            return
        self._reading = True
        self._calls.start(self._skills.view(self._bot_id), self._show, self._failed)

    def on_changed(self, bot_id: str) -> None:
        # "" is a shared skill: every bot's list changed.
        if bot_id in (self._bot_id, "") and self.isVisible():
            self.load()

    def shutdown(self) -> None:
        self._calls.cancel_all()

    def _show(self, view: SkillsView) -> None:
        self._reading = False
        for row in self.rows:
            self._rows.removeWidget(row)
            row.deleteLater()
        for line in self.well.findChildren(QWidget, "settingsLine"):
            line.deleteLater()
        self.rows = []
        self._rows.removeWidget(self._tail)
        for skill in view.skills:
            row = SkillRow(skill, self.well)
            row.remove_button.clicked.connect(lambda _checked=False, s=skill: self.remove(s))
            self.rows.append(row)
            self.add(row)
        self.add(self._tail)
        self.none_label.setVisible(not view.skills)
        problems = [f"{p.folder.name}: {p.message}" for p in view.problems]
        _say(self.problems_label, "\n".join(problems))
        if self._again:
            self._again = False
            self.load()

    def _failed(self, exc: Exception) -> None:
        self._reading = False
        self._say_error(exc)

    # ---- changing -----------------------------------------------------------------------------------

    def choose(self) -> None:
        dialog = QFileDialog(self.window(), t("skills.choose_title"))
        dialog.setNameFilter(f"{t('skills.choose_filter')} (*.zip)")  # Qt reads the pattern in ASCII brackets
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(lambda chosen: self.add_path(Path(chosen)))
        dialog.open()

    def add_path(self, path: Path, *, replace: bool = False) -> None:
        _say(self.error, "")
        self.replace_button.hide()
        self._conflicted = None
        self.add_button.setEnabled(False)

        def added(_skill: object) -> None:
            self.add_button.setEnabled(True)
            self.load()

        def refused(exc: Exception) -> None:
            self.add_button.setEnabled(True)
            self._say_error(exc)
            if isinstance(exc, ConflictError):
                self._conflicted = path
                self.replace_button.show()

        self._calls.start(self._skills.add_path(self._bot_id, path, replace=replace), added, refused)

    def _replace(self) -> None:
        if self._conflicted is not None:
            self.add_path(self._conflicted, replace=True)

    def remove(self, skill: SkillInfo) -> None:
        _say(self.error, "")
        self._calls.start(
            self._skills.remove(self._bot_id, skill.name, scope=skill.scope),
            lambda _done: self.load(),
            self._say_error,
        )

    def open_folder(self) -> None:
        folder = self._skills.root(self._bot_id, "bot")
        folder.mkdir(parents=True, exist_ok=True)  # one mkdir: the person is about to put skills there
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

    def _say_error(self, exc: Exception) -> None:
        _say(self.error, exc.words(language()) if isinstance(exc, ErrandError) else str(exc))

    # ---- dropping -----------------------------------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if _dropped_paths(event):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = _dropped_paths(event)
        if paths:
            event.acceptProposedAction()
            self.add_path(paths[0])  # one at a time: each may need its own 替换


def _dropped_paths(event: QDragEnterEvent | QDropEvent) -> list[Path]:
    data = event.mimeData()
    if not data.hasUrls():
        return []
    return [Path(url.toLocalFile()) for url in data.urls() if url.isLocalFile()]


def _say(label: QLabel, text: str) -> None:
    label.setText(text)
    label.setVisible(bool(text))

"""「新任务」: start background work by hand, the way the chat's task_start does
(docs/chat.md#starting-a-task-from-chat):

    标题        [可不填，会从要做的事里取            ]
    要做的事    [                                   ]
                [                                   ]
    机器人      [天天 ▾]          (only with more than one bot)
    计划        (○ 拆成几部分来做)
                                        [取消] [创建]

The dialog only gathers the words; the injected `create(bot_id, title, brief, plan)` does the work (`plan`:
the switch, a planned task split into parts, docs/plans.md; the app
binds it to `TaskService.create(..., in_new_conversation=True)`: the task gets a new conversation of its
own, titled after it, never the one open last). A refusal (nothing to do, too many open tasks, ...) is
said in the dialog, which stays open with everything typed; success closes it. `created(result)` carries
what `create` returned.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QDialog, QHBoxLayout, QPlainTextEdit, QVBoxLayout, QWidget

from core.bots.views import BotView
from core.errors import InvalidInputError
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.form import Combo, FieldRow, Section, Switch, button, dialog_footer, line_input, small_label
from ui.i18n import t

log = logging.getLogger(__name__)

CreateTask = Callable[[str, str, str, bool], Awaitable[object]]
MAX_TITLE = 80  # what the task service keeps of a title


class NewTaskDialog(QDialog):
    created = Signal(object)

    def __init__(
        self,
        create: CreateTask,
        bots: Sequence[BotView] = (),
        bot_id: str = "",
        parent: QWidget | None = None,
    ) -> None:
        """`bots` fills the 机器人 choice (shown only for more than one); `bot_id` is preselected, and is
        what `create` gets when there is no choice ('' = the default bot)."""
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setWindowTitle(t("newtask.title"))
        self.setModal(True)
        self.resize(520, 500)
        self._create = create
        self._bot_id = bot_id
        self._calls = AsyncCalls()

        page = QWidget(self)
        page.setObjectName("settingsPage")
        column = QVBoxLayout(page)
        column.setContentsMargins(24, 20, 24, 8)
        column.addWidget(self._build_form(page, bots, bot_id))
        column.addStretch(1)

        self.error = small_label("", "danger", "settingsFormError", self)
        self.cancel_button = button(t("settings.cancel"), self)
        self.cancel_button.clicked.connect(self.reject)
        self.create_button = button(t("newtask.create"), self, "primary")
        self.create_button.setDefault(True)
        self.create_button.clicked.connect(self.submit)
        foot = dialog_footer(self.error, self.cancel_button, self.create_button)
        foot.setContentsMargins(24, 0, 24, 0)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 14)
        outer.setSpacing(6)
        outer.addWidget(page, 1)
        outer.addLayout(foot)
        self.brief_input.setFocus(Qt.FocusReason.OtherFocusReason)

    def _build_form(self, page: QWidget, bots: Sequence[BotView], bot_id: str) -> Section:
        section = Section(t("newtask.section"), page)
        self.title_input = line_input(section, t("newtask.title_placeholder"))
        self.title_input.setMaxLength(MAX_TITLE)
        self.brief_input = QPlainTextEdit(section)
        self.brief_input.setObjectName("settingsText")
        self.brief_input.setPlaceholderText(t("newtask.brief_placeholder"))
        self.brief_input.setTabChangesFocus(True)
        self.brief_input.setMinimumHeight(120)
        self.bot_combo = Combo(section)
        for bot in bots:
            self.bot_combo.addItem(bot.name, bot.id)
        if bot_id:
            self.bot_combo.setCurrentIndex(max(self.bot_combo.findData(bot_id), 0))
        bot_line = QHBoxLayout()
        bot_line.addWidget(self.bot_combo)
        bot_line.addStretch(1)
        self.plan_switch = Switch(t("newtask.plan_switch"), section)
        self.rows: dict[str, FieldRow] = {
            "title": FieldRow(t("newtask.task_title"), self.title_input, parent=section),
            "text": FieldRow(t("newtask.brief"), self.brief_input, t("newtask.brief_hint_own"), section),
            "bot": FieldRow(t("newtask.bot"), bot_line, parent=section),
            "plan": FieldRow(t("newtask.plan"), self.plan_switch, t("newtask.plan_hint"), section),
        }
        for key, row in self.rows.items():
            if key != "bot" or len(bots) > 1:
                section.add(row)
            else:
                row.hide()  # one bot: nothing to choose
        return section

    def chosen_bot(self) -> str:
        data = self.bot_combo.currentData()
        return str(data) if data is not None else self._bot_id

    def submit(self) -> None:
        if not self.create_button.isEnabled():
            return
        for row in self.rows.values():
            row.clear_error()
        self.error.hide()
        title = self.title_input.text().strip()
        brief = self.brief_input.toPlainText().strip()
        if not brief:
            self.rows["text"].show_error(t("newtask.error.empty"))
            self.brief_input.setFocus()
            return
        self._set_busy(True)
        plan = self.plan_switch.isChecked()
        self._calls.start(
            self._run(self.chosen_bot(), title, brief, plan), done=self._done, failed=self._failed
        )

    async def _run(self, bot_id: str, title: str, brief: str, plan: bool) -> object:
        return await self._create(bot_id, title, brief, plan)

    def _done(self, result: object) -> None:
        self._set_busy(False)
        self.created.emit(result)
        self.accept()

    def _failed(self, exc: Exception) -> None:
        self._set_busy(False)
        if isinstance(exc, InvalidInputError) and exc.field in ("text", "brief", "words"):
            self.rows["text"].show_error(t("newtask.error.empty"))
            return
        if isinstance(exc, InvalidInputError) and exc.field == "title":
            self.rows["title"].show_error(reason(exc))
            return
        log.info("new task refused: %s", reason(exc))
        self.error.setText(t("newtask.error.failed", reason=reason(exc)))
        self.error.show()

    def _set_busy(self, busy: bool) -> None:
        self.create_button.setEnabled(not busy)
        self.create_button.setText(t("newtask.creating") if busy else t("newtask.create"))

    def done(self, result: int) -> None:
        self._calls.cancel_all()
        super().done(result)

    def closeEvent(self, event: QCloseEvent) -> None:
        self._calls.cancel_all()
        super().closeEvent(event)

"""The task detail's 预算 (docs/desktop.md#task-detail: 「约 $0.08 / $1.00」 with 改;
docs/cost.md#task-budget: adjustable when created or later):

    预算
    约 $0.08 / $1.00                                   改
    $ [1.00        ] [保存] [取消]                          after 改, in place
    不能低于已经用掉的 约 $0.08                              a refusal, in red; nothing changed

改 opens the amount in place (no dialog); 保存 sets the budget through the TaskFacade without waiting: the
button says 正在保存… and can't be pressed again until the facade answers. A refused amount is said under
the field and the shown budget stays; a saved one closes the editor and shows the new budget at once (the
detail re-reads anyway when the task changes).
"""

from __future__ import annotations

import logging
import math

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from core.errors import InvalidInputError
from core.tasks.facade import TaskFacade
from core.tasks.views import TaskView
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.cost_words import amount, limit, task_budget_line
from ui.delete_confirm import small_button
from ui.escape_key import WIDGET, bind_escape
from ui.i18n import t
from ui.task_list import section_label
from ui.wrapped_label import SELECTABLE, WrappedLabel

log = logging.getLogger(__name__)

# The core's highest task budget (core.tasks.service.MAX_BUDGET_USD). The core decides what it refuses;
# this only picks the words for a refusal it made.
MAX_BUDGET_USD = 1000.0
INPUT_WIDTH = 110


def parse_amount(text: str) -> float | None:
    """「2」, 「2.50」, 「$2」, 「1,000」 as a number of dollars; None when it is not a number at all."""
    cleaned = text.strip().lstrip("$＄").replace(",", "").replace("，", "").strip()
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def refusal_words(exc: Exception, value: float, task: TaskView | None) -> str:
    """Why the budget was not changed, in the UI's language when the reason is one the core gives."""
    if isinstance(exc, InvalidInputError):
        if value <= 0:
            return t("cost.budget.too_small")
        if value > MAX_BUDGET_USD:
            return t("cost.budget.too_big", most=limit(MAX_BUDGET_USD))
        if task is not None and value < task.spent_usd:
            return t("cost.budget.below_spent", spent=amount(task.spent_usd))
        return reason(exc)
    return t("cost.budget.failed", reason=reason(exc))


class BudgetSection(QWidget):
    """预算 with its line and 改. `saved(TaskView)` once the facade took a new budget."""

    saved = Signal(object)

    def __init__(self, tasks: TaskFacade, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("taskBudgetSection")
        self._tasks = tasks
        self._task: TaskView | None = None
        self._saving: str | None = None  # the task id whose save is in flight
        self._calls = AsyncCalls()

        self.caption = section_label(t("task.budget"), self)
        line = self._build_line()
        self._build_editor()
        self.error = WrappedLabel("", self)
        self.error.setObjectName("budgetError")
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.error.setProperty("role", "danger")
        self.error.setFont(theme.font("small"))
        self.error.hide()

        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(4)
        column.addWidget(self.caption)
        column.addLayout(line)
        column.addWidget(self.editor)
        column.addWidget(self.error)

    def _build_line(self) -> QHBoxLayout:
        """「约 $0.08 / $1.00」 and 改 on its right."""
        self.value = WrappedLabel("", self)
        self.value.setObjectName("taskBudget")
        self.value.setTextFormat(Qt.TextFormat.PlainText)
        self.value.setTextInteractionFlags(SELECTABLE)
        self.change_button = QPushButton(t("cost.budget.change"), self)
        self.change_button.setObjectName("budgetChangeButton")
        self.change_button.setFlat(True)
        self.change_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.change_button.setToolTip(t("cost.budget.change_tip"))
        self.change_button.clicked.connect(lambda _checked=False: self.open_editor())
        line = QHBoxLayout()
        line.setContentsMargins(0, 0, 0, 0)
        line.setSpacing(8)
        line.addWidget(self.value, 1)
        line.addWidget(self.change_button, 0, Qt.AlignmentFlag.AlignTop)
        return line

    def _build_editor(self) -> None:
        """$ [1.00] [保存] [取消], hidden until 改: Enter saves, Esc cancels."""
        self.editor = QWidget(self)
        self.editor.setObjectName("budgetEditor")
        dollar = QLabel("$", self.editor)
        dollar.setProperty("role", "muted")
        self.input = QLineEdit(self.editor)
        self.input.setObjectName("budgetInput")
        self.input.setFixedWidth(INPUT_WIDTH)
        self.input.setAccessibleName(t("task.budget"))
        self.input.returnPressed.connect(self.save)
        bind_escape(self.input, self.close_editor, WIDGET)
        self.save_button = small_button(t("cost.budget.save"), "budgetSaveButton", self.save, self.editor)
        self.cancel_button = small_button(
            t("cost.budget.cancel"), "budgetCancelButton", self.close_editor, self.editor
        )
        edit_row = QHBoxLayout(self.editor)
        edit_row.setContentsMargins(0, 4, 0, 0)
        edit_row.setSpacing(6)
        edit_row.addWidget(dollar)
        edit_row.addWidget(self.input)
        edit_row.addWidget(self.save_button)
        edit_row.addWidget(self.cancel_button)
        edit_row.addStretch(1)
        self.editor.hide()

    # -- what the detail drives ------------------------------------------------------------------------

    @property
    def editing(self) -> bool:
        return not self.editor.isHidden()

    @property
    def saving(self) -> bool:
        return self._task is not None and self._saving == self._task.id

    def set_task(self, task: TaskView) -> None:
        """The task was read (again): its line; another task closes the editor."""
        if self._task is not None and self._task.id != task.id:
            self.close_editor()
        self._task = task
        self.value.setText(task_budget_line(task))
        # A task that ended runs no more: there is nothing left to budget.
        can_change = task.group != "ended"
        if not can_change and self.editing and not self.saving:
            self.close_editor()
        self.change_button.setVisible(can_change and not self.editing)

    def open_editor(self) -> None:
        if self._task is None:
            return
        self.error.hide()
        self.input.setText(f"{self._task.budget_usd:.2f}")
        self.editor.show()
        self.change_button.hide()
        self.input.setFocus()
        self.input.selectAll()

    def close_editor(self) -> None:
        self.editor.hide()
        self.error.hide()
        self._set_busy(False)
        self._saving = None
        self.change_button.setVisible(self._task is not None and self._task.group != "ended")

    def save(self) -> None:
        task = self._task
        if task is None or self.saving:
            return
        value = parse_amount(self.input.text())
        if value is None:
            self._refuse(t("cost.budget.not_a_number"))
            return
        self.error.hide()
        self._saving = task.id
        self._set_busy(True)
        self._calls.start(
            self._tasks.set_budget(task.id, budget_usd=value),
            done=lambda view: self._saved(task.id, view),
            failed=lambda exc: self._refused(task.id, value, exc),
        )

    def shutdown(self) -> None:
        self._calls.cancel_all()
        self._saving = None

    # -- answers ---------------------------------------------------------------------------------------

    def _saved(self, task_id: str, view: TaskView) -> None:
        if self._saving != task_id:
            return  # another task is shown now, or the editor was closed meanwhile
        self.close_editor()
        if self._task is not None and self._task.id == view.id:
            self.set_task(view)
        self.saved.emit(view)

    def _refused(self, task_id: str, value: float, exc: Exception) -> None:
        if self._saving != task_id:
            return
        self._saving = None
        self._set_busy(False)
        log.info("budget of %s not changed: %s", task_id, reason(exc))
        self._refuse(refusal_words(exc, value, self._task))

    def _refuse(self, text: str) -> None:
        self.error.setText(text)
        self.error.show()
        self.input.setFocus()
        self.input.selectAll()

    def _set_busy(self, busy: bool) -> None:
        self.save_button.setEnabled(not busy)
        self.save_button.setText(t("cost.budget.saving") if busy else t("cost.budget.save"))
        self.input.setReadOnly(busy)

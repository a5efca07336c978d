"""One rule, opened in place in the bot panel (docs/desktop.md#rule-detail: the
user's words, the schedule in words, the mode, the next run and the run log):

    每天 08:00 · 看 X 价格
    ○ 观察中,明天 08:00 再运行                 [观察 | 执行]
    ┌ 用户的原话  「每天早上看看 X 的价格,降到 200 以下告诉我」
    │ 下次        明天 08:00(Asia/Shanghai)
    │ 花费        本月 约 $0.41 / $3.00 · 每次最多 $0.10
    └ 版本        第 2 版
    运行记录       今天 08:00 · 观察 · 本会发送:“X 降价了,现在 ¥199” · 约 $0.03
                   昨天 08:00 · 观察 · 本会保持安静 · 约 $0.02
    [立即运行] [编辑] [导出] [删除]

A rule paused at its monthly budget says 「本月预算用完，已暂停」 in red; its 继续 is in needs-you. 导出
saves the rule and its run log as Markdown (`ui.export_action`).

The mode toggle and every command go through the facade and never wait; the view re-reads when the rule
changes (RuleChanged), and a read for a rule no longer shown is dropped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QMouseEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.errors import NotFoundError
from core.rules.facade import RuleFacade
from core.rules.views import RuleView, RunLogEntry
from ui import theme
from ui.activity_view import FOLDED, UNFOLDED, StepRow
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.cost_words import rule_costs, usd_cost
from ui.delete_confirm import DeleteFlow, small_button
from ui.detail_actions import action_row, place_actions
from ui.export_action import AskPath, ExportAction
from ui.i18n import language, t
from ui.reloader import Reloader
from ui.rule_editor import ModeToggle, RuleEditor
from ui.rule_rows import local_moment_words, mode_word, moment_words, rule_heading, rule_state
from ui.status_dot import StatusDot
from ui.task_list import section_label
from ui.wrapped_label import SELECTABLE, WrappedLabel

log = logging.getLogger(__name__)

# The user's words are shown whole unless they run to pages.
WORDS_LIMIT = 1200
# One page of the log; older runs are in the export (kept 30 days: docs/retention.md#pruning-run-logs).
LOG_PAGE = 30
# A would-be message is quoted in one glance, not in full: the expanded run has the rest.
QUOTE_LIMIT = 120


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= QUOTE_LIMIT else flat[: QUOTE_LIMIT - 1] + "…"


def run_outcome(run: RunLogEntry) -> str:
    """What one run did, in the log's words: 本会发送:“…” / 本会保持安静 / 失败:… / 跳过:…"""
    if run.line:
        return run.line  # the core already said it
    outcome = run.outcome or run.state
    observing = run.mode == "observe"
    error = run.reason
    if outcome == "failed":
        return t("rules.run.failed", reason=error) if error else t("rules.run.failed_plain")
    if outcome == "skipped":
        return t("rules.run.skipped", reason=error) if error else t("rules.run.skipped_plain")
    if outcome in ("running", "queued", "settling"):
        return t("rules.run.running")
    text = run.would if observing else run.said
    prefix = "rules.run.would" if observing else "rules.run.did"
    return t(f"{prefix}_send", message=_quote(text)) if text else t(f"{prefix}_quiet")


def run_cost(run: RunLogEntry) -> str:
    """「约 $0.03」 / 「不到 $0.01」; '' for a run that cost nothing or was skipped."""
    return "" if run.outcome == "skipped" else usd_cost(run.cost_usd)


def run_when(run: RunLogEntry, tz: str, now: float) -> str:
    return moment_words(run.time, tz, now)


def run_head(run: RunLogEntry, tz: str, now: float) -> list[str]:
    """「今天 08:00 · 观察」: when, and the mode unless the run failed or was skipped."""
    head = [run_when(run, tz, now)]
    if (run.outcome or run.state) not in ("failed", "skipped") and run.mode:
        head.append(mode_word(run.mode))
    return head


def run_line(run: RunLogEntry, tz: str, now: float) -> str:
    """「今天 08:00 · 观察 · 本会发送:“…” · 约 $0.03」: time, mode, outcome, cost
    (docs/runs.md#the-run-log)."""
    parts = [*run_head(run, tz, now), run_outcome(run), run_cost(run)]
    return " · ".join(part for part in parts if part)


def _report_text(run: RunLogEntry, key: str) -> str:
    value = run.report.get(key) if run.report else None
    return " ".join(str(value).split()) if value else ""


def permission_words(preset: str) -> str:
    """只读 / 工作区可写 / 完全; '' when the run does not say."""
    return t(f"rules.run.permission.{preset}") if preset in ("read-only", "workspace-write", "full") else ""


class RunLogRow(QWidget):
    """One run: 「今天 08:00 · 观察」 and the cost on the first line, what it did under it. A click
    unfolds it in place (docs/runs.md#the-run-log): the Report's summary, message and would-do, 第 N 版 and
    the permission it had, then its steps; another click folds it. The unfolded part is built on first
    unfold."""

    toggled = Signal(str, bool)

    def __init__(self, run: RunLogEntry, tz: str, now: float, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ruleRunRow")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.TabFocus)
        self.run = run
        self.run_id = run.id
        self.line = run_line(run, tz, now)
        self.details: QWidget | None = None
        self.when = QLabel(" · ".join(p for p in run_head(run, tz, now) if p), self)
        self.when.setObjectName("ruleRunWhen")
        self.when.setProperty("role", "muted")
        self.when.setFont(theme.font("small"))
        self.cost = QLabel(run_cost(run), self)
        self.cost.setObjectName("ruleRunCost")
        self.cost.setProperty("role", "faint")
        self.cost.setFont(theme.font("small"))
        self.fold_mark = QLabel(FOLDED, self)
        self.fold_mark.setObjectName("ruleRunFold")
        self.fold_mark.setProperty("role", "faint")
        self.fold_mark.setFont(theme.font("small"))
        self.outcome = WrappedLabel(run_outcome(run), self)
        self.outcome.setObjectName("ruleRunOutcome")
        self.outcome.setTextFormat(Qt.TextFormat.PlainText)
        self.outcome.setTextInteractionFlags(SELECTABLE)
        if (run.outcome or run.state) == "failed":
            self.outcome.setProperty("role", "danger")
        first = QHBoxLayout()
        first.setSpacing(8)
        first.addWidget(self.when, 1)
        first.addWidget(self.cost)
        first.addWidget(self.fold_mark)
        self._column = QVBoxLayout(self)
        self._column.setContentsMargins(14, 9, 14, 9)
        self._column.setSpacing(2)
        self._column.addLayout(first)
        self._column.addWidget(self.outcome)
        self.setAccessibleName(self.line)

    @property
    def expanded(self) -> bool:
        return self.details is not None and not self.details.isHidden()

    def set_expanded(self, expanded: bool) -> None:
        if expanded == self.expanded:
            return
        if expanded and self.details is None:
            self.details = self._build_details()
            self._column.addWidget(self.details)
        if self.details is not None:
            self.details.setVisible(expanded)
        self.fold_mark.setText(UNFOLDED if expanded else FOLDED)
        self.toggled.emit(self.run_id, expanded)

    def toggle(self) -> None:
        self.set_expanded(not self.expanded)

    def detail_texts(self) -> list[str]:
        """The unfolded lines as shown, step titles last (tests read this); empty while folded."""
        if not self.expanded or self.details is None:
            return []
        texts = [label.text() for label in self.details.findChildren(QLabel, "ruleRunFact")]
        return texts + [row.step.title for row in self.details.findChildren(StepRow)]

    def _build_details(self) -> QWidget:
        box = QWidget(self)
        box.setObjectName("ruleRunDetails")
        column = QVBoxLayout(box)
        column.setContentsMargins(0, 6, 0, 0)
        column.setSpacing(3)
        message = (self.run.would if self.run.mode == "observe" else self.run.said) or _report_text(
            self.run, "message"
        )
        summary = _report_text(self.run, "summary")
        would = _report_text(self.run, "would")
        facts = [
            t("rules.run.detail.summary", text=summary) if summary else "",
            t("rules.run.detail.message", text=" ".join(message.split())) if message.strip() else "",
            t("rules.run.detail.would", text=would) if would else "",
        ]
        under = [t("rules.run.detail.version", version=self.run.version) if self.run.version else ""]
        under.append(permission_words(self.run.permission))
        facts.append(" · ".join(part for part in under if part))
        for text in facts:
            if not text:
                continue
            label = WrappedLabel(text, box)
            label.setObjectName("ruleRunFact")
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setTextInteractionFlags(SELECTABLE)
            label.setFont(theme.font("small"))
            column.addWidget(label)
        steps = self.run.steps
        if steps:
            column.addWidget(section_label(t("rules.run.detail.steps"), box))
            for step in steps:
                column.addWidget(StepRow(step, box))
        return box

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton and self.rect().contains(event.position().toPoint()):
            event.accept()
            self.toggle()
            return
        super().mouseReleaseEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_Space):
            self.toggle()
            return
        super().keyPressEvent(event)


class RuleDetailBody(QWidget):
    """The rule's detail. `deleted(id)`: the rule is gone after 删除; the owner goes back. `ask_path` asks
    where 导出 saves (the save dialog unless given; tests pass their own)."""

    deleted = Signal(str)
    titleChanged = Signal(str)

    def __init__(
        self,
        rules: RuleFacade,
        parent: QWidget | None = None,
        now: Callable[[], float] = time.time,
        ask_path: AskPath | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("ruleDetailBody")
        self._rules = rules
        self._ask_path = ask_path
        self._now = now
        self._rule_id: str | None = None
        self._rule: RuleView | None = None
        self._following = False
        self._calls = AsyncCalls()
        self._reader: Reloader[tuple[str, RuleView | None, list[RunLogEntry] | None]] = Reloader(
            self._load, self._apply, self._failed
        )
        self.run_rows: list[RunLogRow] = []
        self._unfolded: set[str] = set()  # run ids the user unfolded; kept across re-reads of the same rule
        self.editor: RuleEditor | None = None

        self._column = QVBoxLayout(self)
        self._column.setContentsMargins(0, 0, 0, 0)
        self._column.setSpacing(8)
        self.title_label = WrappedLabel("", self)
        self.title_label.setObjectName("ruleDetailTitle")
        self.title_label.setFont(theme.font("strong"))
        self.title_label.setTextFormat(Qt.TextFormat.PlainText)
        self._column.addWidget(self.title_label)
        self._build_state()
        self._build_facts()
        self._build_log()
        self._build_actions()
        self._set_body_visible(False)

    # -- building --------------------------------------------------------------------------------------

    def _build_state(self) -> None:
        row = QHBoxLayout()
        row.setContentsMargins(4, 0, 0, 0)
        row.setSpacing(6)
        self.state_dot = StatusDot("idle", 8, self)
        self.state_label = WrappedLabel("", self)
        self.state_label.setObjectName("ruleState")
        self.state_label.setFont(theme.font("small"))
        self.mode_toggle = ModeToggle(("observe", "act"), self)
        self.mode_toggle.chosen.connect(self._on_mode)
        row.addWidget(self.state_dot, 0, Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.state_label, 1, Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.mode_toggle, 0, Qt.AlignmentFlag.AlignVCenter)
        self._column.addLayout(row)

        self.notice = WrappedLabel("", self)  # a failed command or read says why, quietly
        self.notice.setObjectName("ruleNotice")
        self.notice.setProperty("role", "danger")
        self.notice.setFont(theme.font("small"))
        self.notice.setContentsMargins(4, 0, 0, 0)
        self.notice.hide()
        self._column.addWidget(self.notice)

    def _build_facts(self) -> None:
        # One well, no lines between its rows, like the task detail (docs/desktop.md#look).
        self.well = QFrame(self)
        self.well.setObjectName("taskWell")
        facts = QVBoxLayout(self.well)
        facts.setContentsMargins(14, 12, 14, 14)
        facts.setSpacing(4)
        self.words_label = self._fact(facts, t("rules.detail.words"), "ruleWords")
        facts.addSpacing(8)
        self.next_label = self._fact(facts, t("rules.detail.next"), "ruleNext")
        facts.addSpacing(8)
        self.cost_label = self._fact(facts, t("cost.rule_costs"), "ruleCost")
        facts.addSpacing(8)
        self.version_label = self._fact(facts, t("rules.detail.version"), "ruleVersion")
        facts.addSpacing(8)
        # Where what it says goes. Only the desktop exists yet; chat channels name theirs here.
        self.destination_label = self._fact(facts, t("rules.detail.destination"), "ruleDestination")
        self.destination_label.setText(t("rules.detail.destination_desktop"))
        self._column.addWidget(self.well)

    def _fact(self, layout: QVBoxLayout, caption: str, name: str) -> WrappedLabel:
        layout.addWidget(section_label(caption, self.well))
        value = WrappedLabel("", self.well)
        value.setObjectName(name)
        value.setTextFormat(Qt.TextFormat.PlainText)
        value.setTextInteractionFlags(SELECTABLE)
        layout.addWidget(value)
        return value

    def _build_log(self) -> None:
        self.log_box = QWidget(self)
        column = QVBoxLayout(self.log_box)
        column.setContentsMargins(0, 6, 0, 0)
        column.setSpacing(6)
        caption = section_label(t("rules.detail.log"), self.log_box)
        caption.setContentsMargins(4, 0, 0, 0)
        column.addWidget(caption)
        self.log_well = QFrame(self.log_box)
        self.log_well.setObjectName("taskWell")
        self._log_layout = QVBoxLayout(self.log_well)
        self._log_layout.setContentsMargins(0, 0, 0, 0)
        self._log_layout.setSpacing(0)
        column.addWidget(self.log_well)
        self.log_empty = QLabel(t("rules.detail.no_runs"), self.log_box)
        self.log_empty.setObjectName("ruleLogEmpty")
        self.log_empty.setProperty("role", "faint")
        self.log_empty.setFont(theme.font("small"))
        self.log_empty.setContentsMargins(4, 0, 0, 0)
        column.addWidget(self.log_empty)
        self._column.addWidget(self.log_box)

    def _build_actions(self) -> None:
        self.action_row, row = action_row(self)
        self.run_button = self._button(t("rules.detail.run_now"), "ruleRunNowButton", self._on_run_now)
        self.edit_button = self._button(t("rules.detail.edit"), "ruleEditButton", self._on_edit)
        self.export = ExportAction(
            lambda rule_id, lang: self._rules.export_markdown(rule_id, lang=lang), self, self._ask_path
        )
        self.export_button = self.export.button
        self.export_button.setParent(self.action_row)
        # Deleting drops the run log too, so it asks first, in place, as the task detail does.
        self.deletion = DeleteFlow(
            t("rules.detail.delete_confirm"),
            (t("rules.detail.delete"), t("rules.detail.deleting"), t("rules.detail.cancel")),
            self,
            self.action_row,
            self._calls,
            current=lambda: self._rule_id,
            shown=lambda: self._rule is not None,
            delete=self._rules.delete,
            starting=self.notice.hide,
            failed=lambda exc: self._say(t("rules.detail.delete_failed", reason=reason(exc))),
            reread=self._reader.request,
        )
        self.delete_button = self._button(t("rules.detail.delete"), "taskDeleteButton", self.deletion.ask)
        buttons = (self.run_button, self.edit_button, self.export_button, self.delete_button)
        place_actions(self._column, self.action_row, row, buttons, self.export, self.deletion)

        self.confirm = self.deletion.confirm
        # The names tests and callers use.
        self.confirm_text = self.confirm.text
        self.confirm_delete = self.confirm.delete_button
        self.cancel_delete = self.confirm.cancel_button

    def _button(self, text: str, name: str, slot: Callable[[], None]) -> QPushButton:
        return small_button(text, name, slot, self)

    # -- what the owner drives -------------------------------------------------------------------------

    @property
    def rule_id(self) -> str | None:
        return self._rule_id

    @property
    def rule(self) -> RuleView | None:
        return self._rule

    def show_rule(self, rule_id: str) -> Any:
        """Show this rule and follow it; the future resolves once it is shown."""
        self._following = True
        if rule_id != self._rule_id:
            self._reader.reset()
            self._rule_id = rule_id
            self._rule = None
            self.title_label.setText("")
            self.notice.hide()
            self.confirm.hide()
            self.export.set_target(None)
            self._clear_log()
            self._unfolded.clear()
            self._set_body_visible(False)
        return self._reader.request()

    def close_view(self) -> None:
        self._reader.reset()
        self._following = False

    def on_rule_changed(self, rule_id: str) -> None:
        if self._following and rule_id == self._rule_id:
            self._reader.request()

    def shutdown(self) -> None:
        self.close_view()
        self._rule_id = None
        self._calls.cancel_all()
        self.export.shutdown()
        if self.editor is not None:
            self.editor.reject()

    # -- reading ---------------------------------------------------------------------------------------

    async def _load(self) -> tuple[str, RuleView | None, list[RunLogEntry] | None]:
        rule_id = self._rule_id
        if rule_id is None:
            return "", None, None
        try:
            rule = await self._rules.get(rule_id, lang=language())
        except NotFoundError:
            return rule_id, None, None
        return rule_id, rule, list(await self._rules.runs(rule_id, lang=language()))

    def _apply(self, result: tuple[str, RuleView | None, list[RunLogEntry] | None]) -> None:
        rule_id, rule, runs = result
        if rule_id != self._rule_id:
            return  # read for a rule that is no longer shown
        if rule is None:
            self._rule = None
            self._set_body_visible(False)
            self._say(t("rules.detail.gone"))
            if self.deletion.gone(rule_id):
                self.deleted.emit(rule_id)
            return
        self._rule = rule
        self._show(rule, runs)

    def _failed(self, exc: Exception) -> None:
        self._say(t("rules.load_failed", reason=reason(exc)))

    def _say(self, text: str) -> None:
        self.notice.setText(text)
        self.notice.show()

    def _show(self, rule: RuleView, runs: list[RunLogEntry] | None) -> None:
        heading = rule_heading(rule)
        if self.title_label.text() != heading:
            self.title_label.setText(heading)
            self.titleChanged.emit(heading)
        now = self._now()
        dot, words = rule_state(rule, now)
        self.state_dot.set_state(dot)
        self.state_label.setText(words)
        self.state_label.setProperty("role", "danger" if rule.paused_reason else "muted")
        self.state_label.style().unpolish(self.state_label)
        self.state_label.style().polish(self.state_label)
        self.mode_toggle.set_mode(rule.mode)
        self.mode_toggle.setEnabled(True)
        # A fixed reminder always acts (docs/runs.md#reminders): there is nothing to watch, so no toggle.
        self.mode_toggle.setVisible(rule.kind != "remind")
        words_text = rule.instruction.strip()
        if len(words_text) > WORDS_LIMIT:
            words_text = words_text[:WORDS_LIMIT] + "…"
        self.words_label.setText(t("rules.detail.quoted", words=words_text))
        if rule.next_run_at:
            when = moment_words(rule.next_run_at, rule.tz, now)
            here = local_moment_words(rule.next_run_at, rule.tz, now)
            self.next_label.setText(
                t("rules.detail.next_value_here", when=when, tz=rule.tz, here=here)
                if here
                else t("rules.detail.next_value", when=when, tz=rule.tz)
            )
        else:
            self.next_label.setText(t("rules.detail.no_next"))
        self.cost_label.setText(rule_costs(rule))
        self.version_label.setText(t("rules.detail.version_value", version=rule.version))
        self.export.set_target(rule.id, rule.title)
        self._show_log(rule, runs)
        self._set_body_visible(True)

    def _clear_log(self) -> None:
        while self._log_layout.count():
            item = self._log_layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        self.run_rows = []

    def _show_log(self, rule: RuleView, runs: list[RunLogEntry] | None) -> None:
        self._clear_log()
        self.log_box.setVisible(runs is not None)
        if runs is None:
            return
        now = self._now()
        for position, run in enumerate(runs[:LOG_PAGE]):
            if position:
                line = QFrame(self.log_well)
                line.setObjectName("taskRowLine")
                line.setFixedHeight(1)
                self._log_layout.addWidget(line)
            row = RunLogRow(run, rule.tz, now, self.log_well)
            if row.run_id in self._unfolded:
                row.set_expanded(True)
            row.toggled.connect(self._on_run_toggled)
            self._log_layout.addWidget(row)
            self.run_rows.append(row)
        self.log_well.setVisible(bool(self.run_rows))
        self.log_empty.setVisible(not self.run_rows)

    def _on_run_toggled(self, run_id: str, expanded: bool) -> None:
        if not run_id:
            return
        if expanded:
            self._unfolded.add(run_id)
        else:
            self._unfolded.discard(run_id)

    def _set_body_visible(self, visible: bool) -> None:
        for widget in (self.title_label, self.state_dot, self.state_label, self.well, self.action_row):
            widget.setVisible(visible)
        if not visible:
            self.export.status.hide()
        self.mode_toggle.setVisible(visible and (self._rule is None or self._rule.kind != "remind"))
        self.log_box.setVisible(visible)

    def log_lines(self) -> list[str]:
        """The run log as shown, newest first (tests read this)."""
        return [row.line for row in self.run_rows]

    # -- commands --------------------------------------------------------------------------------------

    def _on_mode(self, mode: str) -> None:
        rule_id = self._rule_id
        if rule_id is None:
            return
        self.notice.hide()
        self.mode_toggle.setEnabled(False)  # one change at a time; the re-read enables it again
        self._calls.start(
            self._rules.update(rule_id, mode=mode, lang=language()),
            done=lambda view: self._mode_ended(rule_id, view, None),
            failed=lambda exc: self._mode_ended(rule_id, None, exc),
        )

    def _mode_ended(self, rule_id: str, view: RuleView | None, exc: Exception | None) -> None:
        if rule_id != self._rule_id:
            return
        self.mode_toggle.setEnabled(True)
        if exc is not None:
            self._say(t("rules.detail.mode_failed", reason=reason(exc)))
            if self._rule is not None:
                self.mode_toggle.set_mode(self._rule.mode)  # back to what the rule really is
            return
        self._reader.request()  # the new state, even if its RuleChanged was missed

    def _on_run_now(self) -> None:
        rule_id = self._rule_id
        if rule_id is None:
            return
        self.notice.hide()
        self.run_button.setEnabled(False)
        self.run_button.setText(t("rules.detail.running"))
        self._calls.start(
            self._rules.run_now(rule_id),
            done=lambda _result: self._run_ended(rule_id, None),
            failed=lambda exc: self._run_ended(rule_id, exc),
        )

    def _run_ended(self, rule_id: str, exc: Exception | None) -> None:
        self.run_button.setEnabled(True)
        self.run_button.setText(t("rules.detail.run_now"))
        if rule_id != self._rule_id:
            return
        if exc is not None:
            self._say(t("rules.detail.run_failed", reason=reason(exc)))
        self._reader.request()

    def _on_edit(self) -> None:
        if self._rule is None:
            return
        if self.editor is not None:
            self.editor.raise_()
            return
        self.editor = RuleEditor(self._rules, rule=self._rule, parent=self.window())
        self.editor.saved.connect(lambda _view: self._reader.request())
        self.editor.finished.connect(self._editor_closed)
        self.editor.open()

    def _editor_closed(self, _result: int) -> None:
        if self.editor is not None:
            self.editor.deleteLater()
        self.editor = None

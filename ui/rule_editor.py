"""The rule editor (docs/desktop.md#rule-editor): make a rule by hand, or change one.

    标题        [看 X 价格                              ]
    要做的事    [每天早上看看 X 的价格,降到 200 以下告诉我]   the user's words, kept verbatim
    重复        [每天 ▾]
    时间        [08:00]      仅工作日 ( )                     the fields of the chosen kind only
    预览        每天 08:00(Asia/Shanghai)                      the schedule read back, with its zone,
                接下来 明天 08:00、周四 08:00、周五 08:00       and its next three times
    方式        [执行 | 观察]                                   a new check only; 执行 by default
                                               [取消] [保存]

The preview asks the facade on every change (it is pure computation, no I/O), so a person sees what the
rule will do before saving; while the schedule is not valid yet it says what is missing, quietly. Saving
goes through the facade, which checks everything: a refusal is shown under the field it names
(`schedule.minutes`, `title`, ...; `schedule` as a whole lands at the one field its kind shows), the cursor
goes to that field, the error goes as soon as that field is edited, and the dialog stays open with everything
typed. The form sits in a scroll area and the dialog grows for a wrapped error, so no input is ever squeezed.
`saved(view)` carries the rule as saved.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QIntValidator
from PySide6.QtWidgets import (
    QApplication,
    QButtonGroup,
    QDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from core.errors import InvalidInputError
from core.rules.facade import RuleFacade
from core.rules.views import RuleView
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.form import Combo, FieldRow, Section, Switch, button, dialog_footer, line_input, small_label
from ui.i18n import language, t
from ui.rule_rows import mode_word, wall_words
from ui.wrapped_label import WrappedLabel

log = logging.getLogger(__name__)

KINDS = ("daily", "weekly", "every", "once", "cron")
WEEKDAYS = [0, 1, 2, 3, 4]
TITLE_MAX = 80
PREVIEW_COUNT = 3
WORDS_HEIGHT = 112
# Which rows each kind shows; the others stay hidden (and are not sent).
KIND_ROWS: dict[str, tuple[str, ...]] = {
    "daily": ("schedule.time",),
    "weekly": ("schedule.time", "schedule.days"),
    "every": ("schedule.minutes",),
    "once": ("schedule.at",),
    "cron": ("schedule.cron",),
}
SCHEDULE_ROWS = ("schedule.time", "schedule.days", "schedule.minutes", "schedule.at", "schedule.cron")
# Our own sentence under a refused field; the core's (English, technical) message for the rest.
FIELD_WORDS = {
    "title": "rules.error.title",
    "instruction": "rules.error.instruction",
    "schedule.time": "rules.error.time",
    "schedule.minutes": "rules.error.minutes",
    "schedule.days": "rules.error.days",
    "schedule.at": "rules.error.at",
}
# Fields whose own sentence carries the core's detail (which part of the expression is wrong).
FIELD_WORDS_WITH_REASON = {"schedule.cron": "rules_editor.error.cron"}


def error_row(field: str, kind: str = "") -> str:
    """Which row a refused field belongs to: its own; for the schedule as a whole, the one field the chosen
    `kind` shows (cron, interval, date), else the 重复 row."""
    if field in SCHEDULE_ROWS or field in ("title", "instruction", "mode"):
        return field
    if field == "schedule":
        shown = KIND_ROWS.get(kind, ())
        if len(shown) == 1:
            return shown[0]
    if field.startswith("schedule") or field == "kind":
        return "schedule"
    return ""


def as_sentence(text: str) -> str:
    """The core's technical fragment ("needs five fields ...") read as a sentence: capital first, a stop."""
    text = text.strip()
    if not text:
        return text
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?。！？)'\"" else text + "."


def error_words(exc: InvalidInputError) -> str:
    key = FIELD_WORDS.get(exc.field)
    if key:
        return t(key)
    detail = reason(exc)
    with_reason = FIELD_WORDS_WITH_REASON.get(exc.field)
    if with_reason:
        return t(with_reason, reason=detail.strip().rstrip("."))
    return as_sentence(detail)


class ModeToggle(QWidget):
    """[观察 | 执行] (or in another order): buttons as one segmented control. `chosen(mode)` only when a
    person picks; `set_mode` shows a mode quietly, and an `off` rule has neither pressed."""

    chosen = Signal(str)

    def __init__(self, modes: tuple[str, ...] = ("observe", "act"), parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ruleModeToggle")
        self._group = QButtonGroup(self)
        self._group.setExclusive(True)
        self.buttons: dict[str, QPushButton] = {}
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(0)
        for position, mode in enumerate(modes):
            made = QPushButton(mode_word(mode), self)
            made.setObjectName("ruleModeButton")
            made.setProperty("side", "left" if position == 0 else "right")
            made.setCheckable(True)
            made.setCursor(Qt.CursorShape.PointingHandCursor)
            made.setFont(theme.font("small"))
            made.clicked.connect(lambda _checked=False, m=mode: self._picked(m))
            self._group.addButton(made)
            self.buttons[mode] = made
            row.addWidget(made)
        self._mode = ""

    @property
    def mode(self) -> str:
        return self._mode

    def set_mode(self, mode: str) -> None:
        self._mode = mode
        self._group.setExclusive(False)  # exclusive groups refuse to uncheck all (an `off` rule)
        for key, made in self.buttons.items():
            made.setChecked(key == mode)
        self._group.setExclusive(True)

    def _picked(self, mode: str) -> None:
        if mode != self._mode:
            self._mode = mode
            self.chosen.emit(mode)


class RuleEditor(QDialog):
    saved = Signal(object)

    def __init__(
        self,
        rules: RuleFacade,
        *,
        rule: RuleView | None = None,
        bot_id: str = "",
        parent: QWidget | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        """`rule` edits that rule; without it the editor makes a new check for `bot_id` ('' = default bot)."""
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setWindowTitle(t("rules.editor.edit_title" if rule else "rules.editor.new_title"))
        self.setModal(True)
        self.resize(560, 660)
        self._rules = rules
        self._rule = rule
        self._bot_id = bot_id
        self._now = now
        self._calls = AsyncCalls()

        page = QWidget(self)
        page.setObjectName("settingsPage")
        column = QVBoxLayout(page)
        column.setContentsMargins(24, 20, 24, 8)
        column.addWidget(self._build_form(page))
        column.addStretch(1)
        # A wrapped error line adds height; in a plain layout the dialog would squeeze the inputs to make
        # room. In a scroll area every row keeps its own height and the form scrolls instead.
        scroll = QScrollArea(self)
        scroll.setObjectName("ruleEditorScroll")
        scroll.setWidget(page)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.form_scroll = scroll
        self.form_page = page

        self.error = small_label("", "danger", "settingsFormError", self)
        self.cancel_button = button(t("settings.cancel"), self)
        self.cancel_button.clicked.connect(self.reject)
        self.save_button = button(t("rules.editor.save"), self, "primary")
        self.save_button.setDefault(True)
        self.save_button.clicked.connect(self.submit)
        foot = dialog_footer(self.error, self.cancel_button, self.save_button)
        foot.setContentsMargins(24, 0, 24, 0)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 14)
        outer.setSpacing(6)
        outer.addWidget(scroll, 1)
        outer.addLayout(foot)
        self._fill(rule)
        self._kind_changed()
        self._clear_errors_on_edit()
        self.title_input.setFocus(Qt.FocusReason.OtherFocusReason)

    # -- building --------------------------------------------------------------------------------------

    def _build_form(self, page: QWidget) -> Section:
        section = Section(t("rules.editor.section"), page)
        self.title_input = line_input(section, t("rules.editor.title_placeholder"))
        self.title_input.setMaxLength(TITLE_MAX)
        self.words_input = QPlainTextEdit(section)
        self.words_input.setObjectName("settingsText")
        self.words_input.setPlaceholderText(t("rules.editor.words_placeholder"))
        self.words_input.setTabChangesFocus(True)
        # A set height: spare room (or an error line elsewhere) must not grow or shrink the user's words.
        self.words_input.setFixedHeight(WORDS_HEIGHT)
        self.rows: dict[str, FieldRow] = {
            "title": FieldRow(t("rules.editor.title"), self.title_input, parent=section),
            "instruction": FieldRow(
                t("rules.editor.words"), self.words_input, t("rules.editor.words_hint"), section
            ),
        }
        section.add(self.rows["title"])
        section.add(self.rows["instruction"])
        section.add(self._build_schedule(section))
        self.preview_label = WrappedLabel("", section)
        self.preview_label.setObjectName("rulePreview")
        self.preview_label.setTextFormat(Qt.TextFormat.PlainText)
        self.rows["preview"] = FieldRow(t("rules.editor.preview"), self.preview_label, parent=section)
        section.add(self.rows["preview"])
        # 执行 first: it is the default since 2026-11-01 (observe is opt-in, docs/runs.md#observe-and-act).
        self.mode_toggle = ModeToggle(("act", "observe"), section)
        self.mode_toggle.set_mode("act")
        self.mode_toggle.chosen.connect(lambda _mode: self._mode_hint())
        mode_line = QHBoxLayout()
        mode_line.addWidget(self.mode_toggle)
        mode_line.addStretch(1)
        self.rows["mode"] = FieldRow(t("rules.editor.mode"), mode_line, "", section)
        # The mode is chosen when a check is made; afterwards it is switched in the rule detail.
        if self._rule is None:
            section.add(self.rows["mode"])
        else:
            self.rows["mode"].hide()
        self._mode_hint()
        return section

    def _build_schedule(self, parent: QWidget) -> QWidget:
        # The schedule's rows as one block of the form: only the chosen kind's fields are shown, and
        # lines between them would mark the hidden ones' places.
        block = QWidget(parent)
        rows = QVBoxLayout(block)
        rows.setContentsMargins(0, 0, 0, 0)
        rows.setSpacing(0)
        self.kind_combo = Combo(block)
        for kind in KINDS:
            self.kind_combo.addItem(t(f"rules.kind.{kind}"), kind)
        self.kind_combo.currentIndexChanged.connect(lambda _index: self._kind_changed())
        kind_line = QHBoxLayout()
        kind_line.addWidget(self.kind_combo)
        kind_line.addStretch(1)
        self.rows["schedule"] = FieldRow(t("rules.editor.repeat"), kind_line, parent=block)

        self.time_input = line_input(block, "08:00")
        self.time_input.setMaximumWidth(90)
        self.workdays = Switch(t("rules.editor.workdays"), block)
        time_line = QHBoxLayout()
        time_line.setSpacing(14)
        time_line.addWidget(self.time_input)
        time_line.addWidget(self.workdays)
        time_line.addStretch(1)
        self.rows["schedule.time"] = FieldRow(t("rules.editor.time"), time_line, parent=block)

        self.day_buttons: list[QPushButton] = []
        day_line = QHBoxLayout()
        day_line.setSpacing(4)
        for day, name in enumerate(t("rules.weekdays_short").split("|")):
            made = QPushButton(name, block)
            made.setObjectName("ruleDayButton")
            made.setCheckable(True)
            made.setCursor(Qt.CursorShape.PointingHandCursor)
            made.setProperty("day", day)
            made.toggled.connect(lambda _on: self.update_preview())
            day_line.addWidget(made)
            self.day_buttons.append(made)
        day_line.addStretch(1)
        self.rows["schedule.days"] = FieldRow(t("rules.editor.days"), day_line, parent=block)

        self.minutes_input = line_input(block, "60")
        self.minutes_input.setValidator(QIntValidator(0, 999_999, self.minutes_input))
        self.minutes_input.setMaximumWidth(90)
        minutes_line = QHBoxLayout()
        minutes_line.addWidget(self.minutes_input)
        minutes_line.addWidget(QLabel(t("rules.editor.minutes_unit"), block))
        minutes_line.addStretch(1)
        self.rows["schedule.minutes"] = FieldRow(
            t("rules.editor.every"), minutes_line, t("rules.editor.minutes_hint"), block
        )

        self.at_input = line_input(block, "2026-12-01 15:00")
        self.at_input.setMaximumWidth(180)
        self.rows["schedule.at"] = FieldRow(t("rules.editor.at"), self.at_input, parent=block)

        self.cron_input = line_input(block, "0 8 * * 1-5")
        self.rows["schedule.cron"] = FieldRow(
            t("rules.editor.cron"), self.cron_input, t("rules.editor.cron_hint"), block
        )
        for key in ("schedule", *SCHEDULE_ROWS):
            rows.addWidget(self.rows[key])
        for field in (self.time_input, self.minutes_input, self.at_input, self.cron_input):
            field.textChanged.connect(lambda _text: self.update_preview())
        self.workdays.toggled.connect(lambda _on: self.update_preview())
        return block

    def _fill(self, rule: RuleView | None) -> None:
        """Start from the rule being edited, or from a calm default: every day at 08:00."""
        tomorrow = datetime.fromtimestamp(self._now() + 86400).strftime("%Y-%m-%d 09:00")
        self.time_input.setText("08:00")
        self.minutes_input.setText("60")
        self.at_input.setText(tomorrow)
        if rule is None:
            return
        self.title_input.setText(rule.title)
        self.words_input.setPlainText(rule.instruction)
        schedule = rule.schedule
        kind = str(schedule.get("kind", "daily"))
        days = [int(d) for d in schedule.get("days") or [] if isinstance(d, int)]
        if kind == "daily" and days and days != WEEKDAYS:
            kind = "weekly"  # a daily rule on some days reads as those days of the week
        if kind == "daily":
            self.workdays.setChecked(days == WEEKDAYS)
        for made in self.day_buttons:
            made.setChecked(made.property("day") in days)
        if schedule.get("time"):
            self.time_input.setText(str(schedule["time"]))
        if schedule.get("minutes"):
            self.minutes_input.setText(str(schedule["minutes"]))
        if schedule.get("at"):
            self.at_input.setText(str(schedule["at"]).replace("T", " "))
        self.cron_input.setText(str(schedule.get("cron", "")))
        self.kind_combo.setCurrentIndex(max(self.kind_combo.findData(kind), 0))

    def field_widget(self, row: str) -> QWidget | None:
        """The input a person fixes when `row` is refused: the cursor goes there on a refusal."""
        widgets: dict[str, QWidget] = {
            "title": self.title_input,
            "instruction": self.words_input,
            "schedule": self.kind_combo,
            "schedule.time": self.time_input,
            "schedule.days": self.day_buttons[0],
            "schedule.minutes": self.minutes_input,
            "schedule.at": self.at_input,
            "schedule.cron": self.cron_input,
            "mode": self.mode_toggle.buttons.get(self.mode_toggle.mode or "act", self.mode_toggle),
        }
        return widgets.get(row)

    def _clear_errors_on_edit(self) -> None:
        # An error is about the value that was refused: once that value changes it no longer applies.
        def clear(*rows: str) -> Callable[..., None]:
            def cleared(*_args: object) -> None:
                for row in rows:
                    self.rows[row].clear_error()

            return cleared

        self.title_input.textChanged.connect(clear("title"))
        self.words_input.textChanged.connect(clear("instruction"))
        self.kind_combo.currentIndexChanged.connect(clear("schedule"))
        self.time_input.textChanged.connect(clear("schedule.time", "schedule"))
        self.workdays.toggled.connect(clear("schedule.time", "schedule.days", "schedule"))
        for made in self.day_buttons:
            made.toggled.connect(clear("schedule.days", "schedule"))
        self.minutes_input.textChanged.connect(clear("schedule.minutes", "schedule"))
        self.at_input.textChanged.connect(clear("schedule.at", "schedule"))
        self.cron_input.textChanged.connect(clear("schedule.cron", "schedule"))
        self.mode_toggle.chosen.connect(clear("mode"))

    # -- the schedule ----------------------------------------------------------------------------------

    def kind(self) -> str:
        return str(self.kind_combo.currentData() or "daily")

    def set_kind(self, kind: str) -> None:
        self.kind_combo.setCurrentIndex(max(self.kind_combo.findData(kind), 0))

    def schedule(self) -> dict[str, object]:
        """The schedule as the facade takes it, from the chosen kind's fields only."""
        kind = self.kind()
        out: dict[str, object] = {"kind": kind}
        if self._rule is not None:
            out["tz"] = self._rule.tz  # an edited rule keeps its zone (docs/runs.md#schedules)
        if kind in ("daily", "weekly"):
            out["time"] = self.time_input.text().strip()
            if kind == "weekly":
                out["days"] = [d for d, made in enumerate(self.day_buttons) if made.isChecked()]
            elif self.workdays.isChecked():
                out["days"] = list(WEEKDAYS)
        elif kind == "every":
            text = self.minutes_input.text().strip()
            out["minutes"] = int(text) if text.isdigit() else None
        elif kind == "once":
            # Shown with a space for reading; stored with "T", so an unchanged time compares equal.
            out["at"] = self.at_input.text().strip().replace(" ", "T", 1)
        else:
            out["cron"] = self.cron_input.text().strip()
        return out

    def _kind_changed(self) -> None:
        shown = KIND_ROWS.get(self.kind(), ())
        for key in SCHEDULE_ROWS:
            self.rows[key].setVisible(key in shown)
            self.rows[key].clear_error()
        self.workdays.setVisible(self.kind() == "daily")
        self.update_preview()

    def update_preview(self) -> None:
        """Read the schedule back in words with its next times, or say quietly what is still missing."""
        try:
            result = self._rules.preview(self.schedule(), count=PREVIEW_COUNT, lang=language())
        except InvalidInputError as exc:
            self._set_preview(error_words(exc), ok=False)
            return
        words = str(result.get("words", ""))
        upcoming = result.get("next")
        times = [self._when(text) for text in upcoming] if isinstance(upcoming, list) else []
        times = [text for text in times if text]
        if times:
            joined = ("、" if language() == "zh" else ", ").join(times)
            self._set_preview(t("rules.editor.preview_value", words=words, times=joined), ok=True)
        else:
            self._set_preview(t("rules.editor.preview_none", words=words), ok=True)

    def _when(self, iso: object) -> str:
        try:
            moment = datetime.fromisoformat(str(iso))
        except ValueError:
            return ""
        # The ISO text names the wall time in the rule's zone: say that one, not the computer's.
        return wall_words(moment, datetime.fromtimestamp(self._now(), moment.tzinfo).date())

    def _set_preview(self, text: str, ok: bool) -> None:
        self.preview_label.setText(text)
        self.preview_label.setProperty("role", "" if ok else "faint")
        self.preview_label.style().unpolish(self.preview_label)
        self.preview_label.style().polish(self.preview_label)
        self.preview_ok = ok

    def preview_text(self) -> str:
        return self.preview_label.text()

    def _mode_hint(self) -> None:
        # What observe does and does not guarantee, said exactly (docs/runs.md#observe-and-act).
        key = "rules.editor.observe_hint" if self.mode_toggle.mode == "observe" else "rules.editor.act_hint"
        self.rows["mode"].set_hint(t(key))

    # -- saving ----------------------------------------------------------------------------------------

    def field_error(self, field: str) -> str:
        """What is shown under a field's row ('' when nothing): tests read this."""
        row = self.rows.get(error_row(field, self.kind()) or field)
        return row.error_text if row is not None else ""

    def submit(self) -> None:
        if not self.save_button.isEnabled():
            return
        for row in self.rows.values():
            row.clear_error()
        self.error.hide()
        self._set_busy(True)
        self._calls.start(self._save(), done=self._done, failed=self._failed)

    async def _save(self) -> RuleView:
        title = self.title_input.text()
        words = self.words_input.toPlainText()
        schedule = self.schedule()
        if self._rule is None:
            return await self._rules.create(
                bot_id=self._bot_id or None,
                title=title,
                instruction=words,
                schedule=schedule,
                mode=self.mode_toggle.mode or "act",
                lang=language(),
            )
        # An unchanged schedule is not sent: a new one counts the next run from now (RuleService.update).
        changed = schedule != self._rule.schedule
        return await self._rules.update(
            self._rule.id,
            title=title,
            instruction=words,
            schedule=schedule if changed else None,
            lang=language(),
        )

    def _done(self, view: RuleView) -> None:
        self._set_busy(False)
        self.saved.emit(view)
        self.accept()

    def _failed(self, exc: Exception) -> None:
        self._set_busy(False)
        if isinstance(exc, InvalidInputError):
            key = error_row(exc.field, self.kind())
            row = self.rows.get(key) if key else None
            if row is not None and row.isVisibleTo(self):
                row.show_error(error_words(exc))
                self._focus_field(key)
                # After the layout has taken the new line in: grow to fit it, so no scroll bar narrows
                # the inputs (it only appears when the screen has no more room).
                QTimer.singleShot(0, self._fit_height)
                return
        log.info("rule refused: %s", reason(exc))
        self.error.setText(t("rules.editor.failed", reason=reason(exc)))
        self.error.show()
        self.save_button.setFocus(Qt.FocusReason.OtherFocusReason)

    def _fit_height(self) -> None:
        page = self.form_page
        view = self.form_scroll.viewport()
        needed = page.heightForWidth(view.width()) if page.hasHeightForWidth() else page.sizeHint().height()
        extra = needed - view.height()
        if extra <= 0:
            return
        screen = self.screen()
        room = screen.availableGeometry().height() if screen is not None else self.height() + extra
        self.resize(self.width(), min(self.height() + extra, room))
        self._focus_field_visible()

    def _focus_field_visible(self) -> None:
        focused = QApplication.focusWidget()
        if focused is not None and self.form_page.isAncestorOf(focused):
            self.form_scroll.ensureWidgetVisible(focused)

    def _focus_field(self, row: str) -> None:
        """Put the cursor where the fix goes (not on 标题, where a disabled 保存 would hand it)."""
        widget = self.field_widget(row)
        if widget is None:
            return
        widget.setFocus(Qt.FocusReason.OtherFocusReason)
        self.form_scroll.ensureWidgetVisible(widget)

    def _set_busy(self, busy: bool) -> None:
        self.save_button.setEnabled(not busy)
        self.save_button.setText(t("rules.editor.saving") if busy else t("rules.editor.save"))

    def done(self, result: int) -> None:
        self._calls.cancel_all()
        super().done(result)

    def closeEvent(self, event: QCloseEvent) -> None:
        self._calls.cancel_all()
        super().closeEvent(event)

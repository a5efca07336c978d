"""The bot panel's rule rows (docs/desktop.md#bot-panel: the panel's 规则 group, under 任务): one compact row
per rule:

    ○ 每天 08:00 · 看 X 价格                          ›     grey: the person chose observe (or off)
      观察中,明天 08:00 再运行
    ● 每周一 09:00 · issue 周报                       ›     green: it acts
      执行中 · 下次 周一 09:00
    ● 每天 07:30 · 晨报                               ›     red: paused, with why
      已暂停:连续失败 3 次
    ● 每天 08:00 · 看 Y 库存                          ›     this month's cost under the state, once
      执行中 · 下次 明天 08:00                                something was spent (docs/cost.md#rule-budgets)
      本月 约 $0.40 / $3.00
    ○ 每天 08:00 · 看 Z                               ›     grey while the bot is paused: nothing runs
      机器人已暂停,恢复后再运行

The panel is only 340 px wide, so the state goes under the title instead of beside it. `PanelRules` reads
one bot's rules through the RuleFacade while the panel is shown and says `changed` when they differ; the
panel then lays its 任务 group out again with these rows in it. The words for times and states live here
too, because the rule detail says the same things.
"""

from __future__ import annotations

import logging
from datetime import date, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QWidget

from core.rules.facade import RuleFacade
from core.rules.views import RuleView
from ui import theme
from ui.bot_scoped_list import BotScopedList
from ui.cost_words import rule_month
from ui.elided_text import ElidedText
from ui.i18n import language, t
from ui.status_dot import StatusDot
from ui.task_chip import PressableRow
from ui.theme import DotState

log = logging.getLogger(__name__)

ARROW = "›"
# docs/runs.md#failures-pause-a-rule: a rule pauses after this many failures in a row.
FAILURES_TO_PAUSE = 3


def _zone(tz: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(tz) if tz else None
    except (ZoneInfoNotFoundError, ValueError):
        return None  # the system's zone: better a time a little off than no time


def moment_words(ts: float, tz: str, now: float) -> str:
    """A time as a person says it, in the rule's zone: 今天 08:00, 明天 08:00, 周一 09:00, 10/27 08:00."""
    zone = _zone(tz)
    return wall_words(datetime.fromtimestamp(ts, zone), datetime.fromtimestamp(now, zone).date())


def local_moment_words(ts: float, tz: str, now: float) -> str:
    """The same moment on this computer's clock, when its zone differs from the rule's there and then
    (「明天 08:00（Asia/Shanghai）」 means little to someone in Berlin); '' when the two clocks agree."""
    zone = _zone(tz)
    there = datetime.fromtimestamp(ts, zone)
    here = datetime.fromtimestamp(ts).astimezone()
    if zone is None or there.utcoffset() == here.utcoffset():
        return ""
    return wall_words(here, datetime.fromtimestamp(now).astimezone().date())


def wall_words(moment: datetime, today: date) -> str:
    """The same for a wall time already in its zone (a preview's ISO time carries the rule's offset)."""
    clock = moment.strftime("%H:%M")
    days = (moment.date() - today).days
    named = {0: "rules.when.today", 1: "rules.when.tomorrow", -1: "rules.when.yesterday"}
    if days in named:
        return t(named[days], clock=clock)
    if days == -2:
        return t("rules.when.day_before", clock=clock)
    if 2 <= days <= 6:
        # Within the coming week the weekday is clearer than a date.
        weekday = t("rules.weekdays").split("|")[moment.weekday()]
        return t("rules.when.weekday", weekday=weekday, clock=clock)
    return t("rules.when.date", month=moment.month, day=moment.day, clock=clock)


def short_words(rule: RuleView) -> str:
    """The schedule in words without its zone: the row has no room for it, the detail shows it."""
    words = rule.schedule_words
    for suffix in (f"（{rule.tz}）", f" ({rule.tz})", f"({rule.tz})"):
        if words.endswith(suffix):
            return words[: -len(suffix)].rstrip()
    return words


def rule_heading(rule: RuleView) -> str:
    """「每天 08:00 · 看 X 价格」: the schedule first, as the design's rows and detail put it."""
    words = short_words(rule)
    return f"{words} · {rule.title}" if words else rule.title


def mode_word(mode: str) -> str:
    return t(f"rules.mode.{mode}") if mode in ("observe", "act", "off") else mode


def paused_words(rule: RuleView) -> str:
    if rule.paused_reason == "failures":
        return t("rules.paused.failures", n=FAILURES_TO_PAUSE)
    if rule.paused_reason == "budget":
        return t("cost.rule_paused_budget")
    return t("rules.paused.other")


def row_cost(rule: RuleView) -> str:
    """The row's 「本月 约 $0.40 / $3.00」: only once something was spent this month, or when the budget
    paused it (healthy and free takes no space)."""
    if rule.month_cost_usd > 0 or rule.paused_reason == "budget":
        return rule_month(rule)
    return ""


def rule_state(rule: RuleView, now: float, bot_paused: bool = False) -> tuple[DotState, str]:
    """The dot and the words for a rule's state: red when paused (and why), grey for observe and off, green
    when it acts (docs/desktop.md#bot-panel). While its bot is paused nothing runs, so no rule looks busy."""
    if rule.paused_reason:
        return "failed", paused_words(rule)
    if rule.mode == "off":
        return "idle", t("rules.state.off")
    if bot_paused:
        return "idle", t("rules.state.bot_paused")
    dot: DotState = "working" if rule.mode == "act" else "idle"
    if not rule.next_run_at:
        # A `once` that has fired: nothing more is coming.
        return "idle", t("rules.state.done", mode=mode_word(rule.mode))
    when = moment_words(rule.next_run_at, rule.tz, now)
    if rule.mode == "observe":
        return dot, t("rules.state.observing", when=when)
    return dot, t("rules.state.acting", when=when)


class PanelRuleRow(PressableRow):
    """One rule in the panel: ● heading ›, the state under it (red when paused)."""

    opened = Signal(str)

    def __init__(
        self, rule: RuleView, now: float, parent: QWidget | None = None, bot_paused: bool = False
    ) -> None:
        super().__init__(parent)
        # The task rows' name, so the panel's row styles (hover, focus) apply unchanged.
        self.setObjectName("panelTaskRow")
        self.rule = rule
        state, words = rule_state(rule, now, bot_paused)
        self.dot = StatusDot(state, 7, self)
        self.title = ElidedText(rule_heading(rule), 1, self)
        self.title.setObjectName("panelRuleTitle")
        self.state_label = QLabel(words, self)
        self.state_label.setObjectName("panelRuleState")
        self.state_label.setProperty("role", "danger" if rule.paused_reason else "muted")
        self.state_label.setFont(theme.font("small"))
        cost = row_cost(rule)
        self.cost_label = QLabel(cost, self)
        self.cost_label.setObjectName("panelRuleCost")
        self.cost_label.setProperty("role", "faint")
        self.cost_label.setFont(theme.font("small"))
        self.cost_label.setVisible(bool(cost))
        self.arrow = QLabel(ARROW, self)
        self.arrow.setProperty("role", "muted")
        self.arrow.setFont(theme.font("small"))
        for child in (self.dot, self.title, self.state_label, self.cost_label, self.arrow):
            child.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        # A grid, so the dot sits on the title's line and the state lines up under the title.
        grid = QGridLayout(self)
        grid.setContentsMargins(12, 8, 12, 8)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(1)
        grid.addWidget(self.dot, 0, 0, Qt.AlignmentFlag.AlignVCenter)
        grid.addWidget(self.title, 0, 1)
        grid.addWidget(self.state_label, 1, 1)
        grid.addWidget(self.cost_label, 2, 1)
        grid.addWidget(self.arrow, 0, 2, 3 if cost else 2, 1, Qt.AlignmentFlag.AlignVCenter)
        grid.setColumnStretch(1, 1)
        self.setText(rule_heading(rule))
        self.setAccessibleName(" · ".join(part for part in (rule_heading(rule), words, cost) if part))
        self._tint()
        self.clicked.connect(lambda: self.opened.emit(self.rule.id))

    @property
    def state_text(self) -> str:
        return self.state_label.text()

    @property
    def cost_text(self) -> str:
        return self.cost_label.text() if not self.cost_label.isHidden() else ""

    def _tint(self) -> None:
        self.title.set_color(theme.colors().text)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:
            self._tint()
        super().changeEvent(event)


class PanelRules(BotScopedList[RuleView]):
    """One bot's rules for the panel, read while it is shown."""

    def __init__(self, rules: RuleFacade, parent: QObject | None = None) -> None:
        super().__init__(
            lambda bot_id: rules.list_rules(bot_id=bot_id, lang=language()), "rules.load_failed", parent
        )

    def rows(self, parent: QWidget, now: float, bot_paused: bool = False) -> list[PanelRuleRow]:
        # Newest first, as the service lists them: a rule just made is easy to find.
        return [PanelRuleRow(rule, now, parent, bot_paused) for rule in self.views]

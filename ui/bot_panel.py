"""The bot's info panel, beside the chat (docs/desktop.md#bot-panel): everything about "this
bot", each group only when it has something:

    (天) 天天                      the avatar with its state ring, the name, the activity line
         GPU 价格调研等你回答
    渠道      ● 桌面          已连接
              ● 微信 · wxid_a1 已连接      each of the bot's channels (ui.channel_rows), then
              + 连接微信  + 连接飞书        side by side under the group, flowing onto the next line
              + 连接钉钉  + 连接 Telegram   when the panel is too narrow
    待审批    this bot's approvals, [批准一次] [拒绝] inline (the needs-you row)
    任务      working tasks, then those that need you; then rules; then 「已结束 3 ▸」, which unfolds
              the ended tasks of the last 30 days
    记忆 · 12 条 ›   the bot's notebook (`ui.memory_ledger`)

A task row opens in place into the task detail (`ui.task_detail.TaskDetailBody`, the class the main pane
shows too), with ‹ back to the groups; a rule row opens the rule detail (`ui.rule_detail`) the same way,
and the 记忆 row the memory ledger. The panel reads this bot's tasks through the TaskFacade, its rules
through the RuleFacade, its channels through the ChannelFacade and its memory through the MemoryFacade,
while it is shown; the window hands it the needs-you items it already reads, so approvals cost no second
read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from core.attention.facade import AttentionFacade
from core.attention.items import AttentionItem
from core.bots.views import BotActivity, BotView
from core.channels.facade import ChannelFacade
from core.rules.facade import RuleFacade
from core.tasks.facade import TaskFacade
from core.tasks.views import TaskView
from ui import theme
from ui.answer_bar import reason
from ui.attention_row import AttentionRow
from ui.bot_list import bot_avatar
from ui.channel_rows import BotChannels, PanelChannelRow
from ui.elided_text import ElidedText
from ui.escape_key import WINDOW, bind_escape
from ui.i18n import language, t
from ui.link_flow import LinkFlow
from ui.memory_ledger import MemoryLedger, MemoryPanelRow
from ui.reloader import Reloader
from ui.row_actions import RowActions
from ui.rule_detail import RuleDetailBody
from ui.rule_editor import RuleEditor
from ui.rule_rows import PanelRuleRow, PanelRules
from ui.status_dot import StatusDot
from ui.task_chip import PressableRow, dot_state
from ui.task_detail import TaskDetailBody
from ui.task_list import ARROW, ENDED_WINDOW_S, section_label

if TYPE_CHECKING:
    from core.memory.facade import MemoryFacade
    from core.memory.views import MemoryView

log = logging.getLogger(__name__)

PANEL_WIDTH = 340
AVATAR = 40
FOLDED = "▸"
UNFOLDED = "▾"


def open_tasks(tasks: list[TaskView]) -> list[TaskView]:
    """Working tasks first, then those that need you; the most recently changed first within each."""
    order = {"working": 0, "needs": 1}
    return sorted(
        (task for task in tasks if task.group in order), key=lambda v: (order[v.group], -v.updated_at)
    )


def ended_tasks(tasks: list[TaskView], now: float) -> list[TaskView]:
    since = now - ENDED_WINDOW_S
    return sorted(
        (task for task in tasks if task.group == "ended" and task.updated_at >= since),
        key=lambda v: -v.updated_at,
    )


def separator(parent: QWidget) -> QFrame:
    line = QFrame(parent)
    line.setObjectName("taskRowLine")
    line.setFixedHeight(1)
    return line


class PanelTaskRow(PressableRow):
    """One compact line: ● title ··· stage ›."""

    opened = Signal(str)

    def __init__(self, task: TaskView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("panelTaskRow")
        self.task = task
        self.dot = StatusDot(dot_state(task.group, task.stage), 7, self)
        self.title = ElidedText(task.title, 1, self)
        self.title.setObjectName("panelTaskTitle")
        self.meta = QLabel(f"{task.stage_label}  {ARROW}", self)
        self.meta.setObjectName("panelTaskMeta")
        self.meta.setProperty("role", "muted")
        self.meta.setFont(theme.font("small"))
        for child in (self.dot, self.title, self.meta):
            child.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 9, 12, 9)
        row.setSpacing(8)
        row.addWidget(self.dot, 0, Qt.AlignmentFlag.AlignVCenter)
        row.addWidget(self.title, 1)
        row.addWidget(self.meta, 0, Qt.AlignmentFlag.AlignVCenter)
        self.setText(task.title)
        self.setAccessibleName(f"{task.title} · {task.stage_label}")
        self._tint()
        self.clicked.connect(lambda: self.opened.emit(self.task.id))

    def _tint(self) -> None:
        self.title.set_color(theme.colors().text)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:
            self._tint()
        super().changeEvent(event)


class EndedToggle(PressableRow):
    """「已结束 3 ▸」: quiet, folded by default."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("panelEndedToggle")
        self.setCheckable(True)
        self.label = QLabel(self)
        self.label.setObjectName("panelEndedLabel")
        self.label.setProperty("role", "muted")
        self.label.setFont(theme.font("small"))
        self.label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents, True)
        row = QHBoxLayout(self)
        row.setContentsMargins(12, 8, 12, 8)
        row.addWidget(self.label, 1)
        self._count = 0
        self.toggled.connect(lambda _on: self._refresh())

    def set_count(self, count: int) -> None:
        self._count = count
        self._refresh()

    def _refresh(self) -> None:
        text = t("panel.ended", n=self._count)
        arrow = UNFOLDED if self.isChecked() else FOLDED
        self.label.setText(f"{text} {arrow}")
        self.setText(text)


class BotPanel(QWidget):
    """`conversationOpened(id)`: a task's 来自 was clicked. `attentionChanged`: an approval was acted on,
    so the needs-you list should be read again."""

    conversationOpened = Signal(str)
    attentionChanged = Signal()
    closeRequested = Signal()
    # The person pressed 继续 on 「后台工作已暂停」 (bot id): background work may start again.
    resumeRequested = Signal(str)
    # 连接微信 (channel id ''), 重新扫码 (again) or 查看二维码 in 渠道: (bot id, channel id, again). The
    # window opens the login dialog.
    channelLoginRequested = Signal(str, str, bool)
    # 连接飞书 in 渠道 (bot id): the window opens the Feishu connect dialog.
    feishuConnectRequested = Signal(str)
    # 连接钉钉 in 渠道 (bot id): the window opens the DingTalk connect dialog.
    dingtalkConnectRequested = Signal(str)
    # 连接 Telegram in 渠道 (bot id): the window opens the Telegram connect dialog.
    telegramConnectRequested = Signal(str)

    def __init__(
        self,
        tasks: TaskFacade | None,
        attention: AttentionFacade | None,
        parent: QWidget | None = None,
        now: Callable[[], float] = time.time,
        rules: RuleFacade | None = None,
        channels: ChannelFacade | None = None,
        memory: MemoryFacade | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("botPanel")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self._tasks = tasks
        self._attention = attention
        self._now = now
        self._bot: BotView | None = None
        self._activity: BotActivity | None = None
        self._items: list[AttentionItem] = []
        self._task_views: list[TaskView] | None = None
        self._active = False
        self._actions: RowActions | None = None
        if attention is not None:
            self._actions = RowActions(attention, self._approval_row, self.attentionChanged.emit)
        self._reader: Reloader[tuple[str, list[TaskView]]] | None = (
            Reloader(self._load, self._apply, self._failed) if tasks is not None else None
        )
        self.task_rows: list[PanelTaskRow] = []
        self.ended_rows: list[PanelTaskRow] = []
        self._ended_lines: list[QFrame] = []
        self.approval_rows: list[AttentionRow] = []
        # Rules sit in the 任务 group after the open tasks; they are read on their own, as they change apart.
        self._rule_facade = rules
        self._rules: PanelRules | None = None
        self.rule_rows: list[PanelRuleRow] = []
        self.rule_editor: RuleEditor | None = None
        if rules is not None:
            self._rules = PanelRules(rules, self)
            self._rules.changed.connect(self._rules_changed)
            self._rules.failed.connect(self._failed_text)
        # Channels sit in 渠道 after the desktop's row; read on their own, as a login moves apart from tasks.
        self._channel_reader: BotChannels | None = None
        self._channel_widgets: list[QWidget] = []
        if channels is not None:
            self._channel_reader = BotChannels(channels, self)
            self._channel_reader.changed.connect(self._show_channels)
            self._channel_reader.failed.connect(self._failed_text)

        self.stack = QStackedWidget(self)
        self._build_pages(tasks, rules, memory)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.stack)
        # A drawer: Escape closes it from anywhere in the window, unless the focused field uses Escape itself
        # (the search box clears its text first).
        bind_escape(self, self._escape, WINDOW)

    # -- building --------------------------------------------------------------------------------------

    def _build_pages(
        self, tasks: TaskFacade | None, rules: RuleFacade | None, memory: MemoryFacade | None
    ) -> None:
        """The overview, then a page for each facade there is: what a row opens in place."""
        self.overview = self._scrolling(self._build_overview())
        self.stack.addWidget(self.overview)
        self.detail: TaskDetailBody | None = None
        if tasks is not None:
            self.stack.addWidget(self._scrolling(self._build_detail(tasks)))
        self.rule_detail: RuleDetailBody | None = None
        self._rule_page: QWidget | None = None
        if rules is not None:
            self._rule_page = self._scrolling(self._build_rule_detail(rules))
            self.stack.addWidget(self._rule_page)
        self.memory_ledger: MemoryLedger | None = None
        self._memory_page: QWidget | None = None
        if memory is not None:
            self._memory_page = self._scrolling(self._build_memory_page(memory))
            self.stack.addWidget(self._memory_page)

    def _scrolling(self, column: QWidget) -> QScrollArea:
        scroll = QScrollArea(self)
        scroll.setObjectName("panelScroll")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(column)
        return scroll

    def _column(self, name: str) -> tuple[QWidget, QVBoxLayout]:
        column = QWidget()
        column.setObjectName(name)
        column.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        layout = QVBoxLayout(column)
        layout.setContentsMargins(16, 16, 16, 20)
        layout.setSpacing(6)
        return column, layout

    def _build_overview(self) -> QWidget:
        column, layout = self._column("panelColumn")
        head = QHBoxLayout()
        head.setSpacing(10)
        self.avatar = QLabel(column)
        self.avatar.setObjectName("panelAvatar")
        self.avatar.setFixedSize(AVATAR, AVATAR)
        self.name_label = QLabel(column)
        self.name_label.setObjectName("panelName")
        self.name_label.setFont(theme.font("title"))
        self.line_label = QLabel(column)
        self.line_label.setObjectName("panelLine")
        self.line_label.setProperty("role", "muted")
        self.line_label.setFont(theme.font("small"))
        self.line_label.setWordWrap(True)
        names = QVBoxLayout()
        names.setSpacing(1)
        names.addWidget(self.name_label)
        names.addWidget(self.line_label)
        head.addWidget(self.avatar, 0, Qt.AlignmentFlag.AlignTop)
        head.addLayout(names, 1)
        layout.addLayout(head)
        layout.addSpacing(10)
        layout.addWidget(self._build_paused_row(column))
        layout.addWidget(self._build_channels(column))

        self.approvals_group, self._approvals_well, self._approvals_layout = self._group(
            column, t("panel.approvals"), "panelApprovals"
        )
        self.approvals_group.hide()
        layout.addWidget(self.approvals_group)

        self.tasks_group, self._tasks_well, self._tasks_layout = self._group(
            column, t("panel.tasks"), "panelTasks"
        )
        self.tasks_group.hide()
        layout.addWidget(self.tasks_group)
        # Rules are standing instructions, not work under way: their own group, so neither reads as the other.
        self.rules_group, self._rules_well, self._rules_layout = self._group(
            column, t("panel.rules"), "panelRules"
        )
        self.rules_group.hide()
        layout.addWidget(self.rules_group)
        # Rules are made in chat too; this is the way to make one by hand (the rule editor).
        self.new_rule_button = QPushButton(t("rules.new"), column)
        self.new_rule_button.setObjectName("panelNewRule")
        self.new_rule_button.setFlat(True)
        self.new_rule_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.new_rule_button.setFont(theme.font("small"))
        self.new_rule_button.clicked.connect(lambda _checked=False: self.new_rule())
        self.new_rule_button.setVisible(self._rule_facade is not None)
        layout.addWidget(self.new_rule_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self._build_memory_row(column))
        self.notice = QLabel(column)
        self.notice.setObjectName("panelNotice")
        self.notice.setProperty("role", "danger")
        self.notice.setFont(theme.font("small"))
        self.notice.setWordWrap(True)
        self.notice.hide()
        layout.addWidget(self.notice)
        layout.addStretch(1)
        return column

    def _build_memory_row(self, column: QWidget) -> QWidget:
        # One row, no caption (the row says 记忆 itself): shown once the notebook was read, even when empty,
        # since the ledger is where the person adds a note of their own.
        self.memory_group = QWidget(column)
        self.memory_group.setObjectName("panelMemory")
        group = QVBoxLayout(self.memory_group)
        group.setContentsMargins(0, 8, 0, 4)
        well = QFrame(self.memory_group)
        well.setObjectName("taskWell")
        rows = QVBoxLayout(well)
        rows.setContentsMargins(0, 0, 0, 0)
        self.memory_row = MemoryPanelRow(well)
        self.memory_row.clicked.connect(lambda _checked=False: self.open_memory())
        rows.addWidget(self.memory_row)
        group.addWidget(well)
        self.memory_group.hide()
        return self.memory_group

    def _build_paused_row(self, column: QWidget) -> QWidget:
        # Shown only while the bot's background work is paused (docs/domain.md#bots): calm, with the way back.
        self.paused_row = QWidget(column)
        self.paused_row.setObjectName("panelPausedRow")
        paused = QHBoxLayout(self.paused_row)
        paused.setContentsMargins(12, 8, 12, 8)
        paused.setSpacing(8)
        paused.addWidget(StatusDot("idle", 7, self.paused_row), 0, Qt.AlignmentFlag.AlignVCenter)
        paused.addWidget(QLabel(t("panel.paused"), self.paused_row), 1)
        self.resume_button = QPushButton(t("panel.resume"), self.paused_row)
        self.resume_button.setObjectName("panelResume")
        self.resume_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.resume_button.clicked.connect(self._resume)
        paused.addWidget(self.resume_button)
        self.paused_row.hide()
        return self.paused_row

    def _build_channels(self, column: QWidget) -> QWidget:
        # 渠道: the desktop, always there, then each of the bot's channels (read through the ChannelFacade).
        self.channels_group, self._channels_well, self._channels_layout = self._group(
            column, t("panel.channels"), "panelChannels"
        )
        self.desktop_row = PanelChannelRow(None, self._channels_well)
        self._channels_layout.addWidget(self.desktop_row)
        self.channel_rows: list[PanelChannelRow] = []
        # 「+ 连接微信  + 连接飞书  + 连接钉钉  + 连接 Telegram」: quiet links under the well, side by side
        # (flowing onto the next line in a panel too narrow for all); only with a ChannelFacade.
        self.connect_row = QWidget(self.channels_group)
        self.connect_row.setObjectName("panelConnectRow")
        self.connect_wechat_button = self._connect_link(t("panel.connect_wechat"), self.connect_wechat)
        self.connect_feishu_button = self._connect_link(t("panel.connect_feishu"), self.connect_feishu)
        self.connect_dingtalk_button = self._connect_link(t("panel.connect_dingtalk"), self.connect_dingtalk)
        self.connect_telegram_button = self._connect_link(t("panel.connect_telegram"), self.connect_telegram)
        links = LinkFlow(self.connect_row, spacing=6, line_spacing=2)
        links.addWidget(self.connect_wechat_button)
        links.addWidget(self.connect_feishu_button)
        links.addWidget(self.connect_dingtalk_button)
        links.addWidget(self.connect_telegram_button)
        self.connect_row.setVisible(self._channel_reader is not None)
        group_layout = self.channels_group.layout()
        if group_layout is not None:
            group_layout.addWidget(self.connect_row)
        return self.channels_group

    def _connect_link(self, text: str, act: Callable[[], None]) -> QPushButton:
        link = QPushButton(text, self.connect_row)
        link.setObjectName("panelConnectChannel")  # the quiet link's look (resources/styles/*.channels.qss)
        link.setFlat(True)
        link.setCursor(Qt.CursorShape.PointingHandCursor)
        link.setFont(theme.font("small"))
        link.clicked.connect(lambda _checked=False: act())
        return link

    def _show_channels(self) -> None:
        for widget in self._channel_widgets:
            self._channels_layout.removeWidget(widget)
            widget.hide()
            widget.deleteLater()
        self._channel_widgets = []
        self.channel_rows = []
        views = self._channel_reader.views if self._channel_reader is not None else []
        for view in views:
            line = separator(self._channels_well)
            row = PanelChannelRow(view, self._channels_well)
            row.loginRequested.connect(self._login_requested)
            self._channels_layout.addWidget(line)
            self._channels_layout.addWidget(row)
            self._channel_widgets.extend((line, row))
            self.channel_rows.append(row)

    def channel_lines(self) -> list[str]:
        """The 渠道 group as shown, top to bottom: 「name · status」 per row (tests read this)."""
        rows = [self.desktop_row, *self.channel_rows]
        return [f"{row.title.text()} · {row.status_text}" for row in rows]

    def connect_wechat(self) -> None:
        """连接微信: ask the window for the login dialog on a new channel of this bot."""
        if self.bot_id is not None and self._channel_reader is not None:
            self.channelLoginRequested.emit(self.bot_id, "", True)

    def connect_feishu(self) -> None:
        """连接飞书: ask the window for the Feishu connect dialog on this bot."""
        if self.bot_id is not None and self._channel_reader is not None:
            self.feishuConnectRequested.emit(self.bot_id)

    def connect_dingtalk(self) -> None:
        """连接钉钉: ask the window for the DingTalk connect dialog on this bot."""
        if self.bot_id is not None and self._channel_reader is not None:
            self.dingtalkConnectRequested.emit(self.bot_id)

    def connect_telegram(self) -> None:
        """连接 Telegram: ask the window for the Telegram connect dialog on this bot."""
        if self.bot_id is not None and self._channel_reader is not None:
            self.telegramConnectRequested.emit(self.bot_id)

    def _login_requested(self, channel_id: str, again: bool) -> None:
        if self.bot_id is not None:
            self.channelLoginRequested.emit(self.bot_id, channel_id, again)

    def _group(self, parent: QWidget, title: str, name: str) -> tuple[QWidget, QFrame, QVBoxLayout]:
        """A small label over one well; the rows go into the returned layout."""
        group = QWidget(parent)
        group.setObjectName(name)
        column = QVBoxLayout(group)
        column.setContentsMargins(0, 8, 0, 4)
        column.setSpacing(6)
        label = section_label(title, group)
        label.setContentsMargins(4, 0, 0, 0)
        column.addWidget(label)
        well = QFrame(group)
        well.setObjectName("taskWell")
        rows = QVBoxLayout(well)
        rows.setContentsMargins(0, 0, 0, 0)
        rows.setSpacing(0)
        column.addWidget(well)
        return group, well, rows

    def _build_detail(self, tasks: TaskFacade) -> QWidget:
        column, layout = self._column("panelDetailColumn")
        self.back_button = QPushButton(column)
        self.back_button.setObjectName("backButton")
        self.back_button.setFlat(True)
        self.back_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.back_button.setFont(theme.font("small"))
        self.back_button.clicked.connect(lambda _checked=False: self.show_overview())
        layout.addWidget(self.back_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addSpacing(4)
        self.detail = TaskDetailBody(tasks, column, titled=True, now=self._now)
        self.detail.conversationOpened.connect(self.conversationOpened)
        self.detail.deleted.connect(lambda _task_id: self.show_overview())
        layout.addWidget(self.detail)
        layout.addStretch(1)
        return column

    def _build_rule_detail(self, rules: RuleFacade) -> QWidget:
        column, layout = self._column("panelDetailColumn")
        self.rule_back_button = QPushButton(column)
        self.rule_back_button.setObjectName("backButton")
        self.rule_back_button.setFlat(True)
        self.rule_back_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.rule_back_button.setFont(theme.font("small"))
        self.rule_back_button.clicked.connect(lambda _checked=False: self.show_overview())
        layout.addWidget(self.rule_back_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addSpacing(4)
        self.rule_detail = RuleDetailBody(rules, column, now=self._now)
        self.rule_detail.deleted.connect(lambda _rule_id: self.show_overview())
        layout.addWidget(self.rule_detail)
        layout.addStretch(1)
        return column

    def _build_memory_page(self, memory: MemoryFacade) -> QWidget:
        column, layout = self._column("panelDetailColumn")
        self.memory_back_button = QPushButton(column)
        self.memory_back_button.setObjectName("backButton")
        self.memory_back_button.setFlat(True)
        self.memory_back_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.memory_back_button.setFont(theme.font("small"))
        self.memory_back_button.clicked.connect(lambda _checked=False: self.show_overview())
        layout.addWidget(self.memory_back_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addSpacing(4)
        self.memory_ledger = MemoryLedger(memory, column, now=self._now)
        self.memory_ledger.viewShown.connect(self._show_memory_row)
        layout.addWidget(self.memory_ledger)
        layout.addStretch(1)
        return column

    # -- what the window drives ------------------------------------------------------------------------

    @property
    def bot_id(self) -> str | None:
        return self._bot.id if self._bot else None

    def set_bot(self, bot: BotView | None, activity: BotActivity | None = None) -> None:
        """Show this bot (its tasks are read again when it is another bot)."""
        changed = (bot.id if bot else None) != self.bot_id
        # Pausing the bot changes what every rule row says (nothing runs while it is paused).
        flipped = not changed and bot is not None and self._bot is not None and bot.paused != self._bot.paused
        self._bot = bot
        self._activity = activity
        self._show_head()
        if flipped and (self._task_views is not None or self.rule_rows):
            self._show_tasks(self._task_views or [])
        if self.memory_ledger is not None:
            self.memory_ledger.set_bot(self.bot_id, bot.name if bot else "")
        if changed:
            self.show_overview()
            self._task_views = None
            self._clear_tasks()
            self.tasks_group.hide()
            self.rules_group.hide()
            self.memory_group.hide()
            if self._reader is not None:
                self._reader.reset()
            if self._rules is not None:
                self._rules.set_bot(self.bot_id)
            if self._channel_reader is not None:
                self._channel_reader.set_bot(self.bot_id)
            self._show_approvals()
            if self._active:
                self.reload()

    def set_activity(self, activity: BotActivity | None) -> None:
        self._activity = activity
        self._show_head()

    def set_attention_items(self, items: list[AttentionItem]) -> None:
        if items != self._items:
            self._items = list(items)
            self._show_approvals()

    def open(self) -> None:
        """Shown: read now, and again whenever a task changes until closed."""
        self._active = True
        self.reload()
        if self.detail is not None and self.stack.currentIndex() == 1 and self.detail.task_id:
            self.detail.show_task(self.detail.task_id)
        if self.rule_detail is not None and self._showing_rule() and self.rule_detail.rule_id:
            self.rule_detail.show_rule(self.rule_detail.rule_id)

    def close_panel(self) -> None:
        self._active = False
        if self._reader is not None:
            self._reader.reset()
        if self._rules is not None:
            self._rules.reset()
        if self._channel_reader is not None:
            self._channel_reader.reset()
        if self.detail is not None:
            self.detail.close_view()
        if self.rule_detail is not None:
            self.rule_detail.close_view()
        if self.memory_ledger is not None:
            self.memory_ledger.reset()

    def reload(self) -> Any:
        """Re-read this bot's tasks and rules; the future resolves once they are shown (None without)."""
        if self._bot is None:
            return None
        waits = [self._reader.request()] if self._reader is not None else []
        if self._rules is not None:
            self._rules.set_bot(self._bot.id)
            rules_read = self._rules.request()
            if rules_read is not None:
                waits.append(rules_read)
        if self._channel_reader is not None:
            self._channel_reader.set_bot(self._bot.id)
            channels_read = self._channel_reader.request()
            if channels_read is not None:
                waits.append(channels_read)
        if self.memory_ledger is not None:
            memory_read = self.memory_ledger.request()
            if memory_read is not None:
                waits.append(memory_read)
        return asyncio.gather(*waits) if waits else None

    def on_memory_changed(self, bot_id: str) -> None:
        """A note of a bot was kept, changed or deleted: the 记忆 row follows, and so does the open ledger."""
        if self._active and self.memory_ledger is not None:
            self.memory_ledger.on_memory_changed(bot_id)

    def on_channel_changed(self, _channel_id: str) -> None:
        """A channel was added, removed or moved on: 渠道 is read again (the bot's channels are few)."""
        if self._active and self._channel_reader is not None and self._bot is not None:
            self._channel_reader.request()

    def on_rule_changed(self, rule_id: str) -> None:
        """A rule was made, changed or deleted: the rows follow, and so does the open rule."""
        if not self._active:
            return
        if self._rules is not None and self._bot is not None:
            self._rules.request()
        if self.rule_detail is not None:
            self.rule_detail.on_rule_changed(rule_id)

    def on_task_changed(self, task_id: str) -> None:
        if not self._active:
            return
        if self._reader is not None and self._bot is not None:
            self._reader.request()
        if self.detail is not None:
            self.detail.on_task_changed(task_id)

    def on_run_step(self, task_id: str) -> None:
        """A run of `task_id` added a step: only the open detail cares (its unfolded steps grow)."""
        if self._active and self.detail is not None:
            self.detail.on_task_changed(task_id)

    def open_task(self, task_id: str) -> None:
        """Open a task in place, with ‹ back to the groups."""
        if self.detail is None:
            return
        self.back_button.setText(f"‹ {self._bot.name if self._bot else t('panel.back')}")
        self.detail.show_task(task_id)
        self.stack.setCurrentIndex(1)

    def open_rule(self, rule_id: str) -> Any:
        """Open a rule in place, with ‹ back to the groups; the future resolves once it is shown."""
        if self.rule_detail is None or self._rule_page is None:
            return None
        self.rule_back_button.setText(f"‹ {self._bot.name if self._bot else t('panel.back')}")
        shown = self.rule_detail.show_rule(rule_id)
        self.stack.setCurrentWidget(self._rule_page)
        return shown

    def open_memory(self) -> Any:
        """Open the bot's memory ledger in place, with ‹ back to the groups; the future resolves once the
        notebook is shown."""
        if self.memory_ledger is None or self._memory_page is None:
            return None
        self.memory_back_button.setText(f"‹ {self._bot.name if self._bot else t('panel.back')}")
        self.stack.setCurrentWidget(self._memory_page)
        return self.memory_ledger.request()

    def showing_memory(self) -> bool:
        return self._memory_page is not None and self.stack.currentWidget() is self._memory_page

    def new_rule(self) -> RuleEditor | None:
        """Open the rule editor for a new rule of this bot (non-modal to the loop: it never waits)."""
        if self._rule_facade is None:
            return None
        if self.rule_editor is not None:
            self.rule_editor.raise_()
            return self.rule_editor
        editor = RuleEditor(self._rule_facade, bot_id=self.bot_id or "", parent=self.window(), now=self._now)
        editor.finished.connect(lambda _result: self._editor_closed(editor))
        self.rule_editor = editor
        editor.open()
        return editor

    def _editor_closed(self, editor: RuleEditor) -> None:
        if self.rule_editor is editor:
            self.rule_editor = None
        editor.deleteLater()

    def show_overview(self) -> None:
        if self.detail is not None:
            self.detail.close_view()
        if self.rule_detail is not None:
            self.rule_detail.close_view()
        self.stack.setCurrentIndex(0)

    def showing_detail(self) -> bool:
        return self.stack.currentIndex() != 0

    def _showing_rule(self) -> bool:
        return self._rule_page is not None and self.stack.currentWidget() is self._rule_page

    def shutdown(self) -> None:
        self.close_panel()
        if self._actions is not None:
            self._actions.cancel_all()
        if self.detail is not None:
            self.detail.shutdown()
        if self.rule_detail is not None:
            self.rule_detail.shutdown()
        if self.memory_ledger is not None:
            self.memory_ledger.shutdown()
        if self.rule_editor is not None:
            self.rule_editor.reject()

    def rule_group_lines(self) -> list[str]:
        """The 规则 group as shown, top to bottom: the rules' headings (tests read this)."""
        return [row.text() for row in self.rule_rows] if self.rules_group.isVisibleTo(self) else []

    def task_group_lines(self) -> list[str]:
        """The 任务 group as shown, top to bottom: task titles and the 已结束 row (tests read this)."""
        lines = [row.task.title for row in self.task_rows]
        if self.ended_toggle is not None and self.ended_toggle.isVisible():
            lines.append(self.ended_toggle.text())
            lines.extend(row.task.title for row in self.ended_rows if row.isVisible())
        return lines

    # -- reading ---------------------------------------------------------------------------------------

    async def _load(self) -> tuple[str, list[TaskView]]:
        bot_id = self.bot_id
        if bot_id is None or self._tasks is None:
            return "", []
        return bot_id, await self._tasks.list_tasks(bot_id=bot_id, lang=language())

    def _failed(self, exc: Exception) -> None:
        self._failed_text(t("tasks.load_failed", reason=reason(exc)))

    def _failed_text(self, text: str) -> None:
        self.notice.setText(text)
        self.notice.show()

    def _apply(self, result: tuple[str, list[TaskView]]) -> None:
        bot_id, tasks = result
        if bot_id != self.bot_id:
            return
        self.notice.hide()
        if tasks == self._task_views:
            return
        self._task_views = tasks
        self._show_tasks(tasks)

    # -- showing ---------------------------------------------------------------------------------------

    ended_toggle: EndedToggle | None = None

    def _show_head(self) -> None:
        bot = self._bot
        if bot is None:
            self.name_label.setText("")
            self.line_label.hide()
            self.avatar.clear()
            return
        state = self._activity.state if self._activity else "idle"
        self.avatar.setPixmap(bot_avatar(bot, state, AVATAR))
        self.name_label.setText(bot.name)
        line = self._activity.line if self._activity else ""
        self.line_label.setText(line)
        self.line_label.setVisible(bool(line))
        self.paused_row.setVisible(bot.paused)
        self.resume_button.setEnabled(True)

    def _show_memory_row(self, view: MemoryView) -> None:
        if view.bot_id == self.bot_id:
            self.memory_row.set_view(view)
            self.memory_group.show()

    def memory_line(self) -> str | None:
        """The 记忆 row as shown (tests read this); None while it is not there."""
        return None if self.memory_group.isHidden() else self.memory_row.text()

    def _resume(self) -> None:
        if self._bot is not None:
            self.resume_button.setEnabled(False)  # one click; the row goes when the bot reads unpaused
            self.resumeRequested.emit(self._bot.id)

    def _clear_tasks(self) -> None:
        for layout in (self._tasks_layout, self._rules_layout):
            while layout.count():
                item = layout.takeAt(0)
                widget = item.widget() if item is not None else None
                if widget is not None:
                    widget.hide()
                    widget.deleteLater()
        self.task_rows = []
        self.rule_rows = []
        self.ended_rows = []
        self._ended_lines = []
        self.ended_toggle = None

    def _rule_rows(self) -> list[QWidget]:
        """This bot's rule rows (docs/desktop.md#bot-panel: the 规则 group); each opens its rule in place."""
        if self._rules is None:
            return []
        paused = self._bot is not None and self._bot.paused
        self.rule_rows = self._rules.rows(self._rules_well, self._now(), paused)
        for row in self.rule_rows:
            row.opened.connect(self.open_rule)
        return list(self.rule_rows)

    def _rules_changed(self) -> None:
        # The rules moved on their own: lay the group out again with the tasks already read.
        self._show_tasks(self._task_views or [])

    def _show_tasks(self, tasks: list[TaskView]) -> None:
        expanded = self.ended_toggle is not None and self.ended_toggle.isChecked()
        self._clear_tasks()
        well = self._tasks_well
        live = open_tasks(tasks)
        ended = ended_tasks(tasks, self._now())
        rules = self._rule_rows()
        rows: list[QWidget] = []
        for task in live:
            task_row = PanelTaskRow(task, well)
            task_row.opened.connect(self.open_task)
            self.task_rows.append(task_row)
            rows.append(task_row)
        for position, widget in enumerate(rules):
            if position:
                self._rules_layout.addWidget(separator(self._rules_well))
            self._rules_layout.addWidget(widget)
        self.rules_group.setVisible(bool(rules))
        for position, widget in enumerate(rows):
            if position:
                self._tasks_layout.addWidget(separator(well))
            self._tasks_layout.addWidget(widget)
        if ended:
            if rows:
                self._tasks_layout.addWidget(separator(well))
            toggle = EndedToggle(well)
            toggle.set_count(len(ended))
            self._tasks_layout.addWidget(toggle)
            self.ended_toggle = toggle
            for task in ended:
                line = separator(well)
                line.setVisible(False)
                self._ended_lines.append(line)
                self._tasks_layout.addWidget(line)
                row = PanelTaskRow(task, well)
                row.opened.connect(self.open_task)
                row.setVisible(False)
                self._tasks_layout.addWidget(row)
                self.ended_rows.append(row)
            toggle.toggled.connect(self._fold_ended)
            toggle.setChecked(expanded)
            self._fold_ended(expanded)
        self.tasks_group.setVisible(bool(rows or ended))

    def _fold_ended(self, expanded: bool) -> None:
        for widget in [*self._ended_lines, *self.ended_rows]:
            widget.setVisible(expanded)

    def _show_approvals(self) -> None:
        while self._approvals_layout.count():
            item = self._approvals_layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None:
                widget.hide()
                widget.deleteLater()
        self.approval_rows = []
        bot_id = self.bot_id
        approvals = [i for i in self._items if i.kind == "approval" and i.bot_id == bot_id]
        well = self._approvals_well
        for position, approval in enumerate(approvals):
            if position:
                self._approvals_layout.addWidget(separator(well))
            row = AttentionRow(approval, well, self._now)
            row.actRequested.connect(self._act)
            if self._actions is not None and approval.id in self._actions.running:
                row.set_busy(True)
            self._approvals_layout.addWidget(row)
            self.approval_rows.append(row)
        self.approvals_group.setVisible(bool(approvals))

    # -- acting ----------------------------------------------------------------------------------------

    def _approval_row(self, item_id: str) -> AttentionRow | None:
        return next((r for r in self.approval_rows if r.item.id == item_id), None)

    def _act(self, item_id: str, action: str, answer: str) -> None:
        if self._actions is not None:
            self._actions.act(item_id, action, answer)

    def _escape(self) -> None:
        if self.showing_detail():
            self.show_overview()
        else:
            self.closeRequested.emit()

"""The desktop window: the sidebar on the left, the chosen conversation (or a task pane) on the right.

The sidebar, top to bottom: 新对话 and 任务, the search box (it narrows the list as you type), a
「需要你  N」 row while something waits for the person (none when nothing does), then the list: with a
BotFacade, each bot's row (avatar with its state ring, name, activity line) over its conversations; a small
gear (设置) at the bottom opens a menu of both settings: the shown bot's (`settingsRequested(bot_id)`) and the
app's (`appSettingsRequested`), and the keyboard shortcuts (`ui.shortcuts`, also bound here).

With a TaskFacade, 任务 shows the task list in the right pane, and a task's detail opens there from the
list, from a reply's task chip, or from needs-you; ‹ goes back. With a BotFacade, the chat header's ⓘ opens
the bot's info panel beside the chat (`ui.bot_panel`), where a task opens in place. With a ChannelFacade,
the panel's 渠道 and needs-you's 「微信登录已过期」 open the WeChat login dialog (`ui.wechat_login_dialog`),
the panel's 连接飞书 the Feishu connect dialog (`ui.feishu_connect_dialog`), its 连接钉钉 the DingTalk one
(`ui.dingtalk_connect_dialog`) and its 连接 Telegram the Telegram one (`ui.telegram_connect_dialog`); one of
each at a time. With a MemoryFacade, the panel has the bot's 记忆 row and ledger, which needs-you's
「记忆已满」 opens too.

Everything it shows is read through the facades and re-read when the EventBridge says something changed.
Reads and commands run as tasks on the qasync loop; no slot ever waits for the core.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QMainWindow,
    QMenu,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.attention.facade import AttentionFacade
from core.attention.items import AttentionItem
from core.bots.facade import BotFacade
from core.bots.views import BotActivity, BotUpdate, BotView
from core.channels.facade import ChannelFacade
from core.chat.facade import ChatFacade
from core.chat.views import ConversationView
from core.rules.facade import RuleFacade
from core.search.facade import SearchFacade
from core.search.views import SearchHit
from core.tasks.facade import TaskFacade
from ui import theme
from ui.async_calls import AsyncCalls
from ui.bot_panel import PANEL_WIDTH, BotPanel
from ui.bridge import EventBridge
from ui.chat_view import ChatView
from ui.content_search import ContentSearch
from ui.conversation_list import ConversationList, ConversationRole
from ui.dingtalk_connect_dialog import DingTalkConnectDialog, open_dingtalk_connect
from ui.feishu_connect_dialog import FeishuConnectDialog, open_feishu_connect
from ui.i18n import language, t
from ui.icons import tinted_icon
from ui.needs_you import NeedsYouButton, NeedsYouView
from ui.reloader import Reloader
from ui.shortcuts import SHORTCUTS, ShortcutsDialog
from ui.sidebar_search import SidebarSearch
from ui.task_detail import TaskDetailView
from ui.task_list import TaskListView
from ui.telegram_connect_dialog import TelegramConnectDialog, open_telegram_connect
from ui.wechat_login_dialog import WeChatLoginDialog, open_wechat_login

if TYPE_CHECKING:
    # Its views name the store's types: for type checking only (tests/unit/test_layering.py).
    from core.memory.facade import MemoryFacade

log = logging.getLogger(__name__)

SIDEBAR_WIDTH = 272
# Bot activity follows tasks, needs-you and replies, which change many times a second while work streams;
# the avatars only need to catch up a few times a second.
ACTIVITY_COALESCE_MS = 200


class MainWindow(QMainWindow):
    # The gear at the bottom of the sidebar: the settings of this bot ('' when no bot is known yet).
    settingsRequested = Signal(str)
    # The gear's menu: the app's own settings (language, theme, start at login).
    appSettingsRequested = Signal()
    # Closing only hid the window (a tray keeps Errand running): the app tells the person once.
    closedToTray = Signal()
    # 新任务 (the tasks view's header, or `new_task()`): the app opens its new-task dialog.
    newTaskRequested = Signal()
    # Set by `use_search`: what the search box finds inside messages, tasks and rules.
    content_search: ContentSearch | None = None

    def __init__(
        self,
        facade: ChatFacade,
        bridge: EventBridge,
        parent: QWidget | None = None,
        tasks: TaskFacade | None = None,
        attention: AttentionFacade | None = None,
        bots: BotFacade | None = None,
        rules: RuleFacade | None = None,
        channels: ChannelFacade | None = None,
        memory: MemoryFacade | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("mainWindow")
        self.setWindowTitle(t("app.title"))
        self.resize(1080, 720)
        self.setMinimumSize(QSize(720, 480))
        self._facade = facade
        self._close_to_tray = False
        self._calls = AsyncCalls()
        self._conversations: Reloader[list[ConversationView]] = Reloader(
            facade.list_conversations, self._apply_conversations
        )

        self._attention: Reloader[list[AttentionItem]] | None = None
        self._bots = bots
        self._bot_views: list[BotView] = []
        self._activity: dict[str, BotActivity] = {}
        self._first_run: QWidget | None = None
        self._channels = channels
        self._channel_changed = bridge.channelChanged
        self.login_dialog: WeChatLoginDialog | None = None
        self.feishu_dialog: FeishuConnectDialog | None = None
        self.telegram_dialog: TelegramConnectDialog | None = None
        self.dingtalk_dialog: DingTalkConnectDialog | None = None
        sidebar = self._build_sidebar(tasks is not None)
        self.chat_view = ChatView(facade, self, attention=attention)
        self.pane = QStackedWidget(self)
        self.pane.setObjectName("mainPane")
        self.pane.addWidget(self.chat_view)
        self.bot_panel: BotPanel | None = None
        self.panel_button: QToolButton | None = None
        self.task_list: TaskListView | None = None
        self.task_detail: TaskDetailView | None = None
        if tasks is not None:
            self._build_task_panes(tasks, bridge)
        self.needs_you: NeedsYouView | None = None
        if attention is not None:
            self._build_needs_you(attention, bridge)

        self._splitter = self._build_splitter(sidebar)
        self._bot_list: Reloader[list[BotView]] | None = None
        self._bot_activity: Reloader[list[BotActivity]] | None = None
        self._activity_timer = QTimer(self)
        self._activity_timer.setSingleShot(True)
        self._activity_timer.setInterval(ACTIVITY_COALESCE_MS)
        self._activity_timer.timeout.connect(self.reload_activity)
        if bots is not None:
            self._build_bots(bots, tasks, attention, bridge, rules, channels, memory)
        self._splitter.setSizes([SIDEBAR_WIDTH, 1080 - SIDEBAR_WIDTH])
        self.setCentralWidget(self._splitter)

        bridge.conversationsChanged.connect(self._on_conversations_changed)
        bridge.messagesChanged.connect(self.chat_view.on_messages_changed)
        bridge.liveReplyChanged.connect(self.chat_view.on_live_reply_changed)
        bridge.taskChanged.connect(self.chat_view.on_task_changed)
        self._bind_shortcuts()

    def _build_splitter(self, sidebar: QWidget) -> QSplitter:
        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.setObjectName("mainSplitter")
        splitter.setChildrenCollapsible(False)
        splitter.setHandleWidth(1)
        splitter.addWidget(sidebar)
        splitter.addWidget(self.pane)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        sidebar.setMinimumWidth(200)
        sidebar.setMaximumWidth(420)
        return splitter

    def _build_sidebar(self, with_tasks: bool) -> QWidget:
        sidebar = QWidget(self)
        sidebar.setObjectName("sidebar")
        sidebar.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.new_chat_button = QPushButton(t("sidebar.new_chat"), sidebar)
        self.new_chat_button.setObjectName("newChatButton")
        self.new_chat_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.new_chat_button.setIcon(tinted_icon("new-chat", theme.colors().muted))
        self.new_chat_button.clicked.connect(self.new_conversation)
        self.tasks_button = QPushButton(t("sidebar.tasks"), sidebar)
        self.tasks_button.setObjectName("tasksButton")
        self.tasks_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.tasks_button.setCheckable(True)  # checked while a task pane is shown
        self.tasks_button.setIcon(tinted_icon("step-job", theme.colors().muted))
        self.tasks_button.clicked.connect(lambda _checked: self.show_tasks())
        self.tasks_button.setVisible(with_tasks)
        self.needs_you_button = NeedsYouButton(sidebar)
        self.needs_you_button.clicked.connect(lambda _checked: self.show_needs_you())
        self.needs_you_button.hide()  # only while something waits (and only with an AttentionFacade)
        self.search = SidebarSearch(sidebar)
        self.conversation_list = ConversationList(sidebar)
        self.conversation_list.conversationSelected.connect(self._on_selected)
        self.conversation_list.botActivated.connect(self.show_bot_panel)
        self.search.queryChanged.connect(self.conversation_list.set_query)
        # A click on a conversation (even the selected one) brings the chat back from a task pane.
        self.conversation_list.clicked.connect(lambda _index: self.show_chat())
        self.settings_button = self._build_settings_button(sidebar)
        side = QVBoxLayout(sidebar)
        side.setContentsMargins(0, 12, 0, 8)
        side.setSpacing(10)
        button_row = QVBoxLayout()
        button_row.setContentsMargins(12, 0, 12, 0)
        button_row.setSpacing(6)
        button_row.addWidget(self.new_chat_button)
        button_row.addWidget(self.tasks_button)
        button_row.addWidget(self.search)
        button_row.addWidget(self.needs_you_button)
        side.addLayout(button_row)
        side.addWidget(self.conversation_list, 1)
        bottom = QHBoxLayout()
        bottom.setContentsMargins(12, 0, 12, 0)
        bottom.addWidget(self.settings_button)
        bottom.addStretch(1)
        side.addLayout(bottom)
        return sidebar

    def _build_settings_button(self, sidebar: QWidget) -> QToolButton:
        button = QToolButton(sidebar)
        button.setObjectName("settingsButton")
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        button.setAutoRaise(True)
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        button.setText(t("sidebar.settings"))
        button.setIcon(tinted_icon("settings", theme.colors().muted))
        button.setToolTip(t("sidebar.settings"))
        button.setAccessibleName(t("sidebar.settings"))
        # One click shows every kind of settings, so the app's own (language, theme) is as easy to find as
        # the bot's; the menu pops up without a nested event loop so the window keeps running meanwhile.
        self.settings_menu = QMenu(button)
        self.settings_menu.setObjectName("settingsMenu")
        self.settings_menu.aboutToShow.connect(self._name_settings_entries)
        self._bot_settings_action = self.settings_menu.addAction(
            t("sidebar.bot_settings"), lambda: self.settingsRequested.emit(self.current_bot_id())
        )
        self.settings_menu.addAction(t("sidebar.app_settings_detail"), self.appSettingsRequested.emit)
        self.settings_menu.addSeparator()
        self.settings_menu.addAction(t("shortcuts.menu"), self.show_shortcuts)
        button.clicked.connect(lambda _checked=False: self.show_settings_menu())
        return button

    def show_settings_menu(self) -> None:
        # The gear sits at the bottom of the window: the menu opens upwards from it.
        above = self.settings_button.mapToGlobal(self.settings_button.rect().topLeft())
        above.setY(above.y() - self.settings_menu.sizeHint().height())
        self.settings_menu.popup(above)

    def _name_settings_entries(self) -> None:
        bot = self.bot_view(self.current_bot_id())
        self._bot_settings_action.setText(
            t("sidebar.bot_settings_of", name=bot.name) if bot is not None else t("sidebar.bot_settings")
        )

    def show_shortcuts(self) -> ShortcutsDialog:
        dialog = ShortcutsDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def _bind_shortcuts(self) -> None:
        actions: dict[str, Callable[[], object]] = {
            "new_chat": self.new_conversation,
            "new_task": self.new_task,
            "search": self._focus_search,
            "settings": self.show_settings_menu,
            "next_conversation": lambda: self.step_conversation(1),
            "previous_conversation": lambda: self.step_conversation(-1),
            "shortcuts": self.show_shortcuts,
        }
        for shortcut in SHORTCUTS:
            QShortcut(QKeySequence(shortcut.keys), self, actions[shortcut.action])

    def _focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def step_conversation(self, step: int) -> None:
        """Open the next (1) or previous (-1) conversation as the sidebar shows them, wrapping around."""
        model = self.conversation_list.model()
        rows = (model.index(row, 0).data(ConversationRole) for row in range(model.rowCount()))
        shown = [row.id for row in rows if isinstance(row, ConversationView)]
        if not shown:
            return
        current = self.conversation_list.current_id
        at = shown.index(current) if current in shown else (-1 if step > 0 else 0)
        self.conversation_list.select(shown[(at + step) % len(shown)])
        self.show_chat()

    def _build_bots(
        self,
        bots: BotFacade,
        tasks: TaskFacade | None,
        attention: AttentionFacade | None,
        bridge: EventBridge,
        rules: RuleFacade | None = None,
        channels: ChannelFacade | None = None,
        memory: MemoryFacade | None = None,
    ) -> None:
        self._bot_list = Reloader(bots.list, self._apply_bots)
        self._bot_activity = Reloader(lambda: bots.activity(lang=language()), self._apply_activity)
        self.bot_panel = BotPanel(tasks, attention, self, rules=rules, channels=channels, memory=memory)
        self.bot_panel.channelLoginRequested.connect(self.open_channel_login)
        self.bot_panel.feishuConnectRequested.connect(self.open_feishu)
        self.bot_panel.dingtalkConnectRequested.connect(self.open_dingtalk)
        self.bot_panel.telegramConnectRequested.connect(self.open_telegram)
        self.bot_panel.setMinimumWidth(260)
        self.bot_panel.conversationOpened.connect(self.open_conversation)
        self.bot_panel.attentionChanged.connect(self.reload_attention)
        self.bot_panel.closeRequested.connect(lambda: self.set_bot_panel_visible(False))
        self.bot_panel.resumeRequested.connect(
            lambda bot_id: self._calls.start(bots.update(bot_id, BotUpdate(paused=False)))
        )
        self.bot_panel.hide()
        self._splitter.addWidget(self.bot_panel)
        self._splitter.setStretchFactor(2, 0)
        button = QToolButton()
        button.setObjectName("botPanelButton")
        button.setCheckable(True)
        button.setAutoRaise(True)
        button.setCursor(Qt.CursorShape.PointingHandCursor)
        button.setIcon(tinted_icon("info", theme.colors().muted))
        button.setToolTip(t("panel.toggle"))
        button.setAccessibleName(t("panel.toggle"))
        button.toggled.connect(self.set_bot_panel_visible)
        self.chat_view.add_header_widget(button)
        self.panel_button = button
        bridge.botsChanged.connect(self.reload_bots)
        bridge.botsChanged.connect(self._activity_timer.start)
        bridge.attentionChanged.connect(self._activity_timer.start)
        # A bound slot, not a lambda: Qt drops it with the window, so no later change reaches a dead timer.
        bridge.taskChanged.connect(self._task_changed_activity)
        bridge.conversationsChanged.connect(self._activity_timer.start)
        bridge.taskChanged.connect(self.bot_panel.on_task_changed)
        bridge.runStepAdded.connect(self.bot_panel.on_run_step)
        bridge.ruleChanged.connect(self.bot_panel.on_rule_changed)
        bridge.channelChanged.connect(self.bot_panel.on_channel_changed)
        bridge.memoryChanged.connect(self.bot_panel.on_memory_changed)
        # A rule named in the chat (「来自规则「…」」, a chip) opens in the bot panel and follows its rule.
        bridge.ruleChanged.connect(self.chat_view.on_rule_changed)
        self.chat_view.ruleOpened.connect(self.open_rule)

    def _task_changed_activity(self, _task_id: str) -> None:
        self._activity_timer.start()

    def _build_task_panes(self, tasks: TaskFacade, bridge: EventBridge) -> None:
        self.task_list = TaskListView(tasks, self.pane)
        self.task_list.backRequested.connect(self.show_chat)
        self.task_list.taskOpened.connect(lambda task_id: self.open_task(task_id, back_to="list"))
        self.task_list.newTaskRequested.connect(self.new_task)
        self.task_detail = TaskDetailView(tasks, self.pane)
        self.task_detail.backRequested.connect(self._detail_back)
        self.task_detail.conversationOpened.connect(self.open_conversation)
        self.pane.addWidget(self.task_list)
        self.pane.addWidget(self.task_detail)
        self.chat_view.taskOpened.connect(lambda task_id: self.open_task(task_id, back_to="chat"))
        bridge.taskChanged.connect(self.task_list.on_task_changed)
        bridge.taskChanged.connect(self.task_detail.on_task_changed)
        # A working run's new steps: the open detail re-reads, so an unfolded 处理过程 grows live.
        bridge.runStepAdded.connect(self.task_detail.on_task_changed)

    def _build_needs_you(self, attention: AttentionFacade, bridge: EventBridge) -> None:
        self.needs_you = NeedsYouView(attention, self.pane)
        self.needs_you.backRequested.connect(self.show_chat)
        self.needs_you.changed.connect(self.reload_attention)
        self.needs_you.openRequested.connect(self.open_attention)
        self.needs_you.botOpenRequested.connect(self.open_bot_attention)
        self.needs_you.channelLoginRequested.connect(self.open_channel_login)
        self.pane.addWidget(self.needs_you)
        self._attention = Reloader(
            lambda: attention.items(lang=language()), self._apply_attention, self._attention_failed
        )
        bridge.attentionChanged.connect(self.reload_attention)
        # Not read here: the host may not have started yet; refresh() reads it once it has.

    async def refresh(self) -> None:
        """Load the conversations (creating a first one if there is none) and show the selected one."""
        if self._attention is not None:
            self._attention.request()
        if self._bot_list is not None:
            self._bot_list.request()
            self.reload_activity()
        await self._conversations.request()
        if not self.conversation_list.conversations():
            created = await self._facade.create_conversation()
            await self._conversations.request()
            self.conversation_list.select(created.id)
        await self.chat_view.reload()

    def new_conversation(self) -> None:
        if not self.new_chat_button.isEnabled():
            return
        self.new_chat_button.setEnabled(False)  # one click, one conversation
        self._calls.start(self._create_and_open())

    def new_task(self) -> None:
        """Ask the app for its new-task dialog (it owns it: the window only says the person wants one)."""
        self.newTaskRequested.emit()

    def show_chat(self) -> None:
        """The right pane shows the selected conversation again (or the first-run card while one is set)."""
        self._show_pane(self._first_run or self.chat_view)

    def show_first_run(self, widget: QWidget) -> None:
        """Show `widget` in place of the chat (the first-run card) until `hide_first_run`."""
        if self._first_run is not None and self._first_run is not widget:
            self.pane.removeWidget(self._first_run)
        self._first_run = widget
        if self.pane.indexOf(widget) < 0:
            self.pane.addWidget(widget)
        self._show_pane(widget)

    def hide_first_run(self) -> None:
        widget = self._first_run
        self._first_run = None
        if widget is not None:
            self.pane.removeWidget(widget)
            widget.hide()
        self._show_pane(self.chat_view)

    def open_conversation(self, conversation_id: str) -> None:
        """Choose a conversation and show it (a task's 来自, a needs-you row without a task)."""
        if self.conversation_list.conversation(conversation_id) is None:
            return
        self.conversation_list.select(conversation_id)
        self.show_chat()

    def use_search(self, search: SearchFacade) -> None:
        """With a SearchFacade the search box also finds words inside messages, tasks and rules."""
        self.content_search = ContentSearch(search, self)
        self.conversation_list.expect_hits()
        self.search.queryChanged.connect(self.content_search.set_query)
        self.search.returnPressed.connect(self.content_search.search_now)
        self.content_search.found.connect(self.conversation_list.set_hits)
        self.conversation_list.hitActivated.connect(self.open_search_hit)

    def open_search_hit(self, hit: SearchHit) -> None:
        """A search hit: a message opens its conversation scrolled to it, a task or rule its detail."""
        if hit.kind == "message":
            self.open_conversation(hit.conversation_id)
            if self.chat_view.conversation_id == hit.conversation_id:
                self.chat_view.show_message(hit.message_id)
        elif hit.kind == "task":
            self.open_task(hit.task_id, back_to="chat")
        elif hit.kind == "rule" and self.bot_panel is not None:
            self.show_bot_panel(hit.bot_id)
            self.bot_panel.open_rule(hit.rule_id)

    def current_bot_id(self) -> str:
        """The bot of the conversation shown; else the first (default) bot; '' before any is known."""
        current = self.conversation_list.current_id
        shown = self.conversation_list.conversation(current) if current else None
        if shown is not None and shown.bot_id:
            return shown.bot_id
        return self._bot_views[0].id if self._bot_views else ""

    def bot_view(self, bot_id: str) -> BotView | None:
        return next((bot for bot in self._bot_views if bot.id == bot_id), None)

    def show_bot_panel(self, bot_id: str = "") -> None:
        """Open the info panel beside the chat, for `bot_id` (default: the bot of the shown conversation)."""
        if self.bot_panel is None:
            return
        chosen = bot_id or self.current_bot_id()
        self.bot_panel.set_bot(self.bot_view(chosen), self._activity.get(chosen))
        self.show_chat()
        self.set_bot_panel_visible(True)

    def set_bot_panel_visible(self, visible: bool) -> None:
        panel = self.bot_panel
        if panel is None:
            return
        if self.panel_button is not None and self.panel_button.isChecked() != visible:
            self.panel_button.setChecked(visible)  # toggles back into here
            return
        if visible:
            if panel.bot_id is None:
                chosen = self.current_bot_id()
                panel.set_bot(self.bot_view(chosen), self._activity.get(chosen))
            if panel.isHidden():
                sizes = self._splitter.sizes()
                panel.show()
                self._splitter.setSizes([sizes[0], max(300, sizes[1] - PANEL_WIDTH), PANEL_WIDTH])
            panel.open()
        else:
            panel.close_panel()
            panel.hide()

    def reload_bots(self) -> None:
        if self._bot_list is not None:
            with contextlib.suppress(RuntimeError):  # no running loop yet: refresh() reads them at start
                self._bot_list.request()

    def reload_activity(self) -> asyncio.Future[None] | None:
        """Re-read every bot's activity; the future resolves once the avatars show it."""
        if self._bot_activity is None:
            return None
        with contextlib.suppress(RuntimeError):
            return self._bot_activity.request()
        return None

    def show_tasks(self) -> None:
        """The right pane shows the task list (re-read now and on every task change while shown)."""
        if self.task_list is not None:
            self._show_pane(self.task_list)

    def open_task(self, task_id: str, back_to: str = "chat") -> None:
        """The right pane shows one task; its back goes to `back_to` ("list", "needs" or "chat")."""
        if self.task_detail is None:
            return
        self.task_detail.show_task(task_id, back_to=back_to)
        if back_to == "needs":
            self.task_detail.set_back_text(t("needs.title"))
        self._show_pane(self.task_detail)

    def open_rule(self, rule_id: str) -> asyncio.Future[None] | None:
        """The bot panel beside the chat shows one rule of the shown conversation's bot (whose rule it is);
        the future resolves once it is shown."""
        if self.bot_panel is None:
            return None
        self.show_bot_panel()
        shown: asyncio.Future[None] | None = self.bot_panel.open_rule(rule_id)
        return shown

    def show_needs_you(self) -> None:
        """The right pane shows the needs-you page (read again now)."""
        if self.needs_you is not None:
            self._show_pane(self.needs_you)
            self.reload_attention()

    def open_attention(self, task_id: str, conversation_id: str) -> None:
        """A needs-you row's 打开: its task when it has one, else its conversation."""
        if task_id and self.task_detail is not None:
            self.open_task(task_id, back_to="needs")
        elif conversation_id:
            self.open_conversation(conversation_id)

    def open_bot_attention(self, kind: str, bot_id: str) -> asyncio.Future[None] | None:
        """打开 on a needs-you row about the bot itself: 「记忆已满」 opens its memory ledger in the bot
        panel, the reserve its settings (where the balance is shown), anything else the bot's panel. The
        future resolves once the ledger is shown."""
        if kind == "reserve_low":
            self.settingsRequested.emit(bot_id)
            return None
        if kind == "memory_full":
            return self.open_memory(bot_id)
        self.show_bot_panel(bot_id)
        return None

    def open_memory(self, bot_id: str = "") -> asyncio.Future[None] | None:
        """The bot panel beside the chat, on the memory ledger of `bot_id` (default: the shown one's bot)."""
        if self.bot_panel is None:
            return None
        self.show_bot_panel(bot_id)
        shown: asyncio.Future[None] | None = self.bot_panel.open_memory()
        return shown

    def open_channel_login(
        self, bot_id: str, channel_id: str = "", again: bool = True
    ) -> WeChatLoginDialog | None:
        """The WeChat login dialog: a new channel of `bot_id` (no `channel_id`), a new scan for one whose
        login expired or failed (`again`), or the login under way shown again. One at a time."""
        if self._channels is None or not bot_id:
            return None
        if self.login_dialog is not None:
            self.login_dialog.raise_()
            self.login_dialog.activateWindow()
            return self.login_dialog
        dialog = open_wechat_login(
            self._channels,
            bot_id,
            self._calls,
            channel_id=channel_id,
            again=again,
            changed=self._channel_changed,
            parent=self,
        )
        dialog.finished.connect(lambda _result: self._login_closed(dialog))
        self.login_dialog = dialog
        return dialog

    def _login_closed(self, dialog: WeChatLoginDialog) -> None:
        if self.login_dialog is dialog:
            self.login_dialog = None

    def open_feishu(self, bot_id: str) -> FeishuConnectDialog | None:
        """The Feishu connect dialog for a new channel of `bot_id` (the panel's 连接飞书). One at a time: a
        second ask brings the open one forward."""
        if self._channels is None or not bot_id:
            return None
        if self.feishu_dialog is not None:
            self.feishu_dialog.raise_()
            self.feishu_dialog.activateWindow()
            return self.feishu_dialog
        dialog = open_feishu_connect(self._channels, bot_id, self._calls, parent=self)
        dialog.finished.connect(lambda _result: self._feishu_closed(dialog))
        self.feishu_dialog = dialog
        return dialog

    def _feishu_closed(self, dialog: FeishuConnectDialog) -> None:
        if self.feishu_dialog is dialog:
            self.feishu_dialog = None
        if self.bot_panel is not None:
            # 渠道 is read again on close, as settings' section does (the add's ChannelChanged reads it too).
            self.bot_panel.on_channel_changed("")

    def open_dingtalk(self, bot_id: str) -> DingTalkConnectDialog | None:
        """The DingTalk connect dialog for a new channel of `bot_id` (the panel's 连接钉钉). One at a time: a
        second ask brings the open one forward."""
        if self._channels is None or not bot_id:
            return None
        if self.dingtalk_dialog is not None:
            self.dingtalk_dialog.raise_()
            self.dingtalk_dialog.activateWindow()
            return self.dingtalk_dialog
        dialog = open_dingtalk_connect(self._channels, bot_id, self._calls, parent=self)
        dialog.finished.connect(lambda _result: self._dingtalk_closed(dialog))
        self.dingtalk_dialog = dialog
        return dialog

    def _dingtalk_closed(self, dialog: DingTalkConnectDialog) -> None:
        if self.dingtalk_dialog is dialog:
            self.dingtalk_dialog = None
        if self.bot_panel is not None:
            self.bot_panel.on_channel_changed("")

    def open_telegram(self, bot_id: str) -> TelegramConnectDialog | None:
        """The Telegram connect dialog for a new channel of `bot_id` (the panel's 连接 Telegram). One at a
        time: a second ask brings the open one forward."""
        if self._channels is None or not bot_id:
            return None
        if self.telegram_dialog is not None:
            self.telegram_dialog.raise_()
            self.telegram_dialog.activateWindow()
            return self.telegram_dialog
        dialog = open_telegram_connect(
            self._channels, bot_id, self._calls, changed=self._channel_changed, parent=self
        )
        dialog.finished.connect(lambda _result: self._telegram_closed(dialog))
        self.telegram_dialog = dialog
        return dialog

    def _telegram_closed(self, dialog: TelegramConnectDialog) -> None:
        if self.telegram_dialog is dialog:
            self.telegram_dialog = None
        if self.bot_panel is not None:
            self.bot_panel.on_channel_changed("")

    def reload_attention(self) -> asyncio.Future[None] | None:
        """Re-read the needs-you list (sidebar count and page); the future resolves once it is shown.
        A no-op before the loop runs."""
        if self._attention is None:
            return None
        with contextlib.suppress(RuntimeError):  # no running loop yet: refresh() reads it at start
            return self._attention.request()
        return None

    def shown_pane(self) -> QWidget:
        return self.pane.currentWidget() or self.chat_view

    def set_close_to_tray(self, enabled: bool) -> None:
        """With a tray icon, closing the window only hides it; without one, closing quits."""
        self._close_to_tray = enabled

    def shutdown(self) -> None:
        self._conversations.reset()
        with contextlib.suppress(RuntimeError):  # the window (and its timer) may be gone already
            self._activity_timer.stop()
        for reader in (self._attention, self._bot_list, self._bot_activity):
            if reader is not None:
                reader.reset()
        if self.bot_panel is not None:
            self.bot_panel.shutdown()
        if self.needs_you is not None:
            self.needs_you.shutdown()
        for dialog in (self.login_dialog, self.feishu_dialog, self.dingtalk_dialog, self.telegram_dialog):
            if dialog is not None:
                with contextlib.suppress(RuntimeError):  # gone with the window already
                    dialog.reject()
        self._calls.cancel_all()
        self.chat_view.shutdown()
        if self.content_search is not None:
            self.content_search.shutdown()
        if self.task_list is not None:
            self.task_list.shutdown()
        if self.task_detail is not None:
            self.task_detail.shutdown()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:  # the scheme changed: re-tint the drawn icon
            self.new_chat_button.setIcon(tinted_icon("new-chat", theme.colors().muted))
            self.tasks_button.setIcon(tinted_icon("step-job", theme.colors().muted))
            self.settings_button.setIcon(tinted_icon("settings", theme.colors().muted))
            if self.panel_button is not None:
                self.panel_button.setIcon(tinted_icon("info", theme.colors().muted))
        super().changeEvent(event)

    def _apply_attention(self, items: list[AttentionItem]) -> None:
        self.needs_you_button.set_count(len(items))
        if self.needs_you is not None:
            self.needs_you.set_items(items)
        if self.bot_panel is not None:
            self.bot_panel.set_attention_items(items)

    def _apply_bots(self, bots: list[BotView]) -> None:
        self._bot_views = list(bots)
        self.conversation_list.set_bots(bots)
        panel = self.bot_panel
        if panel is not None and panel.bot_id is not None:
            panel.set_bot(self.bot_view(panel.bot_id), self._activity.get(panel.bot_id))

    def _apply_activity(self, activity: list[BotActivity]) -> None:
        self._activity = {a.bot_id: a for a in activity}
        self.conversation_list.set_activity(activity)
        panel = self.bot_panel
        if panel is not None and panel.bot_id is not None:
            panel.set_activity(self._activity.get(panel.bot_id))

    def _attention_failed(self, exc: Exception) -> None:
        if self.needs_you is not None:
            self.needs_you.set_failed(exc)

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._close_to_tray:
            event.ignore()
            self.hide()
            self.closedToTray.emit()
            return
        super().closeEvent(event)

    async def _create_and_open(self) -> None:
        try:
            created = await self._facade.create_conversation()
            await self._conversations.request()
            self.conversation_list.select(created.id)
            self.show_chat()
            self.chat_view.focus_composer()
        finally:
            self.new_chat_button.setEnabled(True)

    def _on_conversations_changed(self) -> None:
        self._conversations.request()

    def _apply_conversations(self, conversations: list[ConversationView]) -> None:
        self.conversation_list.set_conversations(conversations)
        shown = self.conversation_list.conversations()  # most recent first
        current = self.conversation_list.current_id
        fresh = self.conversation_list.conversation(current) if current else None
        if fresh is not None:
            self.chat_view.set_conversation(fresh)  # same id: only the header follows renames
        elif shown:
            self.conversation_list.select(shown[0].id)

    def _on_selected(self, conversation_id: str) -> None:
        conversation = self.conversation_list.conversation(conversation_id)
        self.chat_view.set_conversation(conversation)
        panel = self.bot_panel
        if panel is not None and conversation is not None and panel.bot_id != conversation.bot_id:
            bot = self.bot_view(conversation.bot_id)
            if bot is not None:  # the panel follows the chosen conversation's bot
                panel.set_bot(bot, self._activity.get(bot.id))

    def _detail_back(self) -> None:
        if self.task_detail is not None and self.task_detail.back_to == "list":
            self.show_tasks()
        elif self.task_detail is not None and self.task_detail.back_to == "needs":
            self.show_needs_you()
        else:
            self.show_chat()

    def _show_pane(self, pane: QWidget) -> None:
        if self.bot_panel is not None and self.panel_button is not None:
            # The panel sits beside the chat only; it comes back with the chat if it was open.
            beside_chat = pane is self.chat_view and self.panel_button.isChecked()
            self.bot_panel.setVisible(beside_chat)
            if beside_chat:
                self.bot_panel.open()
            else:
                self.bot_panel.close_panel()
        if self.task_list is not None and pane is not self.task_list:
            self.task_list.close_pane()
        if self.task_detail is not None and pane is not self.task_detail:
            self.task_detail.close_pane()
        if self.needs_you is not None and pane is not self.needs_you:
            self.needs_you.close_pane()
        self.pane.setCurrentWidget(pane)
        if pane is self.task_list and self.task_list is not None:
            self.task_list.open()
        if pane is self.needs_you and self.needs_you is not None:
            self.needs_you.open()
        detail = self.task_detail
        from_needs = detail is not None and pane is detail and detail.back_to == "needs"
        needs_shown = pane is not self.chat_view and (pane is self.needs_you or from_needs)
        task_shown = pane is self.task_list or (detail is not None and pane is detail and not from_needs)
        self.tasks_button.setChecked(task_shown)
        self.needs_you_button.setChecked(needs_shown)
        if pane is self.chat_view:
            self.chat_view.focus_composer()
        else:
            pane.setFocus()  # so Esc (back) reaches it

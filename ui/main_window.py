"""The desktop window: conversations on the left, the chosen conversation on the right.

With a TaskFacade, the sidebar also has 任务 (under 新对话): the right pane then shows the task list, and a
task's detail opens there from the list or from a reply's task chip; ‹ goes back.

With an AttentionFacade, a 「需要你  N」 row sits under them while something waits for the person (none when
nothing does); it opens the needs-you page, whose 打开 shows the task (or the conversation) in the same pane.

Everything it shows is read through the facades and re-read when the EventBridge says something changed.
Reads and commands run as tasks on the qasync loop; no slot ever waits for the core.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import QMainWindow, QPushButton, QSplitter, QStackedWidget, QVBoxLayout, QWidget

from core.attention.facade import AttentionFacade
from core.attention.items import AttentionItem
from core.chat.facade import ChatFacade
from core.chat.views import ConversationView
from core.tasks.facade import TaskFacade
from ui import theme
from ui.async_calls import AsyncCalls
from ui.bridge import EventBridge
from ui.chat_view import ChatView
from ui.conversation_list import ConversationList
from ui.i18n import language, t
from ui.icons import tinted_icon
from ui.needs_you import NeedsYouButton, NeedsYouView
from ui.reloader import Reloader
from ui.task_detail import TaskDetailView
from ui.task_list import TaskListView

log = logging.getLogger(__name__)

SIDEBAR_WIDTH = 272


class MainWindow(QMainWindow):
    def __init__(
        self,
        facade: ChatFacade,
        bridge: EventBridge,
        parent: QWidget | None = None,
        tasks: TaskFacade | None = None,
        attention: AttentionFacade | None = None,
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
        sidebar = self._build_sidebar(tasks is not None)
        self.chat_view = ChatView(facade, self, attention=attention)
        self.pane = QStackedWidget(self)
        self.pane.setObjectName("mainPane")
        self.pane.addWidget(self.chat_view)
        self.task_list: TaskListView | None = None
        self.task_detail: TaskDetailView | None = None
        if tasks is not None:
            self._build_task_panes(tasks, bridge)
        self.needs_you: NeedsYouView | None = None
        if attention is not None:
            self._build_needs_you(attention, bridge)

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
        splitter.setSizes([SIDEBAR_WIDTH, 1080 - SIDEBAR_WIDTH])
        self.setCentralWidget(splitter)

        bridge.conversationsChanged.connect(self._on_conversations_changed)
        bridge.messagesChanged.connect(self.chat_view.on_messages_changed)
        bridge.liveReplyChanged.connect(self.chat_view.on_live_reply_changed)
        bridge.taskChanged.connect(self.chat_view.on_task_changed)
        QShortcut(QKeySequence.StandardKey.New, self, self.new_conversation)

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
        self.conversation_list = ConversationList(sidebar)
        self.conversation_list.conversationSelected.connect(self._on_selected)
        # A click on a conversation (even the selected one) brings the chat back from a task pane.
        self.conversation_list.clicked.connect(lambda _index: self.show_chat())
        side = QVBoxLayout(sidebar)
        side.setContentsMargins(0, 12, 0, 8)
        side.setSpacing(10)
        button_row = QVBoxLayout()
        button_row.setContentsMargins(12, 0, 12, 0)
        button_row.setSpacing(6)
        button_row.addWidget(self.new_chat_button)
        button_row.addWidget(self.tasks_button)
        button_row.addWidget(self.needs_you_button)
        side.addLayout(button_row)
        side.addWidget(self.conversation_list, 1)
        return sidebar

    def _build_task_panes(self, tasks: TaskFacade, bridge: EventBridge) -> None:
        self.task_list = TaskListView(tasks, self.pane)
        self.task_list.backRequested.connect(self.show_chat)
        self.task_list.taskOpened.connect(lambda task_id: self.open_task(task_id, back_to="list"))
        self.task_detail = TaskDetailView(tasks, self.pane)
        self.task_detail.backRequested.connect(self._detail_back)
        self.pane.addWidget(self.task_list)
        self.pane.addWidget(self.task_detail)
        self.chat_view.taskOpened.connect(lambda task_id: self.open_task(task_id, back_to="chat"))
        bridge.taskChanged.connect(self.task_list.on_task_changed)
        bridge.taskChanged.connect(self.task_detail.on_task_changed)

    def _build_needs_you(self, attention: AttentionFacade, bridge: EventBridge) -> None:
        self.needs_you = NeedsYouView(attention, self.pane)
        self.needs_you.backRequested.connect(self.show_chat)
        self.needs_you.changed.connect(self.reload_attention)
        self.needs_you.openRequested.connect(self.open_attention)
        self.pane.addWidget(self.needs_you)
        self._attention = Reloader(
            lambda: attention.items(lang=language()), self._apply_attention, self._attention_failed
        )
        bridge.attentionChanged.connect(self.reload_attention)
        self.reload_attention()

    async def refresh(self) -> None:
        """Load the conversations (creating a first one if there is none) and show the selected one."""
        if self._attention is not None:
            self._attention.request()
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

    def show_chat(self) -> None:
        """The right pane shows the selected conversation again."""
        self._show_pane(self.chat_view)

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

    def show_needs_you(self) -> None:
        """The right pane shows the needs-you page (read again now)."""
        if self.needs_you is not None:
            self._show_pane(self.needs_you)
            self.reload_attention()

    def open_attention(self, task_id: str, conversation_id: str) -> None:
        """A needs-you row's 打开: its task when it has one, else its conversation."""
        if task_id and self.task_detail is not None:
            self.open_task(task_id, back_to="needs")
        elif conversation_id and self.conversation_list.conversation(conversation_id) is not None:
            self.conversation_list.select(conversation_id)
            self.show_chat()

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
        if self._attention is not None:
            self._attention.reset()
        if self.needs_you is not None:
            self.needs_you.shutdown()
        self._calls.cancel_all()
        self.chat_view.shutdown()
        if self.task_list is not None:
            self.task_list.shutdown()
        if self.task_detail is not None:
            self.task_detail.shutdown()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:  # the scheme changed: re-tint the drawn icon
            self.new_chat_button.setIcon(tinted_icon("new-chat", theme.colors().muted))
            self.tasks_button.setIcon(tinted_icon("step-job", theme.colors().muted))
        super().changeEvent(event)

    def _apply_attention(self, items: list[AttentionItem]) -> None:
        self.needs_you_button.set_count(len(items))
        if self.needs_you is not None:
            self.needs_you.set_items(items)

    def _attention_failed(self, exc: Exception) -> None:
        if self.needs_you is not None:
            self.needs_you.set_failed(exc)

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._close_to_tray:
            event.ignore()
            self.hide()
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
        self.chat_view.set_conversation(self.conversation_list.conversation(conversation_id))

    def _detail_back(self) -> None:
        if self.task_detail is not None and self.task_detail.back_to == "list":
            self.show_tasks()
        elif self.task_detail is not None and self.task_detail.back_to == "needs":
            self.show_needs_you()
        else:
            self.show_chat()

    def _show_pane(self, pane: QWidget) -> None:
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
        self.tasks_button.setChecked(pane is not self.chat_view and not needs_shown)
        self.needs_you_button.setChecked(needs_shown)
        if pane is self.chat_view:
            self.chat_view.focus_composer()
        else:
            pane.setFocus()  # so Esc (back) reaches it

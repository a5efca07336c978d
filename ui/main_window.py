"""The desktop window: conversations on the left, the chosen conversation on the right.

Everything it shows is read through the ChatFacade and re-read when the EventBridge says something changed.
Reads and commands run as tasks on the qasync loop; no slot ever waits for the core.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import QMainWindow, QPushButton, QSplitter, QVBoxLayout, QWidget

from core.chat.facade import ChatFacade
from core.chat.views import ConversationView
from ui import theme
from ui.async_calls import AsyncCalls
from ui.bridge import EventBridge
from ui.chat_view import ChatView
from ui.conversation_list import ConversationList
from ui.i18n import t
from ui.icons import tinted_icon
from ui.reloader import Reloader

log = logging.getLogger(__name__)

SIDEBAR_WIDTH = 272


class MainWindow(QMainWindow):
    def __init__(self, facade: ChatFacade, bridge: EventBridge, parent: QWidget | None = None) -> None:
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

        sidebar = QWidget(self)
        sidebar.setObjectName("sidebar")
        sidebar.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.new_chat_button = QPushButton(t("sidebar.new_chat"), sidebar)
        self.new_chat_button.setObjectName("newChatButton")
        self.new_chat_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.new_chat_button.setIcon(tinted_icon("new-chat", theme.colors().muted))
        self.new_chat_button.clicked.connect(self.new_conversation)
        self.conversation_list = ConversationList(sidebar)
        self.conversation_list.conversationSelected.connect(self._on_selected)
        side = QVBoxLayout(sidebar)
        side.setContentsMargins(0, 12, 0, 8)
        side.setSpacing(10)
        button_row = QVBoxLayout()
        button_row.setContentsMargins(12, 0, 12, 0)
        button_row.addWidget(self.new_chat_button)
        side.addLayout(button_row)
        side.addWidget(self.conversation_list, 1)

        self.chat_view = ChatView(facade, self)

        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        splitter.setObjectName("mainSplitter")
        splitter.setChildrenCollapsible(False)
        splitter.setHandleWidth(1)
        splitter.addWidget(sidebar)
        splitter.addWidget(self.chat_view)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        sidebar.setMinimumWidth(200)
        sidebar.setMaximumWidth(420)
        splitter.setSizes([SIDEBAR_WIDTH, 1080 - SIDEBAR_WIDTH])
        self.setCentralWidget(splitter)

        bridge.conversationsChanged.connect(self._on_conversations_changed)
        bridge.messagesChanged.connect(self.chat_view.on_messages_changed)
        bridge.liveReplyChanged.connect(self.chat_view.on_live_reply_changed)
        QShortcut(QKeySequence.StandardKey.New, self, self.new_conversation)

    async def refresh(self) -> None:
        """Load the conversations (creating a first one if there is none) and show the selected one."""
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

    def set_close_to_tray(self, enabled: bool) -> None:
        """With a tray icon, closing the window only hides it; without one, closing quits."""
        self._close_to_tray = enabled

    def shutdown(self) -> None:
        self._conversations.reset()
        self._calls.cancel_all()
        self.chat_view.shutdown()

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:  # the scheme changed: re-tint the drawn icon
            self.new_chat_button.setIcon(tinted_icon("new-chat", theme.colors().muted))
        super().changeEvent(event)

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

"""What the window asks the app to open: bot settings, app settings, the new-task dialog and the first-run
card. The window only emits signals; this composes the dialogs over the host's facades.

A language saved in app settings is handed to `switch_language` (the app's `LiveLanguage.switch`), which
builds the window again; `use_window` then moves these actions onto the new one."""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QDialog

from app.autostart import set_start_at_login
from core.tasks.views import TaskView
from ui.app_settings import AppSettingsDialog
from ui.async_calls import AsyncCalls
from ui.bot_settings import BotSettingsDialog
from ui.bridge import EventBridge
from ui.first_run import FirstRunCard
from ui.i18n import language
from ui.main_window import MainWindow
from ui.new_task_dialog import NewTaskDialog

if TYPE_CHECKING:
    from core.host import Host

log = logging.getLogger(__name__)


class WindowActions:
    def __init__(
        self,
        host: Host,
        window: MainWindow,
        app: QApplication,
        bridge: EventBridge,
        *,
        switch_language: Callable[[str], Coroutine[Any, Any, object]] | None = None,
    ) -> None:
        self._host = host
        self._bridge = bridge
        self._app = app
        self._switch_language = switch_language
        self._calls = AsyncCalls()
        self._open: QDialog | None = None  # one settings or new-task dialog at a time
        self._first_run: FirstRunCard | None = None
        self._started = False
        self._window = window
        self._connect(window)

    def _connect(self, window: MainWindow) -> None:
        window.settingsRequested.connect(self.open_bot_settings)
        window.appSettingsRequested.connect(self.open_app_settings)
        window.newTaskRequested.connect(self._new_task_requested)

    def _new_task_requested(self) -> None:
        self._calls.start(self.open_new_task())

    def use_window(self, window: MainWindow) -> None:
        """Act for `window` from now on (it replaces the old one after a language change). A first-run card
        went with the old window: a new one, in the new language, is put on the new window."""
        self._window = window
        self._connect(window)
        self._first_run = None
        if self._started:
            self._calls.start(self.check_first_run())

    def host_started(self) -> None:
        """Show the first-run card when the default bot has no model; again whenever bots change."""
        self._started = True
        self._calls.start(self.check_first_run())

    async def check_first_run(self) -> None:
        bots = await self._host.bots.list()
        default = next((b for b in bots if b.is_default), bots[0] if bots else None)
        if default is None or default.configured or self._first_run is not None:
            return
        card = FirstRunCard(self._host.desktop_bots, default.id)
        card.configured.connect(self._first_run_done)
        self._first_run = card
        self._window.show_first_run(card)
        await card.load()

    def open_bot_settings(self, bot_id: str) -> None:
        if not self._raise_open():
            reserve = self._host.reserve.line(bot_id, language())
            dialog = BotSettingsDialog(
                self._host.desktop_bots,
                bot_id,
                self._window,
                reserve_line=reserve,
                channels=self._host.channels,
                channel_changed=self._bridge.channelChanged,
                mcp=self._host.mcp if self._host.started.is_set() else None,  # its servers load at start
                mcp_changed=self._bridge.mcpChanged,
                skills=self._host.skills if self._host.started.is_set() else None,
                skills_changed=self._bridge.skillsChanged,
            )
            self._show(dialog)
            self._calls.start(dialog.load())

    def open_app_settings(self) -> None:
        if not self._raise_open():
            dialog = AppSettingsDialog(
                self._host.preferences,
                set_start_at_login,
                self._app,
                self._window,
                prices=self._host.prices,
                prices_changed=self._bridge.pricesChanged,
                web_search=self._host.web_search if self._host.started.is_set() else None,  # made at start
                web_search_changed=self._bridge.webSearchChanged,
            )
            dialog.languageChanged.connect(self._language_saved)
            self._show(dialog)
            self._calls.start(dialog.load())

    def _language_saved(self, choice: str) -> None:
        if self._switch_language is not None:
            self._calls.start(self._switch_language(choice))

    async def open_new_task(self) -> None:
        if self._raise_open():
            return
        dialog = NewTaskDialog(
            self._create_task, await self._host.bots.list(), self._window.current_bot_id(), self._window
        )
        self._show(dialog)

    def shutdown(self) -> None:
        self._calls.cancel_all()
        if self._open is not None:
            self._open.close()

    async def _create_task(self, bot_id: str, title: str, brief: str, plan: bool) -> TaskView:
        # A conversation of its own, never the one shown last: the person's words are stored there as the
        # request, so the result lands under them and nothing lands in an unrelated chat.
        return await self._host.tasks.create(
            bot_id=bot_id or None,
            words=brief,
            title=title,
            record_request=True,
            in_new_conversation=True,
            plan=plan,
        )

    def _first_run_done(self) -> None:
        self._window.hide_first_run()
        self._first_run = None

    def _raise_open(self) -> bool:
        if self._open is not None and self._open.isVisible():
            self._open.raise_()
            self._open.activateWindow()
            return True
        return False

    def _show(self, dialog: QDialog) -> None:
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.destroyed.connect(lambda: setattr(self, "_open", None))
        self._open = dialog
        dialog.show()

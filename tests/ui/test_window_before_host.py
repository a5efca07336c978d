"""The desktop's window comes before its host (docs/architecture.md#start-up): built and shown over
stand-ins for the host's facades, its first read waits for the host, and once the host is bound the window
works over it as if it had been there from the start."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QPlainTextEdit
from pytestqt.qtbot import QtBot

from app.gui import _live_window
from app.late_facades import LateFacades
from core.bus import EventBus
from core.errors import NotFoundError
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.integration.host_fixtures import make_host
from tests.ui.conftest import wait_until
from tests.ui.test_chat_view import child, visible_messages
from ui import i18n
from ui.bridge import EventBridge
from ui.skeleton import LoadingSkeleton


async def test_the_window_shown_before_the_host_reads_and_chats_through_it_once_bound(
    qtbot: QtBot, tmp_path: Path
) -> None:
    i18n.use_language("en")
    bus = EventBus()
    bridge = EventBridge(bus)
    facades = LateFacades()
    live = _live_window(facades, bridge)
    window = live.window
    qtbot.addWidget(window)
    skeleton = LoadingSkeleton(window)
    window.show()
    first_read = asyncio.ensure_future(window.refresh())
    async with ScriptedModelServer() as server:
        server.push(Reply.text("Hello from the host"))
        host = make_host(tmp_path / "data", server.base_url, home=tmp_path / "home", bus=bus)
        try:
            await asyncio.sleep(0)
            assert window.isVisible() and not first_read.done()  # waiting for the host, not failed

            await host.start()
            assert not first_read.done()
            facades.bind(host)
            await asyncio.wait_for(first_read, timeout=10)
            skeleton.remove()
            conversation = await host.chat.create_conversation()
            await window.refresh()
            window.open_conversation(conversation.id)
            composer = child(window, QPlainTextEdit, "composerInput")
            QTest.keyClicks(composer, "hi")
            QTest.keyClick(composer, Qt.Key.Key_Return)

            await wait_until(
                lambda: ("AssistantMessage", "Hello from the host") in visible_messages(window), timeout=10
            )
            assert [(m.role, m.text) for m in await host.chat.list_messages(conversation.id)] == [
                ("user", "hi"),
                ("assistant", "Hello from the host"),
            ]
        finally:
            window.shutdown()
            bridge.close()
            await host.stop()


async def test_the_panels_memory_waits_for_the_host_and_follows_it_once_bound(
    qtbot: QtBot, tmp_path: Path
) -> None:
    i18n.use_language("en")
    bus = EventBus()
    bridge = EventBridge(bus)
    facades = LateFacades()
    live = _live_window(facades, bridge, memory=facades.memory)
    window = live.window
    qtbot.addWidget(window)
    window.show()
    panel = window.bot_panel
    assert panel is not None and panel.memory_ledger is not None
    # Asked before the host exists: the read waits for it, and then reaches the host's own memory.
    early = asyncio.ensure_future(facades.memory.view("b_000000000000"))
    await asyncio.sleep(0)
    assert not early.done() and panel.memory_line() is None
    async with ScriptedModelServer() as server:
        host = make_host(tmp_path / "data", server.base_url, home=tmp_path / "home", bus=bus)
        try:
            await host.start()
            facades.bind(host)
            with pytest.raises(NotFoundError):
                await asyncio.wait_for(early, timeout=10)
            [bot] = await host.desktop_bots.list()
            await window.refresh()
            window.show_bot_panel(bot.id)
            await wait_until(lambda: panel.memory_line() == "Memory · nothing yet", timeout=10)

            await host.memory.add(bot.id, "Replies in English.")
            await wait_until(lambda: panel.memory_line() == "Memory · 1 note")
        finally:
            window.shutdown()
            bridge.close()
            await host.stop()

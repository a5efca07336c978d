"""The window over a real host: typing a message streams the model's reply and folds its steps.

Real SQLite file, real agent runtime, the scripted model over real HTTP, all on the qasync loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QPlainTextEdit
from pytestqt.qtbot import QtBot

from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.host_fixtures import make_host
from tests.ui.conftest import wait_until
from tests.ui.test_chat_view import child, live_text, visible_messages
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.message_widgets import AssistantMessage


@pytest.fixture
async def model_server() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as server:
        yield server


@pytest.fixture
async def host(tmp_path: Path, model_server: ScriptedModelServer) -> AsyncIterator[Host]:
    made = make_host(tmp_path / "data", model_server.base_url, home=tmp_path / "home")
    await made.start()
    yield made
    await made.stop()


async def test_a_typed_message_streams_a_reply_and_shows_its_steps(
    qtbot: QtBot, host: Host, model_server: ScriptedModelServer
) -> None:
    bridge = EventBridge(host.bus)
    window = MainWindow(host.chat, bridge)
    qtbot.addWidget(window)
    window.show()
    await window.refresh()

    model_server.push_many(
        [
            Reply.tool_calls([ToolCallSpec("bash", {"command": "echo 3 files"})]),
            # Slow chunks so the reply is seen streaming before it is stored.
            Reply.text("There are three files in the workspace.", chunks=8, chunk_delay_s=0.05),
        ]
    )
    composer = child(window, QPlainTextEdit, "composerInput")
    composer.setFocus()
    QTest.keyClicks(composer, "How many files?")
    QTest.keyClick(composer, Qt.Key.Key_Return)

    await wait_until(lambda: (live_text(window) or "").startswith("There are"), timeout=10)
    await wait_until(lambda: live_text(window) is None, timeout=10)
    assert visible_messages(window) == [
        ("UserMessage", "How many files?"),
        ("AssistantMessage", "There are three files in the workspace."),
    ]
    reply = window.chat_view.message_widgets()[-1]
    assert isinstance(reply, AssistantMessage)
    assert reply.activity.toggle.text().startswith("Took ")
    assert "3 steps" in reply.activity.toggle.text()
    QTest.mouseClick(reply.activity.toggle, Qt.MouseButton.LeftButton)
    steps = reply.activity.steps_list()
    assert steps is not None
    assert [row.title.text() for row in steps.rows()][1] == "bash: echo 3 files"
    window.shutdown()
    bridge.close()

"""工具服务器 (MCP) in a bot's settings: each server's state as a dot plus words, why one failed with its last
stderr lines, the list following the servers as they change, and the JSON editor that saves only what is
valid, saying what to fix otherwise."""

from __future__ import annotations

import pytest
from pytestqt.qtbot import QtBot

from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_mcp import FakeMcp
from tests.ui.conftest import wait_until
from ui.bot_settings import BotSettingsDialog
from ui.bridge import EventBridge
from ui.mcp_settings import McpSection

CONFIG = (
    '{"mcpServers": {"files": {"command": "npx", "args": ["-y", "fs"]},'
    ' "github": {"command": "gh-mcp", "env": {"TOKEN": "ghp_x"}}}}'
)


@pytest.fixture
def mcp(facade: FakeChatFacade) -> FakeMcp:
    return FakeMcp(facade.bus)


async def open_settings(qtbot: QtBot, bots: FakeBotFacade, mcp: FakeMcp, bridge: EventBridge) -> McpSection:
    dialog = BotSettingsDialog(bots, "bot-1", mcp=mcp, mcp_changed=bridge.mcpChanged)
    qtbot.addWidget(dialog)
    dialog.show()
    await dialog.load()
    section = dialog.mcp_section
    assert section is not None
    await wait_until(section.edit_button.isEnabled)
    return section


async def test_no_servers_says_how_to_add_them(
    qtbot: QtBot, bots: FakeBotFacade, mcp: FakeMcp, bridge: EventBridge
) -> None:
    section = await open_settings(qtbot, bots, mcp, bridge)
    assert section.none_label.isVisible()
    assert "mcpServers" in section.none_label.text()
    assert section.rows == []


async def test_pasted_config_is_saved_and_the_rows_follow_each_servers_state(
    qtbot: QtBot, bots: FakeBotFacade, mcp: FakeMcp, bridge: EventBridge
) -> None:
    section = await open_settings(qtbot, bots, mcp, bridge)
    dialog = section.open_editor()
    assert dialog is not None
    dialog.editor.setPlainText(CONFIG)
    dialog.save_button.click()
    await wait_until(lambda: section.dialog is None)
    assert [r.status.name for r in section.rows] == ["files", "github"]
    assert not section.none_label.isVisible()
    assert section.rows[0].state_label.text() == "Not started"

    mcp.set_state("files", "running", tools=12)
    mcp.set_state(
        "github",
        "failed",
        "it exited while starting; starting again in 2 s",
        ("x", "y", "fatal: TOKEN is bad", "z"),
    )
    await wait_until(
        lambda: section.rows[0].status.state == "running" and section.rows[1].status.state == "failed"
    )
    files, github = section.rows
    assert files.state_label.text() == "Running · 12 tools"
    assert files.dot.state == "working" and not files.stderr_label.text()
    assert github.dot.state == "failed" and github.state_label.text() == "Failed"
    assert "exited while starting" in github.reason_label.text()
    assert github.stderr_label.text().splitlines() == ["y", "fatal: TOKEN is bad", "z"]  # the last three

    again = section.open_editor()
    assert again is not None
    assert "ghp_x" not in again.editor.toPlainText() and "********" in again.editor.toPlainText()
    again.reject()


async def test_a_bad_config_is_said_under_the_editor_and_nothing_is_saved(
    qtbot: QtBot, bots: FakeBotFacade, mcp: FakeMcp, bridge: EventBridge
) -> None:
    section = await open_settings(qtbot, bots, mcp, bridge)
    dialog = section.open_editor()
    assert dialog is not None
    dialog.editor.setPlainText('{"mcpServers": {"x": {"args": []}}}')
    dialog.save_button.click()
    await wait_until(lambda: bool(dialog.error.text()))
    assert "mcpServers.x" in dialog.error.text() and "no command and no url" in dialog.error.text()
    assert dialog.error.isVisible() and dialog.isVisible() and dialog.save_button.isEnabled()
    dialog.editor.setPlainText("{oops")
    dialog.save_button.click()
    await wait_until(lambda: "not valid JSON" in dialog.error.text())
    assert mcp.saved == [] and section.rows == []
    dialog.reject()

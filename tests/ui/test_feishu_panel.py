"""「+ 连接飞书」 in the bot panel's 渠道: it opens the Feishu connect dialog for the panel's bot, one at a
time, and once 连接 added the channel the panel lists it; the two links sit side by side, one under the
other in a panel too narrow for both."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from core.changes import ChannelChanged
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_channels import FakeChannels
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from tests.ui.conftest import wait_until
from ui import i18n
from ui.bot_panel import BotPanel
from ui.bridge import EventBridge
from ui.feishu_connect_dialog import FeishuConnectDialog
from ui.main_window import MainWindow

APP = {"appId": "cli_a1b2c3d4e5f6", "appSecret": "s3cr3t-from-the-console", "domain": "feishu"}


@pytest.fixture
def channels(facade: FakeChatFacade) -> FakeChannels:
    made = FakeChannels()
    # What the real service does: every change is a ChannelChanged on the bus, which the bridge hands on.
    made.on_change(lambda channel_id: facade.bus.publish(ChannelChanged(channel_id)))
    return made


def shown_window(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    bots: FakeBotFacade,
    channels: FakeChannels,
) -> MainWindow:
    """A shown window with a ChannelFacade, in the language in use now; the caller shuts it down."""
    made = MainWindow(
        facade, bridge, tasks=tasks, attention=FakeAttentionFacade(facade), bots=bots, channels=channels
    )
    qtbot.addWidget(made)
    made.show()
    return made


@pytest.fixture
def channel_window(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    bots: FakeBotFacade,
    channels: FakeChannels,
) -> Iterator[MainWindow]:
    bots.add("周周", bot_id="bot-2")
    made = shown_window(qtbot, facade, bridge, tasks, bots, channels)
    yield made
    made.shutdown()


async def open_panel(window: MainWindow, bot_id: str = "bot-1") -> BotPanel:
    await window.refresh()
    await wait_until(lambda: window.bot_view(bot_id) is not None)
    window.show_bot_panel(bot_id)
    panel = window.bot_panel
    assert panel is not None
    await wait_until(lambda: panel.isVisible() and panel.bot_id == bot_id)
    return panel


async def click_connect_feishu(window: MainWindow, panel: BotPanel) -> FeishuConnectDialog:
    QTest.mouseClick(panel.connect_feishu_button, Qt.MouseButton.LeftButton)
    dialog = window.feishu_dialog
    assert dialog is not None
    await wait_until(dialog.isVisible)
    return dialog


def open_dialogs(window: MainWindow) -> list[FeishuConnectDialog]:
    return [d for d in window.findChildren(FeishuConnectDialog) if d.isVisible()]


async def test_connect_feishu_opens_the_dialog_for_the_panel_s_bot_and_its_row_appears(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    channels.put_feishu(bot_id="bot-1", name="Someone Else's Bot")  # bot-1's: not in bot-2's panel
    panel = await open_panel(channel_window, "bot-2")
    await panel.reload()
    assert panel.channel_lines() == ["Desktop · Connected"]
    assert panel.connect_feishu_button.isVisible()
    assert panel.connect_feishu_button.text() == "+ Connect Feishu"
    assert panel.connect_wechat_button.isVisible()  # still there, beside it

    dialog = await click_connect_feishu(channel_window, panel)
    assert dialog.windowTitle() == "Connect Feishu"
    assert dialog.parent() is channel_window
    QTest.keyClicks(dialog.app_id_input, APP["appId"])
    QTest.keyClicks(dialog.secret_input, APP["appSecret"])
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: channel_window.feishu_dialog is None)  # it closed once the channel was added
    assert [c for c in channels.calls if c[0] == "add"] == [("add", "bot-2", "feishu")]
    assert channels.configs == [("add", APP)]
    await wait_until(lambda: len(panel.channel_rows) == 1)
    assert panel.channel_lines() == ["Desktop · Connected", "Feishu · Errand Bot · Connected"]
    assert panel.channel_rows[0].dot.state == "working"
    assert panel.channel_rows[0].action_button is None  # nothing to scan on Feishu


async def test_a_second_click_while_the_dialog_is_open_brings_that_one_forward(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    panel = await open_panel(channel_window)
    dialog = await click_connect_feishu(channel_window, panel)

    QTest.mouseClick(panel.connect_feishu_button, Qt.MouseButton.LeftButton)
    panel.connect_feishu()  # the panel's ask itself, past the dialog's modality
    assert channel_window.open_feishu("bot-1") is dialog
    assert channel_window.feishu_dialog is dialog
    assert open_dialogs(channel_window) == [dialog]

    QTest.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: channel_window.feishu_dialog is None)
    assert channels.calls == []  # nothing was asked of the facade
    again = await click_connect_feishu(channel_window, panel)  # once closed, the link opens a new one
    assert again is not dialog
    assert open_dialogs(channel_window) == [again]


async def test_closing_the_panel_s_dialog_while_it_connects_leaves_no_channel(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    channels.add_gate = asyncio.Event()
    panel = await open_panel(channel_window)
    dialog = await click_connect_feishu(channel_window, panel)
    QTest.keyClicks(dialog.app_id_input, APP["appId"])
    QTest.keyClicks(dialog.secret_input, APP["appSecret"])
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
    QTest.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: channel_window.feishu_dialog is None)  # closed at once, the add still held

    channels.add_gate.set()
    await wait_until(lambda: any(c[0] == "remove" for c in channels.calls))  # the window's calls remove it
    assert channels.ids() == []
    await wait_until(lambda: panel.channel_lines() == ["Desktop · Connected"])


async def test_in_chinese_the_link_and_the_new_row_read_as_designed(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    bots: FakeBotFacade,
    channels: FakeChannels,
) -> None:
    i18n.use_language("zh")  # before the window is built: its words are read then
    window = shown_window(qtbot, facade, bridge, tasks, bots, channels)
    try:
        panel = await open_panel(window)
        assert panel.connect_wechat_button.text() == "+ 连接微信"
        assert panel.connect_feishu_button.text() == "+ 连接飞书"
        dialog = await click_connect_feishu(window, panel)
        assert dialog.windowTitle() == "连接飞书"
        QTest.keyClicks(dialog.app_id_input, APP["appId"])
        QTest.keyClicks(dialog.secret_input, APP["appSecret"])
        QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
        await wait_until(lambda: len(panel.channel_rows) == 1)
        assert panel.channel_lines() == ["桌面 · 已连接", "飞书 · Errand Bot · 已连接"]
    finally:
        window.shutdown()


def test_without_a_channel_facade_there_is_nothing_to_connect(qtbot: QtBot) -> None:
    panel = BotPanel(None, None)
    qtbot.addWidget(panel)
    panel.show()
    asked: list[str] = []
    panel.feishuConnectRequested.connect(asked.append)
    assert not panel.connect_row.isVisible()
    panel.connect_feishu()
    assert asked == []


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_the_links_sit_side_by_side_and_one_under_the_other_when_the_panel_is_narrow(
    qtbot: QtBot, channels: FakeChannels, bots: FakeBotFacade, lang: i18n.Language
) -> None:
    i18n.use_language(lang)
    panel = BotPanel(None, None, channels=channels)
    qtbot.addWidget(panel)
    panel.set_bot(await bots.get("bot-1"))
    wechat, feishu = panel.connect_wechat_button, panel.connect_feishu_button
    both = wechat.sizeHint().width() + feishu.sizeHint().width()

    panel.resize(both + 120, 400)
    panel.show()
    await wait_until(lambda: feishu.geometry().left() > wechat.geometry().right())
    assert feishu.geometry().top() == wechat.geometry().top()

    # Narrower than both links, wider than either: the second goes under the first, nothing cut.
    panel.resize(both + 22, 400)  # the column's margins are 16 a side
    await wait_until(lambda: feishu.geometry().top() > wechat.geometry().bottom())
    row = panel.connect_row
    assert feishu.geometry().left() == wechat.geometry().left() == 0
    assert all(b.geometry().right() < row.width() for b in (wechat, feishu))
    assert row.height() >= feishu.geometry().bottom() + 1
    assert all(b.width() == b.sizeHint().width() for b in (wechat, feishu))

"""Connecting a Telegram bot from bot settings' 渠道 and from the bot panel: the dialog takes the token
BotFather gave, refuses an empty or malformed one in place, says Telegram's refusal under the field and
anything else at the bottom, then stays open on the pairing step with the `/start` code and follows the
channel until someone paired. And the Telegram row's words before and after pairing."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from core.changes import ChannelChanged
from core.errors import InvalidInputError, UnavailableError
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_channels import FakeChannels
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from tests.ui.conftest import wait_until
from ui import i18n
from ui.bot_panel import BotPanel
from ui.bot_settings import BotSettingsDialog
from ui.bridge import EventBridge
from ui.channel_settings import ChannelSection
from ui.main_window import MainWindow
from ui.telegram_connect_dialog import TelegramConnectDialog

TOKEN = "7012345678:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"


@pytest.fixture
def channels(facade: FakeChatFacade) -> FakeChannels:
    made = FakeChannels()
    # What the real service does: every change is a ChannelChanged on the bus, which the bridge hands on.
    made.on_change(lambda channel_id: facade.bus.publish(ChannelChanged(channel_id)))
    return made


@pytest.fixture
def settings(
    qtbot: QtBot, bots: FakeBotFacade, channels: FakeChannels, bridge: EventBridge
) -> BotSettingsDialog:
    dialog = BotSettingsDialog(bots, "bot-1", channels=channels, channel_changed=bridge.channelChanged)
    qtbot.addWidget(dialog)
    dialog.resize(640, 760)
    dialog.show()
    return dialog


@pytest.fixture
def window(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    bots: FakeBotFacade,
    channels: FakeChannels,
) -> Iterator[MainWindow]:
    made = MainWindow(
        facade, bridge, tasks=tasks, attention=FakeAttentionFacade(facade), bots=bots, channels=channels
    )
    qtbot.addWidget(made)
    made.show()
    yield made
    made.shutdown()


def section_of(settings: BotSettingsDialog) -> ChannelSection:
    section = settings.channel_section
    assert section is not None
    return section


async def open_connect(settings: BotSettingsDialog) -> TelegramConnectDialog:
    await settings.load()
    section = section_of(settings)
    assert section.connect_telegram_button.isVisible()
    QTest.mouseClick(section.connect_telegram_button, Qt.MouseButton.LeftButton)
    dialog = section.telegram_dialog
    assert dialog is not None
    await wait_until(dialog.isVisible)
    return dialog


async def open_panel(window: MainWindow) -> BotPanel:
    await window.refresh()
    await wait_until(lambda: window.bot_view("bot-1") is not None)
    window.show_bot_panel("bot-1")
    panel = window.bot_panel
    assert panel is not None
    await wait_until(lambda: panel.isVisible() and panel.bot_id == "bot-1")
    return panel


async def connect(dialog: TelegramConnectDialog, token: str = TOKEN) -> None:
    QTest.keyClicks(dialog.token_input, token)
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: dialog.step != "token" or not dialog.busy)


def shown(dialog: TelegramConnectDialog) -> list[str]:
    return [
        b.text() for b in (dialog.cancel_button, dialog.connect_button, dialog.done_button) if b.isVisible()
    ]


# -- the dialog --------------------------------------------------------------------------------------


async def test_connect_telegram_opens_one_dialog_with_the_token_field_and_its_hint(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    section = section_of(settings)
    assert section.connect_telegram_button.text() == "Connect Telegram"
    assert section.connect_feishu_button.isVisible() and section.connect_button.isVisible()
    dialog = await open_connect(settings)

    assert dialog.windowTitle() == "Connect Telegram"
    assert dialog.token_input.echoMode() == dialog.token_input.EchoMode.Password
    assert dialog.token_hint.isVisible()
    assert "@BotFather" in dialog.token_hint.text() and "/newbot" in dialog.token_hint.text()
    assert shown(dialog) == ["Cancel", "Connect"]

    assert section.open_telegram() is dialog  # a second ask brings this one forward
    assert [d for d in settings.window().findChildren(TelegramConnectDialog) if d.isVisible()] == [dialog]
    QTest.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: section.telegram_dialog is None)
    assert channels.calls == []


async def test_an_empty_or_malformed_token_is_refused_in_place_and_nothing_is_asked(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    dialog = await open_connect(settings)
    height = dialog.token_error.height()

    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
    assert dialog.field_error == "Paste the token @BotFather gave you."
    assert dialog.token_error.text() == "Paste the token @BotFather gave you."
    QTest.keyClicks(dialog.token_input, "12345:short")
    assert dialog.field_error == ""  # editing lets go of it
    QTest.keyClick(dialog.token_input, Qt.Key.Key_Return)
    assert dialog.field_error.startswith("That doesn't look like a token from @BotFather")
    assert dialog.token_error.height() == height  # its room was kept, nothing moved
    assert channels.calls == []
    assert dialog.step == "token"


async def test_telegram_s_refusal_is_said_under_the_field_and_being_out_of_reach_at_the_bottom(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    dialog = await open_connect(settings)
    channels.add_error = InvalidInputError("token", "Unauthorized: copy the token from @BotFather again")
    await connect(dialog)
    assert dialog.field_error == "Unauthorized: copy the token from @BotFather again"
    assert dialog.error_text == ""

    channels.add_error = UnavailableError("Telegram could not be reached: timed out")
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: not dialog.busy)
    assert dialog.error_text.startswith("Couldn't connect: ")
    assert dialog.field_error == ""
    assert dialog.step == "token" and channels.ids() == []


async def test_connecting_does_not_wait_then_shows_the_pairing_step_and_pairing_turns_it_to_paired(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channels.add_gate = asyncio.Event()
    dialog = await open_connect(settings)
    QTest.keyClicks(dialog.token_input, f"  {TOKEN} ")
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: bool(channels.calls))
    assert dialog.busy and dialog.connect_button.text() == "Connecting…"
    assert not dialog.connect_button.isEnabled() and dialog.token_input.isReadOnly()
    channels.add_gate.set()
    await wait_until(lambda: dialog.step == "pairing")

    assert channels.configs == [("add", {"token": TOKEN})]
    assert [c for c in channels.calls if c[0] == "add"] == [("add", "bot-1", "telegram")]
    assert dialog.isVisible()  # it stays for the pairing
    assert not dialog.token_input.isVisible()
    assert dialog.open_label.text() == "Open @errand_test_bot in Telegram and send:"
    assert dialog.command_label.text() == "/start 123456"
    assert dialog.command_label.isVisible()
    assert dialog.pair_status.text() == "Once paired, this will say so here."
    assert shown(dialog) == ["Close"]
    QTest.mouseClick(dialog.copy_button, Qt.MouseButton.LeftButton)
    clipboard = QGuiApplication.clipboard()
    assert clipboard is not None and clipboard.text() == "/start 123456"
    assert dialog.copy_button.text() == "Copied"

    section = section_of(settings)
    await wait_until(lambda: len(section.rows) == 1)  # the list behind follows the new channel
    channels.pair(dialog.channel_id)
    await wait_until(lambda: dialog.step == "paired")
    assert dialog.pair_status.text() == "Paired ✓"
    assert shown(dialog) == ["Done"]
    QTest.mouseClick(dialog.done_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: section.telegram_dialog is None)
    await wait_until(lambda: section.rows[0].status_label.text() == "Connected")


async def test_closing_while_it_connects_leaves_no_channel(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channels.add_gate = asyncio.Event()
    dialog = await open_connect(settings)
    QTest.keyClicks(dialog.token_input, TOKEN)
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
    QTest.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    section = section_of(settings)
    await wait_until(lambda: section.telegram_dialog is None)
    channels.add_gate.set()
    await wait_until(lambda: any(c[0] == "remove" for c in channels.calls))
    assert channels.ids() == []


# -- the rows ----------------------------------------------------------------------------------------


async def test_the_settings_row_waits_for_pairing_then_is_connected(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    view = channels.put_telegram()
    await settings.load()
    section = section_of(settings)
    [row] = section.rows
    assert row.title.text() == "Telegram · @errand_test_bot"
    assert row.status_label.text() == "Waiting to pair"
    assert row.dot.state == "needs"
    assert row.reason_label.text() == "Send /start 123456 to pair" and not row.reason_label.isHidden()
    assert row.login_button is None  # never 重新扫码
    assert row.remove_button.isVisible()

    channels.pair(view.id)
    await wait_until(lambda: section.rows[0].status_label.text() == "Connected")
    [row] = section.rows
    assert row.dot.state == "working"
    assert row.reason_label.isHidden()
    channels.set_status(view.id, "login_expired", "the bot's token is no longer in the keyring")
    await wait_until(lambda: section.rows[0].status_label.text() == "Login expired")
    assert section.rows[0].login_button is None


async def test_the_panel_opens_one_dialog_and_lists_the_row(
    window: MainWindow, channels: FakeChannels
) -> None:
    panel = await open_panel(window)
    assert panel.connect_telegram_button.text() == "+ Connect Telegram"
    QTest.mouseClick(panel.connect_telegram_button, Qt.MouseButton.LeftButton)
    dialog = window.telegram_dialog
    assert dialog is not None
    await wait_until(dialog.isVisible)
    assert dialog.parent() is window
    panel.connect_telegram()  # past the dialog's modality
    assert window.open_telegram("bot-1") is dialog
    assert [d for d in window.findChildren(TelegramConnectDialog) if d.isVisible()] == [dialog]

    await connect(dialog)
    await wait_until(lambda: len(panel.channel_rows) == 1)
    assert panel.channel_lines()[1] == "Telegram · @errand_test_bot · Waiting to pair"
    assert panel.channel_rows[0].reason_text == "Send /start 123456 to pair"
    assert panel.channel_rows[0].action_button is None
    channels.pair(dialog.channel_id)
    await wait_until(lambda: dialog.step == "paired")
    await wait_until(lambda: panel.channel_lines()[1] == "Telegram · @errand_test_bot · Connected")
    assert panel.channel_rows[0].reason_text == ""


async def test_in_chinese_the_dialog_and_the_row_read_as_designed(
    qtbot: QtBot, bots: FakeBotFacade, channels: FakeChannels, bridge: EventBridge
) -> None:
    i18n.use_language("zh")
    settings = BotSettingsDialog(bots, "bot-1", channels=channels, channel_changed=bridge.channelChanged)
    qtbot.addWidget(settings)
    settings.show()
    section = section_of(settings)
    assert section.connect_telegram_button.text() == "连接 Telegram"
    dialog = await open_connect(settings)
    assert dialog.windowTitle() == "连接 Telegram"
    assert dialog.token_hint.text() == "在 Telegram 里找 @BotFather 发 /newbot，把它给的 token 粘贴到这里。"
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
    assert dialog.field_error == "请粘贴 @BotFather 给的 token。"
    await connect(dialog)
    assert dialog.open_label.text() == "在 Telegram 里打开 @errand_test_bot，发送："
    assert dialog.command_label.text() == "/start 123456"
    assert dialog.pair_status.text() == "配对后这里会显示已配对。"
    assert dialog.copy_button.text() == "复制"
    await wait_until(lambda: len(section.rows) == 1)
    row = section.rows[0]
    assert (row.title.text(), row.status_label.text()) == ("Telegram · @errand_test_bot", "等待配对")
    assert row.reason_label.text() == "发送 /start 123456 配对"
    channels.pair(dialog.channel_id)
    await wait_until(lambda: dialog.step == "paired")
    assert dialog.pair_status.text() == "已配对 ✓"
    assert dialog.done_button.text() == "完成"
    await wait_until(lambda: section.rows[0].status_label.text() == "已连接")

"""Connecting a Feishu (or Lark) app from bot settings' 渠道: the dialog lists what the app needs, refuses an
empty field in place, tests the app and names its bot, says a refusal under the field it is about (and
lets go of it when the field is edited) or above the buttons, connects and closes, and never holds the
window while the platform answers. Then a Feishu channel's rows in settings and the bot panel, in each of
the long connection's states."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from core.changes import ChannelChanged
from core.channels.feishu.permissions import EVENTS, PERMISSIONS
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
from ui.feishu_connect_dialog import FeishuConnectDialog
from ui.main_window import MainWindow

APP = {"appId": "cli_a1b2c3d4e5f6", "appSecret": "s3cr3t-from-the-console", "domain": "feishu"}


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
    """Shown; pytest-qt closes it after the test."""
    dialog = BotSettingsDialog(bots, "bot-1", channels=channels, channel_changed=bridge.channelChanged)
    qtbot.addWidget(dialog)
    dialog.resize(640, 760)
    dialog.show()
    return dialog


def section_of(settings: BotSettingsDialog) -> ChannelSection:
    section = settings.channel_section
    assert section is not None
    return section


async def open_connect(settings: BotSettingsDialog) -> FeishuConnectDialog:
    await settings.load()
    section = section_of(settings)
    assert section.connect_feishu_button.isVisible()
    QTest.mouseClick(section.connect_feishu_button, Qt.MouseButton.LeftButton)
    dialog = section.feishu_dialog
    assert dialog is not None
    await wait_until(dialog.isVisible)
    return dialog


def fill(dialog: FeishuConnectDialog, app_id: str = APP["appId"], secret: str = APP["appSecret"]) -> None:
    QTest.keyClicks(dialog.app_id_input, app_id)
    QTest.keyClicks(dialog.secret_input, secret)


def places(dialog: FeishuConnectDialog) -> list[tuple[QPoint, int, int]]:
    """Where everything a person reads or presses sits in the dialog, to see that nothing moved."""
    QApplication.processEvents()
    layout = dialog.layout()
    assert layout is not None
    layout.activate()
    widgets: list[QWidget] = [
        dialog.app_id_input,
        dialog.secret_input,
        dialog.domain_combo,
        dialog.test_button,
        dialog.where,
        dialog.connect_button,
        dialog.cancel_button,
    ]
    return [(w.mapTo(dialog, QPoint(0, 0)), w.width(), w.height()) for w in widgets] + [
        (QPoint(0, 0), dialog.width(), dialog.height())
    ]


# -- the dialog --------------------------------------------------------------------------------------


async def test_connect_feishu_opens_a_dialog_that_lists_what_the_app_needs(
    settings: BotSettingsDialog,
) -> None:
    section = section_of(settings)
    assert section.connect_feishu_button.text() == "Connect Feishu"
    assert section.connect_button.text() == "Connect WeChat"  # still there, beside it
    dialog = await open_connect(settings)

    assert dialog.windowTitle() == "Connect Feishu"
    assert dialog.secret_input.echoMode() == dialog.secret_input.EchoMode.Password
    domains = [dialog.domain_combo.itemText(i) for i in range(dialog.domain_combo.count())]
    assert domains == ["Feishu (open.feishu.cn)", "Lark (open.larksuite.com)"]
    lines = dialog.permission_lines()
    assert lines[0] == "im:message · send, reply and update cards as the app"
    assert [line.split(" · ")[0] for line in lines] == [p.scope for p in PERMISSIONS]
    assert [line for line in lines if "optional" in line] == [
        "im:message.history:readonly · catch up on messages sent while the app was off (optional)",
        "im:message.group_msg · catch up on group messages too (optional)",
    ]
    assert dialog.event_lines() == [
        "im.message.receive_v1 · receive messages (event)",
        "card.action.trigger · buttons on cards (callback)",
    ]
    assert [line.split(" · ")[0] for line in dialog.event_lines()] == list(EVENTS)
    assert "Events & Callbacks" in dialog.where.text() and "persistent connection" in dialog.where.text()
    assert dialog.test_button.text() == "Test connection" and dialog.connect_button.text() == "Connect"


async def test_an_empty_field_is_refused_in_place_and_nothing_is_asked(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    dialog = await open_connect(settings)
    before = places(dialog)

    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    assert dialog.field_error("appId") == "Fill in the App ID."
    assert dialog.field_error("appSecret") == "Fill in the App Secret."
    assert dialog.errors["appId"].text() == "Fill in the App ID."  # shown, not only kept
    assert dialog.app_id_input.hasFocus()
    assert places(dialog) == before  # the room for the words was there already

    QTest.keyClicks(dialog.app_id_input, APP["appId"])
    assert dialog.field_error("appId") == ""  # edited: its refusal goes
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
    assert dialog.field_error("appSecret") == "Fill in the App Secret."
    assert dialog.isVisible()
    assert channels.calls == []  # nothing asked of the facade
    assert places(dialog) == before


async def test_testing_the_app_says_its_bot_s_name_and_stores_nothing(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    dialog = await open_connect(settings)
    fill(dialog, secret="  s3cr3t  ")
    dialog.domain_combo.setCurrentIndex(1)  # Lark
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: dialog.result_text == "Connected: Errand Bot")
    assert dialog.test_result.text() == "Connected: Errand Bot"
    assert dialog.test_dot.isVisible()
    assert dialog.test_button.isEnabled() and dialog.test_button.text() == "Test connection"
    assert channels.configs == [
        ("check_app", {"appId": "cli_a1b2c3d4e5f6", "appSecret": "s3cr3t", "domain": "lark"})
    ]
    assert channels.ids() == []

    QTest.keyClicks(dialog.app_id_input, "7")  # another app now: the old answer no longer holds
    assert dialog.result_text == ""
    assert not dialog.test_dot.isVisible()


async def test_a_refused_secret_is_said_under_app_secret_until_it_is_edited(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channels.check_error = InvalidInputError("appSecret", "Feishu refused the app's credentials (10014)")
    dialog = await open_connect(settings)
    fill(dialog)
    before = places(dialog)
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: dialog.field_error("appSecret") != "")
    assert dialog.errors["appSecret"].text() == "Feishu refused the app's credentials (10014)"
    assert dialog.field_error("appId") == "" and dialog.error_text == "" and dialog.result_text == ""
    assert dialog.secret_input.hasFocus()
    assert places(dialog) == before
    # Long words are cut to their room rather than spilling over 域名 (all of them in the tooltip).
    long = (
        "Feishu refused the app's credentials (10014): " + "copy the App Secret again from the console. " * 4
    )
    channels.check_error = InvalidInputError("appSecret", long.strip())
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: dialog.field_error("appSecret") == long.strip())
    shown = dialog.errors["appSecret"]
    assert shown.text().endswith("…") and shown.toolTip() == long.strip()
    assert shown.geometry().bottom() < dialog.domain_combo.geometry().top()
    assert dialog.secret_input.geometry().bottom() < shown.geometry().top()
    assert places(dialog) == before

    QTest.keyClicks(dialog.secret_input, "x")
    assert dialog.field_error("appSecret") == ""
    assert dialog.errors["appSecret"].text() == ""


async def test_a_platform_out_of_reach_is_said_above_the_buttons(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channels.check_error = UnavailableError("Can't reach open.feishu.cn; check the network.")
    dialog = await open_connect(settings)
    fill(dialog)
    before = places(dialog)
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: dialog.error_text != "")
    assert dialog.error.text() == "The test didn't pass: Can't reach open.feishu.cn; check the network."
    assert all(dialog.field_error(field) == "" for field in ("appId", "appSecret", "domain"))
    assert places(dialog) == before


async def test_connect_adds_the_channel_closes_and_its_row_appears(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    dialog = await open_connect(settings)
    section = section_of(settings)
    fill(dialog)
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: section.feishu_dialog is None)
    assert channels.configs == [("add", APP)]
    assert [c for c in channels.calls if c[0] == "add"] == [("add", "bot-1", "feishu")]
    await wait_until(lambda: len(section.rows) == 1 and section.rows[0].isVisible())
    row = section.rows[0]
    assert row.title.text() == "Feishu · Errand Bot"
    assert row.status_label.text() == "Connected"
    assert row.dot.state == "working"
    assert row.login_button is None  # nothing to scan on Feishu
    assert row.remove_button.text() == "Remove"
    assert not section.none_label.isVisible()


async def test_a_refused_app_id_on_connect_keeps_the_dialog_open_under_app_id(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channels.add_error = InvalidInputError("appId", "no app cli_a1b2c3d4e5f6 on Feishu")
    dialog = await open_connect(settings)
    fill(dialog)
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: dialog.field_error("appId") != "")
    assert dialog.errors["appId"].text() == "no app cli_a1b2c3d4e5f6 on Feishu"
    assert dialog.isVisible() and dialog.connect_button.isEnabled()
    assert dialog.connect_button.text() == "Connect"
    assert channels.ids() == []


async def test_the_window_answers_while_the_platform_does_not(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channels.add_gate = asyncio.Event()
    dialog = await open_connect(settings)
    fill(dialog)
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)

    assert dialog.test_button.text() == "Testing…"
    assert not dialog.test_button.isEnabled() and not dialog.connect_button.isEnabled()
    assert dialog.app_id_input.isReadOnly() and not dialog.domain_combo.isEnabled()
    ticked: list[bool] = []
    QTimer.singleShot(20, lambda: ticked.append(True))  # Qt's own events go on while the call is held
    await wait_until(lambda: bool(ticked))
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)  # disabled: a second test isn't asked
    assert [c[0] for c in channels.calls] == ["check_app"]
    assert dialog.cancel_button.isEnabled()

    channels.add_gate.set()
    await wait_until(lambda: dialog.result_text == "Connected: Errand Bot")
    assert dialog.test_button.isEnabled() and dialog.connect_button.isEnabled()
    assert not dialog.app_id_input.isReadOnly()

    channels.add_gate.clear()
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
    assert dialog.connect_button.text() == "Connecting…" and not dialog.test_button.isEnabled()
    await wait_until(lambda: dialog.busy)
    channels.add_gate.set()
    await wait_until(lambda: section_of(settings).feishu_dialog is None)


async def test_closing_while_it_connects_leaves_no_channel(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channels.add_gate = asyncio.Event()
    dialog = await open_connect(settings)
    section = section_of(settings)
    fill(dialog)
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
    QTest.mouseClick(dialog.cancel_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: section.feishu_dialog is None)  # closed at once, the add still held

    channels.add_gate.set()
    await wait_until(lambda: any(c[0] == "remove" for c in channels.calls))
    assert channels.ids() == []
    await wait_until(lambda: channels.reads > 0 and section.rows == [])


async def test_in_chinese_the_dialog_reads_as_designed(settings: BotSettingsDialog) -> None:
    i18n.use_language("zh")
    dialog = await open_connect(settings)
    assert dialog.windowTitle() == "连接飞书"
    assert dialog.domain_combo.itemText(0) == "飞书（open.feishu.cn）"
    assert (
        dialog.permission_lines()[3] == "im:message.history:readonly · 应用没开着时的消息，启动后补上（可选）"
    )
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    assert dialog.field_error("appId") == "请填上 App ID。"
    fill(dialog)
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    assert dialog.test_button.text() == "正在测试…"
    await wait_until(lambda: dialog.result_text == "已连上：Errand Bot")


# -- a Feishu channel's rows -------------------------------------------------------------------------


async def test_settings_rows_say_the_long_connection_s_state(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channels.put_feishu(status="reconnecting")
    channels.put_feishu(
        status="unhealthy",
        app_id="cli_lark01",
        name="",
        domain="lark",
        reason="2 messages came in only by catch-up",
    )
    channels.put_feishu(status="error", name="Ops Bot", reason="the app was disabled in the console")
    await settings.load()
    section = section_of(settings)
    await wait_until(lambda: len(section.rows) == 3 and all(r.isVisible() for r in section.rows))

    reconnecting, unhealthy, failed = section.rows
    assert [r.title.text() for r in section.rows] == [
        "Feishu · Errand Bot",
        "Lark · cli_lark01",
        "Feishu · Ops Bot",
    ]
    assert [r.status_label.text() for r in section.rows] == ["Reconnecting", "Connection trouble", "Error"]
    assert [r.dot.state for r in section.rows] == ["needs", "needs", "failed"]
    assert not reconnecting.reason_label.isVisible()
    assert unhealthy.reason_label.isVisible()
    assert unhealthy.reason_label.text() == "2 messages came in only by catch-up"
    assert failed.reason_label.text() == "the app was disabled in the console"
    assert (
        unhealthy.accessibleName()
        == "Lark · cli_lark01 · Connection trouble: 2 messages came in only by catch-up"
    )
    assert all(r.login_button is None for r in section.rows)  # never 重新扫码 on Feishu

    QTest.mouseClick(failed.remove_button, Qt.MouseButton.LeftButton)
    assert failed.confirm.text.text().startswith("Remove this Feishu channel?")
    await wait_until(lambda: failed.confirm.delete_button.height() > 0)  # laid out where it was asked
    QTest.mouseClick(failed.confirm.delete_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: len(section.rows) == 2)
    assert [c for c in channels.calls if c[0] == "remove"] == [("remove", "bot-1", failed.view.id)]


@pytest.fixture
def channel_window(
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


async def open_panel(window: MainWindow) -> BotPanel:
    await window.refresh()
    await wait_until(lambda: window.bot_view("bot-1") is not None)
    assert window.panel_button is not None
    QTest.mouseClick(window.panel_button, Qt.MouseButton.LeftButton)
    panel = window.bot_panel
    assert panel is not None
    await wait_until(panel.isVisible)
    return panel


async def test_the_panel_says_reconnecting_and_trouble_and_follows_the_connection(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    feishu = channels.put_feishu(status="reconnecting")
    channels.put_feishu(
        status="unhealthy", domain="lark", name="Lark Bot", reason="catch-up found 2 missed messages"
    )
    panel = await open_panel(channel_window)
    await wait_until(lambda: len(panel.channel_rows) == 2)

    assert panel.channel_lines() == [
        "Desktop · Connected",
        "Feishu · Errand Bot · Reconnecting",
        "Lark · Lark Bot · Connection trouble",
    ]
    reconnecting, unhealthy = panel.channel_rows
    assert [row.dot.state for row in panel.channel_rows] == ["needs", "needs"]
    assert unhealthy.reason_text == "catch-up found 2 missed messages"
    assert reconnecting.reason_text == ""
    assert all(row.action_button is None for row in panel.channel_rows)  # nothing to scan

    channels.set_status(feishu.id, "connected")
    await wait_until(lambda: panel.channel_lines()[1] == "Feishu · Errand Bot · Connected")
    assert panel.channel_rows[0].dot.state == "working"


async def test_in_chinese_the_rows_read_as_designed(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    i18n.use_language("zh")
    channels.put_feishu(status="reconnecting")
    channels.put_feishu(status="unhealthy", reason="补拉发现 2 条漏掉的消息")
    panel = await open_panel(channel_window)
    await wait_until(lambda: len(panel.channel_rows) == 2)
    assert panel.channel_lines()[1:] == ["飞书 · Errand Bot · 正在重连", "飞书 · Errand Bot · 连接异常"]
    assert panel.channel_rows[1].accessibleName() == "飞书 · Errand Bot · 连接异常：补拉发现 2 条漏掉的消息"

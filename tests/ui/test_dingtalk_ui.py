"""Connecting a DingTalk app from bot settings' 渠道 and from the bot panel: the dialog lists what the app
needs, refuses an empty or malformed field in place before anything is asked, tests the app and names it
by its AppKey, says DingTalk's refusal under the field it is about until that field is edited, connects
and closes, and never holds the window while DingTalk answers. Then a DingTalk channel's row in settings
with the groups it was added to, each allowed or not in place."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget
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
from ui.bot_settings import BotSettingsDialog
from ui.bridge import EventBridge
from ui.channel_settings import ChannelSection, SettingsChannelRow
from ui.dingtalk_connect_dialog import DingTalkConnectDialog
from ui.main_window import MainWindow

APP = {"appKey": "dingabc123xyz", "appSecret": "s3cr3t-from-the-console"}


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


async def open_connect(settings: BotSettingsDialog) -> DingTalkConnectDialog:
    await settings.load()
    section = section_of(settings)
    assert section.connect_dingtalk_button.isVisible()
    QTest.mouseClick(section.connect_dingtalk_button, Qt.MouseButton.LeftButton)
    dialog = section.dingtalk_dialog
    assert dialog is not None
    await wait_until(dialog.isVisible)
    return dialog


def fill(dialog: DingTalkConnectDialog, key: str = APP["appKey"], secret: str = APP["appSecret"]) -> None:
    QTest.keyClicks(dialog.app_key_input, key)
    QTest.keyClicks(dialog.secret_input, secret)


def places(dialog: DingTalkConnectDialog) -> list[tuple[QPoint, int, int]]:
    """Where everything a person reads or presses sits in the dialog, to see that nothing moved."""
    QApplication.processEvents()
    layout = dialog.layout()
    assert layout is not None
    layout.activate()
    widgets: list[QWidget] = [
        dialog.app_key_input,
        dialog.secret_input,
        dialog.robot_code_input,
        dialog.test_button,
        dialog.where,
        dialog.connect_button,
        dialog.cancel_button,
    ]
    return [(w.mapTo(dialog, QPoint(0, 0)), w.width(), w.height()) for w in widgets] + [
        (QPoint(0, 0), dialog.width(), dialog.height())
    ]


# -- the dialog --------------------------------------------------------------------------------------


async def test_connect_dingtalk_opens_a_dialog_that_says_what_the_app_needs(
    settings: BotSettingsDialog,
) -> None:
    section = section_of(settings)
    assert section.connect_dingtalk_button.text() == "Connect DingTalk"
    dialog = await open_connect(settings)

    assert dialog.windowTitle() == "Connect DingTalk"
    assert dialog.secret_input.echoMode() == dialog.secret_input.EchoMode.Password
    assert dialog.robot_code_input.placeholderText() == "Optional: the AppKey if left empty"
    assert [line.split(" · ")[0] for line in dialog.ability_lines()] == ["Robot", "Stream mode"]
    assert [line.split(" · ")[0] for line in dialog.permission_lines()] == [
        "qyapi_robot_sendmsg",
        "Card.Instance.Write",
        "Card.Streaming.Write",
    ]
    assert "open-dev.dingtalk.com" in dialog.where.text() and "allow that group" in dialog.where.text()
    assert dialog.test_button.text() == "Test connection" and dialog.connect_button.text() == "Connect"


async def test_an_empty_app_key_is_refused_under_its_field_and_nothing_is_asked(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    dialog = await open_connect(settings)
    before = places(dialog)

    QTest.keyClicks(dialog.secret_input, APP["appSecret"])
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
    assert dialog.field_error("appKey") == "Fill in the AppKey."
    assert dialog.errors["appKey"].text() == "Fill in the AppKey."  # shown, not only kept
    assert dialog.field_error("appSecret") == "" and dialog.field_error("robotCode") == ""
    assert dialog.app_key_input.hasFocus()
    assert places(dialog) == before  # the room for the words was there already

    # Every bad field is said at once, in our words, still without asking DingTalk.
    dialog.secret_input.clear()
    QTest.keyClicks(dialog.app_key_input, "ab")
    QTest.keyClicks(dialog.robot_code_input, "not a code!")
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    assert dialog.field_error("appKey").startswith("That doesn't look like an AppKey")
    assert dialog.field_error("appSecret") == "Fill in the AppSecret."
    assert dialog.field_error("robotCode").startswith("That doesn't look like a RobotCode")
    assert dialog.isVisible()
    assert channels.calls == []
    assert places(dialog) == before


async def test_testing_the_app_names_its_app_key_and_stores_nothing(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    dialog = await open_connect(settings)
    fill(dialog, secret="  s3cr3t  ")
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: dialog.result_text == "Connected: AppKey dingabc123xyz")
    assert dialog.test_result.text() == "Connected: AppKey dingabc123xyz"
    assert dialog.test_dot.isVisible()
    assert dialog.test_button.isEnabled() and dialog.test_button.text() == "Test connection"
    # An empty RobotCode is left out: the service takes the AppKey.
    assert channels.configs == [("check_app", {"appKey": "dingabc123xyz", "appSecret": "s3cr3t"})]
    assert channels.ids() == []

    QTest.keyClicks(dialog.robot_code_input, "dingrobot42")  # another robot now: the old answer goes
    assert dialog.result_text == ""
    assert not dialog.test_dot.isVisible()


async def test_a_refused_secret_is_said_under_app_secret_until_it_is_edited(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channels.check_error = InvalidInputError("appSecret", "DingTalk refused the app's credentials")
    dialog = await open_connect(settings)
    fill(dialog)
    before = places(dialog)
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: dialog.field_error("appSecret") != "")
    assert dialog.errors["appSecret"].text() == "DingTalk refused the app's credentials"
    assert dialog.field_error("appKey") == "" and dialog.error_text == "" and dialog.result_text == ""
    assert dialog.secret_input.hasFocus()
    assert places(dialog) == before

    QTest.keyClicks(dialog.app_key_input, "9")  # another field: the secret's refusal still holds
    assert dialog.field_error("appSecret") != ""
    QTest.keyClicks(dialog.secret_input, "x")
    assert dialog.field_error("appSecret") == ""
    assert dialog.errors["appSecret"].text() == ""


async def test_dingtalk_out_of_reach_is_said_above_the_buttons(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channels.add_error = UnavailableError("Can't reach api.dingtalk.com; check the network.")
    dialog = await open_connect(settings)
    fill(dialog)
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: dialog.error_text != "")
    assert dialog.error.text() == "Couldn't connect: Can't reach api.dingtalk.com; check the network."
    assert dialog.isVisible() and dialog.connect_button.isEnabled()
    assert channels.ids() == []


async def test_connect_adds_the_channel_closes_and_its_row_appears(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    dialog = await open_connect(settings)
    section = section_of(settings)
    fill(dialog)
    QTest.keyClicks(dialog.robot_code_input, "dingrobot42")
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: section.dingtalk_dialog is None)
    assert channels.configs == [("add", {**APP, "robotCode": "dingrobot42"})]
    assert [c for c in channels.calls if c[0] == "add"] == [("add", "bot-1", "dingtalk")]
    await wait_until(lambda: len(section.rows) == 1 and section.rows[0].isVisible())
    row = section.rows[0]
    assert row.title.text() == "DingTalk · dingabc123xyz"
    assert row.status_label.text() == "Connected"
    assert row.dot.state == "working"
    assert row.login_button is None  # nothing to scan on DingTalk
    assert row.groups is not None and row.groups.rows == []
    assert row.groups.none_label.text().startswith("Add the robot to a group")


async def test_the_window_answers_while_dingtalk_does_not(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channels.add_gate = asyncio.Event()
    dialog = await open_connect(settings)
    fill(dialog)
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)

    assert dialog.test_button.text() == "Testing…"
    assert not dialog.test_button.isEnabled() and not dialog.connect_button.isEnabled()
    assert dialog.app_key_input.isReadOnly() and dialog.robot_code_input.isReadOnly()
    ticked: list[bool] = []
    QTimer.singleShot(20, lambda: ticked.append(True))  # Qt's own events go on while the call is held
    await wait_until(lambda: bool(ticked))
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)  # disabled: a second test isn't asked
    assert [c[0] for c in channels.calls] == ["check_app"]
    assert dialog.cancel_button.isEnabled()

    channels.add_gate.set()
    await wait_until(lambda: dialog.result_text == "Connected: AppKey dingabc123xyz")
    assert not dialog.app_key_input.isReadOnly()

    channels.add_gate.clear()
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)
    assert dialog.connect_button.text() == "Connecting…" and not dialog.test_button.isEnabled()
    ticked.clear()
    QTimer.singleShot(20, lambda: ticked.append(True))
    await wait_until(lambda: bool(ticked))
    assert dialog.isVisible() and dialog.busy  # still waiting, and the window still went on
    channels.add_gate.set()
    await wait_until(lambda: section_of(settings).dingtalk_dialog is None)


async def test_in_chinese_the_dialog_reads_as_designed(settings: BotSettingsDialog) -> None:
    i18n.use_language("zh")
    dialog = await open_connect(settings)
    assert dialog.windowTitle() == "连接钉钉"
    assert dialog.ability_lines()[1] == "Stream 模式 · 机器人的消息接收模式选它，不用填消息接收地址"
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    assert dialog.field_error("appKey") == "请填上 AppKey。"
    assert dialog.field_error("appSecret") == "请填上 AppSecret。"
    fill(dialog)
    QTest.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    assert dialog.test_button.text() == "正在测试…"
    await wait_until(lambda: dialog.result_text == "已连上：AppKey dingabc123xyz")


# -- a DingTalk channel's groups ---------------------------------------------------------------------


async def shown_row(settings: BotSettingsDialog) -> SettingsChannelRow:
    await settings.load()
    section = section_of(settings)
    await wait_until(lambda: len(section.rows) == 1 and section.rows[0].isVisible())
    return section.rows[0]


async def test_a_dingtalk_row_lists_its_groups_each_with_the_answer_that_changes_it(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channel = channels.put_dingtalk()
    channels.add_group(channel.id, "cid_quiet", "Chit-chat", "refused")
    channels.add_group(channel.id, "cid_ops", "Ops on call", "allowed")
    channels.add_group(channel.id, "cid_product", "Product talk")
    row = await shown_row(settings)

    assert row.title.text() == "DingTalk · dingabc123xyz"
    assert row.groups is not None and row.groups.isVisible()
    assert row.groups.heading.text() == "Groups"
    assert [g.title.text() for g in row.groups.rows] == ["Product talk", "Ops on call", "Chit-chat"]
    assert [g.state_label.text() for g in row.groups.rows] == ["Waiting for you", "Allowed", "Not allowed"]
    assert [g.dot.state for g in row.groups.rows] == ["needs", "working", "idle"]
    assert [[b.text() for b in g.buttons] for g in row.groups.rows] == [
        ["Allow", "Don't allow"],
        ["Don't allow"],
        ["Allow"],
    ]
    assert all(b.isVisible() for g in row.groups.rows for b in g.buttons)
    assert not row.groups.none_label.isVisible()

    QTest.mouseClick(row.remove_button, Qt.MouseButton.LeftButton)
    assert row.confirm.text.text().startswith("Remove this DingTalk channel?")


async def test_allowing_a_group_asks_the_facade_and_its_row_changes(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channel = channels.put_dingtalk()
    channels.add_group(channel.id, "cid_product", "Product talk")
    row = await shown_row(settings)
    assert row.groups is not None
    group = row.groups.rows[0]
    assert group.allow_button is not None

    channels.admit_gate = asyncio.Event()
    QTest.mouseClick(group.allow_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: any(c[0] == "admit_group" for c in channels.calls))
    assert not group.allow_button.isEnabled() and group.refuse_button is not None
    assert not group.refuse_button.isEnabled()  # a second answer cannot cross the first
    channels.admit_gate.set()

    section = section_of(settings)

    def shown_state() -> str:
        shown = section.row(channel.id)
        rows = shown.groups.rows if shown is not None and shown.groups is not None else []
        return rows[0].state_label.text() if rows and rows[0].isVisible() else ""

    await wait_until(lambda: shown_state() == "Allowed")
    assert [c for c in channels.calls if c[0] == "admit_group"] == [
        ("admit_group", "bot-1", channel.id, "cid_product", "allowed")
    ]
    shown = section.row(channel.id)
    assert shown is not None and shown.groups is not None
    assert [b.text() for b in shown.groups.rows[0].buttons] == ["Don't allow"]

    QTest.mouseClick(shown.groups.rows[0].buttons[0], Qt.MouseButton.LeftButton)
    await wait_until(lambda: shown_state() == "Not allowed")
    assert channels.calls[-1] == ("admit_group", "bot-1", channel.id, "cid_product", "refused")


async def test_an_answer_that_fails_says_why_and_gives_the_buttons_back(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    channel = channels.put_dingtalk()
    channels.add_group(channel.id, "cid_product", "Product talk")
    channels.admit_error = UnavailableError("Can't reach api.dingtalk.com; check the network.")
    row = await shown_row(settings)
    assert row.groups is not None
    group = row.groups.rows[0]
    assert group.refuse_button is not None
    section = section_of(settings)

    QTest.mouseClick(group.refuse_button, Qt.MouseButton.LeftButton)
    await wait_until(section.error.isVisible)
    said = "Couldn't change that group: Can't reach api.dingtalk.com; check the network."
    assert section.error.text() == said
    assert group.refuse_button.isEnabled() and group.state_label.text() == "Waiting for you"


async def test_in_chinese_the_groups_read_as_designed(
    settings: BotSettingsDialog, channels: FakeChannels
) -> None:
    i18n.use_language("zh")
    channel = channels.put_dingtalk()
    channels.add_group(channel.id, "cid_ops", "运维值班群", "allowed")
    channels.add_group(channel.id, "cid_product", "")
    row = await shown_row(settings)
    assert row.title.text() == "钉钉 · dingabc123xyz"
    assert row.groups is not None
    assert [g.accessibleName() for g in row.groups.rows] == ["未命名的群 · 等你允许", "运维值班群 · 已允许"]
    assert [[b.text() for b in g.buttons] for g in row.groups.rows] == [["允许", "不允许"], ["不允许"]]


# -- the bot panel -----------------------------------------------------------------------------------


async def test_the_panel_s_connect_dingtalk_link_opens_the_dialog_for_its_bot(
    qtbot: QtBot, window: MainWindow, channels: FakeChannels
) -> None:
    await window.refresh()
    await wait_until(lambda: window.bot_view("bot-1") is not None)
    window.show_bot_panel("bot-1")
    panel = window.bot_panel
    assert panel is not None
    await wait_until(lambda: panel.isVisible() and panel.bot_id == "bot-1")
    assert panel.connect_dingtalk_button.isVisible()
    assert panel.connect_dingtalk_button.text() == "+ Connect DingTalk"

    with qtbot.waitSignal(panel.dingtalkConnectRequested, timeout=2000) as asked:
        QTest.mouseClick(panel.connect_dingtalk_button, Qt.MouseButton.LeftButton)
    assert asked.args == ["bot-1"]
    dialog = window.dingtalk_dialog
    assert dialog is not None
    await wait_until(dialog.isVisible)
    assert dialog.windowTitle() == "Connect DingTalk" and dialog.parent() is window
    fill(dialog)
    QTest.mouseClick(dialog.connect_button, Qt.MouseButton.LeftButton)

    await wait_until(lambda: window.dingtalk_dialog is None)
    await wait_until(lambda: len(panel.channel_rows) == 1)
    assert panel.channel_lines() == ["Desktop · Connected", "DingTalk · dingabc123xyz · Connected"]

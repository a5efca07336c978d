"""A bot's channels in the window: the panel's 渠道 rows in each status, the WeChat login dialog from its QR
code through scan, verify code and connected (or an expired code, or a failure), a WeChat conversation that
is read here and answered there, removing a channel only after a confirm, and needs-you's 重新扫码; last,
the same login over a real host against the fake iLink server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from core.changes import ChannelChanged
from core.channels.views import LoginProgress
from core.host import Host
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_channels import QR_URL, FakeChannels
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_ilink import FakeILink
from tests.fakes.fake_tasks import FakeTaskFacade
from tests.fakes.model_server import ScriptedModelServer
from tests.integration.host_fixtures import make_host
from tests.ui.conftest import wait_until
from ui import i18n
from ui.bot_panel import BotPanel
from ui.bot_settings import BotSettingsDialog
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.qr_image import QUIET_ZONE, qr_matrix
from ui.wechat_login_dialog import WeChatLoginDialog


@pytest.fixture
def channels(facade: FakeChatFacade) -> FakeChannels:
    made = FakeChannels()
    # What the real service does: every change is a ChannelChanged on the bus, which the bridge hands on.
    made.on_change(lambda channel_id: facade.bus.publish(ChannelChanged(channel_id)))
    return made


@pytest.fixture
def attention(facade: FakeChatFacade) -> FakeAttentionFacade:
    return FakeAttentionFacade(facade)


@pytest.fixture
def channel_window(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    attention: FakeAttentionFacade,
    bots: FakeBotFacade,
    channels: FakeChannels,
) -> Iterator[MainWindow]:
    made = MainWindow(facade, bridge, tasks=tasks, attention=attention, bots=bots, channels=channels)
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


async def connect_wechat(window: MainWindow) -> WeChatLoginDialog:
    panel = await open_panel(window)
    QTest.mouseClick(panel.connect_wechat_button, Qt.MouseButton.LeftButton)
    dialog = window.login_dialog
    assert dialog is not None
    await wait_until(lambda: dialog.step == "scan")
    return dialog


def shown_modules(image: QImage, size: int) -> list[list[bool]]:
    """Read the code back off the drawn image: dark or light at the centre of each module."""
    side = size + 2 * QUIET_ZONE
    scale = image.width() / side
    rows = []
    for y in range(size):
        row = []
        for x in range(size):
            px = int((x + QUIET_ZONE + 0.5) * scale)
            py = int((y + QUIET_ZONE + 0.5) * scale)
            row.append(QColor(image.pixel(px, py)).lightness() < 128)
        rows.append(row)
    return rows


# -- the panel's 渠道 group ---------------------------------------------------------------------------------


async def test_the_panel_shows_each_channel_in_words_and_follows_its_changes(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    ok = channels.put(account="wxid_ok@im.bot")
    channels.put(status="connecting", account="", login=LoginProgress("wait", QR_URL.format(n=1), 1))
    channels.put(status="login_expired", account="wxid_old@im.bot", reason="WeChat ended the session")
    channels.put(status="error", account="wxid_bad@im.bot", reason="the poll failed 3 times")
    channels.put(bot_id="bot-2", account="wxid_other@im.bot")  # another bot's: not in this panel
    panel = await open_panel(channel_window)

    await wait_until(lambda: len(panel.channel_rows) == 4)
    assert panel.channel_lines() == [
        "Desktop · Connected",
        "WeChat · wxid_ok · Connected",
        "WeChat · Connecting",
        "WeChat · wxid_old · Login expired",
        "WeChat · wxid_bad · Error",
    ]
    connected, connecting, expired, failed = panel.channel_rows
    assert [row.dot.state for row in panel.channel_rows] == ["working", "idle", "failed", "failed"]
    assert failed.reason_text == "the poll failed 3 times"
    assert failed.accessibleName() == "WeChat · wxid_bad · Error: the poll failed 3 times"
    assert expired.reason_text == "WeChat ended the session"
    # Only the row a new scan helps offers it; a login waiting for the person can be shown again.
    assert expired.action_button is not None and expired.action_button.text() == "Scan again"
    assert connecting.action_button is not None and connecting.action_button.text() == "Show code"
    assert connected.action_button is None
    assert panel.connect_wechat_button.isVisible()

    channels.expire_login(ok.id)  # announced on the bus; the bridge's channelChanged re-reads
    await wait_until(lambda: panel.channel_lines()[1] == "WeChat · wxid_ok · Login expired")


async def test_without_channels_the_panel_shows_the_desktop_only(channel_window: MainWindow) -> None:
    panel = await open_panel(channel_window)
    await panel.reload()
    assert panel.channel_lines() == ["Desktop · Connected"]
    assert panel.channels_group.isVisible()


async def test_scan_again_on_an_expired_row_starts_a_new_login(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    old = channels.put(status="login_expired", account="wxid_old@im.bot")
    panel = await open_panel(channel_window)
    await wait_until(lambda: len(panel.channel_rows) == 1)
    button = panel.channel_rows[0].action_button
    assert button is not None
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)

    dialog = channel_window.login_dialog
    assert dialog is not None
    await wait_until(lambda: dialog.step == "scan")
    assert ("log_in_again", "bot-1", old.id) in channels.calls
    assert dialog.windowTitle() == "Sign in to WeChat again"


async def test_show_code_follows_the_login_under_way_without_starting_another(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    waiting = channels.put(
        status="connecting", account="", login=LoginProgress("scanned", QR_URL.format(n=1), 1)
    )
    panel = await open_panel(channel_window)
    await wait_until(lambda: len(panel.channel_rows) == 1)
    button = panel.channel_rows[0].action_button
    assert button is not None and button.text() == "Show code"
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)

    dialog = channel_window.login_dialog
    assert dialog is not None
    await wait_until(lambda: dialog.status_label.text() == "Scanned. Confirm on your phone")
    assert not dialog.qr_label.pixmap().isNull()
    assert channels.calls == []  # no new login: the one under way goes on
    channels.confirm(waiting.id)
    await wait_until(lambda: channel_window.login_dialog is None)
    assert channels.ids() == [waiting.id]


# -- the login dialog ------------------------------------------------------------------------------------


async def test_connect_wechat_shows_the_login_s_code_without_waiting_for_it(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    channels.add_gate = asyncio.Event()
    panel = await open_panel(channel_window)
    QTest.mouseClick(panel.connect_wechat_button, Qt.MouseButton.LeftButton)
    dialog = channel_window.login_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.status_label.text() == "Getting a QR code…"
    assert dialog.qr_label.pixmap().isNull()

    channels.add_gate.set()
    await wait_until(lambda: not dialog.qr_label.pixmap().isNull())
    assert channels.calls[0] == ("add", "bot-1", "wechat")
    assert dialog.status_label.text() == "Scan this code with WeChat"
    image = dialog.qr_label.pixmap().toImage()
    assert image.deviceIndependentSize().width() >= 220
    assert QColor(image.pixel(2, 2)) == QColor("#ffffff")  # the quiet zone is white in either scheme
    expected = qr_matrix(QR_URL.format(n=1))
    assert shown_modules(image, len(expected)) == expected
    assert dialog.hint.text() == "Only the person who scans can talk to this bot on WeChat."


async def test_the_login_goes_from_scanned_to_the_verify_code_to_connected(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    dialog = await connect_wechat(channel_window)
    channel_id = dialog.channel_id

    channels.scan(channel_id)
    await wait_until(lambda: dialog.status_label.text() == "Scanned. Confirm on your phone")
    assert not dialog.code_box.isVisible()

    channels.ask_verify_code(channel_id)
    await wait_until(dialog.code_box.isVisible)
    assert dialog.status_label.text() == "Type the code your phone shows"
    QTest.keyClicks(dialog.code_input, "12")
    QTest.mouseClick(dialog.code_button, Qt.MouseButton.LeftButton)
    assert dialog.code_error.isVisible()
    assert dialog.code_error.text() == "Type the 4 to 8 digits your phone shows."
    assert dialog.isVisible() and channels.codes_entered == []

    dialog.code_input.clear()
    QTest.keyClicks(dialog.code_input, "482913")
    QTest.keyClick(dialog.code_input, Qt.Key.Key_Return)
    assert channels.codes_entered == [(channel_id, "482913")]
    assert not dialog.code_error.isVisible()
    assert dialog.status_label.text() == "Sent; waiting for WeChat…"

    connected: list[str] = []
    dialog.connected.connect(connected.append)
    channels.confirm(channel_id)
    await wait_until(lambda: dialog.status_label.text() == "Connected")
    assert dialog.dot.state == "working"
    assert connected == [channel_id]
    await wait_until(lambda: channel_window.login_dialog is None)  # it closed by itself
    assert channels.ids() == [channel_id]  # and the channel stays
    panel = channel_window.bot_panel
    assert panel is not None
    channels.connect(channel_id)
    await wait_until(lambda: panel.channel_lines()[-1] == "WeChat · wxid_a1b2c3 · Connected")


async def test_an_expired_code_is_replaced_and_counted_then_the_login_fails_with_try_again(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    dialog = await connect_wechat(channel_window)
    first = dialog.qr_label.pixmap().toImage()

    channels.expire_code(dialog.channel_id)
    await wait_until(lambda: dialog.status_label.text() == "The code expired; here is a new one (2/3)")
    second = dialog.qr_label.pixmap().toImage()
    assert second != first
    expected = qr_matrix(QR_URL.format(n=2))
    assert shown_modules(second, len(expected)) == expected

    channels.expire_code(dialog.channel_id)
    await wait_until(lambda: "(3/3)" in dialog.status_label.text())
    channels.expire_code(dialog.channel_id)
    await wait_until(lambda: dialog.step == "failed")
    assert dialog.status_label.text() == "The login didn't finish"
    assert dialog.reason_label.text() == "the QR code expired 3 times; start again to get a new one"
    assert dialog.dot.state == "failed"
    assert dialog.qr_label.pixmap().isNull()  # a dead code is not left looking scannable
    assert dialog.retry_button.isVisible() and dialog.close_button.text() == "Close"

    QTest.mouseClick(dialog.retry_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: dialog.status_label.text() == "Scan this code with WeChat")
    assert channels.calls[-1] == ("log_in_again", "bot-1", dialog.channel_id)
    assert not dialog.retry_button.isVisible() and not dialog.reason_label.isVisible()


async def test_a_login_that_cannot_start_says_why(channel_window: MainWindow, channels: FakeChannels) -> None:
    channels.add_error = RuntimeError("WeChat gave no QR code: 502")
    panel = await open_panel(channel_window)
    QTest.mouseClick(panel.connect_wechat_button, Qt.MouseButton.LeftButton)
    dialog = channel_window.login_dialog
    assert dialog is not None
    await wait_until(lambda: dialog.step == "failed")
    assert dialog.status_label.text() == "The login didn't finish"
    assert dialog.reason_label.text() == "WeChat gave no QR code: 502"

    channels.add_error = None
    QTest.mouseClick(dialog.retry_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: dialog.step == "scan")
    assert [call[0] for call in channels.calls] == ["add", "add"]


async def test_closing_a_new_login_before_it_connects_leaves_no_channel(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    dialog = await connect_wechat(channel_window)
    assert dialog.close_button.text() == "Cancel"
    QTest.mouseClick(dialog.close_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: channels.ids() == [])
    assert channel_window.login_dialog is None


async def test_in_chinese_the_dialog_reads_as_designed(
    channel_window: MainWindow, channels: FakeChannels
) -> None:
    i18n.use_language("zh")
    dialog = await connect_wechat(channel_window)
    assert dialog.windowTitle() == "连接微信"
    assert dialog.status_label.text() == "请用微信扫码"
    channels.scan(dialog.channel_id)
    await wait_until(lambda: dialog.status_label.text() == "已扫码，请在手机上确认")
    channels.ask_verify_code(dialog.channel_id)
    await wait_until(lambda: dialog.status_label.text() == "请输入手机上显示的验证码")
    assert dialog.code_button.text() == "确定"
    channels.expire_code(dialog.channel_id)
    await wait_until(lambda: dialog.status_label.text() == "二维码已过期，已换新码（2/3）")


# -- conversations from a channel ------------------------------------------------------------------------


async def test_a_wechat_conversation_is_read_here_and_answered_there(
    channel_window: MainWindow, facade: FakeChatFacade
) -> None:
    desktop = facade.add_conversation("Here", updated_at=1_000.0)
    wechat = facade.add_conversation("Zhang San", channel="wechat", updated_at=2_000.0)
    facade.add_message(wechat.id, "user", "Where is the report?")
    await channel_window.refresh()
    chat = channel_window.chat_view
    await wait_until(lambda: chat.conversation_id == wechat.id and bool(chat.message_widgets()))

    assert chat.composer.isHidden()
    assert chat.reply_elsewhere.isVisible()
    assert chat.reply_elsewhere.text() == "Reply in WeChat"
    listed = channel_window.conversation_list
    names = {
        str(listed.model().index(i, 0).data(Qt.ItemDataRole.AccessibleTextRole))
        for i in range(listed.model().rowCount())
    }
    assert "Zhang San · WeChat" in names and "Here" in names

    channel_window.open_conversation(desktop.id)
    await wait_until(lambda: chat.conversation_id == desktop.id)
    assert chat.composer.isVisible()
    assert not chat.reply_elsewhere.isVisible()


async def test_in_chinese_a_wechat_conversation_says_reply_in_wechat(
    channel_window: MainWindow, facade: FakeChatFacade
) -> None:
    i18n.use_language("zh")
    facade.add_conversation("张三", channel="wechat")
    await channel_window.refresh()
    chat = channel_window.chat_view
    await wait_until(chat.reply_elsewhere.isVisible)
    assert chat.reply_elsewhere.text() == "在微信里回复"
    assert chat.composer.isHidden()


# -- bot settings ----------------------------------------------------------------------------------------


async def open_settings(
    qtbot: QtBot, bots: FakeBotFacade, channels: FakeChannels, bridge: EventBridge
) -> BotSettingsDialog:
    dialog = BotSettingsDialog(bots, "bot-1", channels=channels, channel_changed=bridge.channelChanged)
    qtbot.addWidget(dialog)
    dialog.show()
    await dialog.load()
    return dialog


async def test_removing_a_channel_asks_first(
    qtbot: QtBot, bots: FakeBotFacade, channels: FakeChannels, bridge: EventBridge
) -> None:
    kept = channels.put(account="wxid_kept@im.bot")
    gone = channels.put(status="login_expired", account="wxid_gone@im.bot")
    dialog = await open_settings(qtbot, bots, channels, bridge)
    section = dialog.channel_section
    assert section is not None
    await wait_until(lambda: len(section.rows) == 2 and all(row.isVisible() for row in section.rows))
    assert [row.accessibleName() for row in section.rows] == [
        "WeChat · wxid_kept · Connected",
        "WeChat · wxid_gone · Login expired",
    ]
    assert section.rows[0].login_button is None
    assert section.rows[1].login_button is not None
    assert section.rows[1].login_button.text() == "Scan again"

    row = section.rows[1]
    QTest.mouseClick(row.remove_button, Qt.MouseButton.LeftButton)
    assert row.confirm.isVisible()
    assert row.confirm.text.text().startswith("Remove this WeChat channel?")
    assert not any(call[0] == "remove" for call in channels.calls)
    QTest.mouseClick(row.confirm.cancel_button, Qt.MouseButton.LeftButton)
    assert not row.confirm.isVisible()
    assert channels.ids() == [kept.id, gone.id]

    QTest.mouseClick(row.remove_button, Qt.MouseButton.LeftButton)
    QTest.mouseClick(row.confirm.delete_button, Qt.MouseButton.LeftButton)
    await wait_until(lambda: [r.view.id for r in section.rows] == [kept.id])
    assert [c for c in channels.calls if c[0] == "remove"] == [("remove", "bot-1", gone.id)]  # once
    dialog.reject()


async def test_settings_connects_wechat_and_say_when_there_is_none_yet(
    qtbot: QtBot, bots: FakeBotFacade, channels: FakeChannels, bridge: EventBridge
) -> None:
    dialog = await open_settings(qtbot, bots, channels, bridge)
    section = dialog.channel_section
    assert section is not None
    await wait_until(lambda: channels.reads > 0)
    assert section.none_label.isVisible()
    assert section.none_label.text() == "Only the desktop so far."

    QTest.mouseClick(section.connect_button, Qt.MouseButton.LeftButton)
    login = section.login_dialog
    assert login is not None
    await wait_until(lambda: login.step == "scan")
    await wait_until(lambda: len(section.rows) == 1)  # the new channel is listed while it logs in
    assert section.rows[0].accessibleName() == "WeChat · Connecting"
    assert not section.none_label.isVisible()
    dialog.reject()


# -- needs-you -------------------------------------------------------------------------------------------


async def test_needs_you_scan_again_opens_the_login_for_that_channel(
    channel_window: MainWindow, channels: FakeChannels, attention: FakeAttentionFacade
) -> None:
    expired = channels.put(status="login_expired", account="wxid_old@im.bot")
    attention.add_channel_login(expired.id, reason="WeChat ended the session")
    await channel_window.refresh()
    channel_window.show_needs_you()
    page = channel_window.needs_you
    assert page is not None
    await wait_until(lambda: len(page.rows) == 1)
    row = page.rows[0]
    assert row.subject.text() == "WeChat login expired"
    assert row.button_texts() == ["Scan again"]

    QTest.mouseClick(row.button("Scan again"), Qt.MouseButton.LeftButton)
    await wait_until(lambda: channel_window.login_dialog is not None)
    dialog = channel_window.login_dialog
    assert dialog is not None
    await wait_until(lambda: dialog.step == "scan")
    assert attention.acted == [(f"channel_login:{expired.id}", "open", {})]
    assert ("log_in_again", "bot-1", expired.id) in channels.calls
    assert not dialog.qr_label.pixmap().isNull()


# -- over a real host ------------------------------------------------------------------------------------


@pytest.fixture
async def ilink() -> AsyncIterator[FakeILink]:
    async with FakeILink(hold_s=0.2) as server:
        server.qr_script = ["wait", "need_verifycode", "confirmed"]
        yield server


@pytest.fixture
async def wechat_host(tmp_path: Path, ilink: FakeILink) -> AsyncIterator[Host]:
    async with ScriptedModelServer() as model_server:
        made = make_host(
            tmp_path / "data",
            model_server.base_url,
            home=tmp_path / "home",
            environ={"ERRAND_WECHAT_BASE_URL": ilink.base_url},
        )
        await made.start()
        yield made
        await made.stop()


async def test_connecting_wechat_through_the_real_host(
    qtbot: QtBot, wechat_host: Host, ilink: FakeILink
) -> None:
    host = wechat_host
    bridge = EventBridge(host.bus)
    window = MainWindow(
        host.chat, bridge, attention=host.attention, bots=host.desktop_bots, channels=host.channels
    )
    qtbot.addWidget(window)
    window.show()
    try:
        await window.refresh()
        await wait_until(lambda: bool(window.current_bot_id()))
        window.show_bot_panel()
        panel = window.bot_panel
        assert panel is not None
        QTest.mouseClick(panel.connect_wechat_button, Qt.MouseButton.LeftButton)
        dialog = window.login_dialog
        assert dialog is not None

        await wait_until(lambda: dialog.step == "verify", timeout=10)
        image = dialog.qr_label.pixmap().toImage()
        expected = qr_matrix(f"{ilink.base_url}/qr")  # the code's content, as the platform gave it
        assert shown_modules(image, len(expected)) == expected
        QTest.keyClicks(dialog.code_input, "482913")
        QTest.keyClick(dialog.code_input, Qt.Key.Key_Return)

        await wait_until(lambda: window.login_dialog is None, timeout=10)
        assert any(poll.get("verify_code") == "482913" for poll in ilink.qr_polls)
        await wait_until(lambda: panel.channel_lines()[-1:] == ["WeChat · bot-1 · Connected"], timeout=10)
    finally:
        window.shutdown()
        bridge.close()

"""Render a bot's channels in the window to PNG files, in both schemes, to look at them.

    .venv/bin/python -m bench.render_channels [OUT_DIR] [--lang zh|en]

Runs offscreen. For both schemes it writes into OUT_DIR (default /tmp/errand-shots):
channels-panel-<scheme>-<lang>.png (the bot panel's 渠道 group: the desktop, a connected, an expired and a
failed WeChat channel, a Feishu one in trouble, 连接微信 and 连接飞书),
channels-login-qr-<scheme>-<lang>.png (the login dialog showing its QR code),
channels-login-verify-<scheme>-<lang>.png (the verify-code step with
too few digits refused), channels-login-expired-<scheme>-<lang>.png (a second code after the first expired),
channels-login-failed-<scheme>-<lang>.png (a failed login with 再试一次), channels-chat-<scheme>-<lang>.png
(a WeChat conversation: 「在微信里回复」 in place of the composer, 微信 after its title in the sidebar),
channels-settings-<scheme>-<lang>.png (bot settings' 渠道 section with a removal being confirmed), and for
Feishu: channels-feishu-empty-<scheme>-<lang>.png (连接飞书 as it opens), channels-feishu-tested-...
(after 测试连接 named the bot), channels-feishu-missing-... (empty fields refused in place),
channels-feishu-refused-... (a secret the platform refused), channels-feishu-unavailable-... (the platform
out of reach, said above the buttons) and channels-feishu-settings-... (a 渠道 section with Feishu and Lark
rows: connected, reconnecting, unhealthy); for Telegram: channels-telegram-refused-<scheme>-<lang>.png (a
malformed token refused under its field), channels-telegram-pairing-... (the pairing step with the /start
code), channels-telegram-paired-... (已配对) and channels-telegram-settings-... (a 渠道 section with a
Telegram row waiting for pairing).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QScrollArea, QWidget

from bench.render_runner import render_main, settle
from core.changes import ChannelChanged
from core.errors import InvalidInputError, UnavailableError
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_channels import FakeChannels
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from ui import i18n, theme
from ui.bot_settings import BotSettingsDialog
from ui.bridge import EventBridge
from ui.main_window import MainWindow


async def render(app: QApplication, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language) -> list[Path]:
    i18n.use_language(lang)
    theme.apply_theme(app, scheme)
    zh = lang == "zh"
    chat = FakeChatFacade(bot_name="天天")
    tasks = FakeTaskFacade(chat)
    bots = FakeBotFacade(chat.bus)
    bots.add("天天", bot_id="bot-1", avatar="teal")
    channels = FakeChannels()
    channels.on_change(lambda channel_id: chat.bus.publish(ChannelChanged(channel_id)))
    bridge = EventBridge(chat.bus)
    window = MainWindow(
        chat, bridge, tasks=tasks, attention=FakeAttentionFacade(chat), bots=bots, channels=channels
    )
    window.resize(1180, 760)
    window.show()
    paths: list[Path] = []

    def save(name: str, widget: QWidget) -> None:
        path = out_dir / f"channels-{name}-{scheme}-{lang}.png"
        widget.grab().save(str(path))
        paths.append(path)

    gpu = "GPU 价格调研" if zh else "GPU prices"
    chat.add_conversation(gpu, "三家云的报价比好了" if zh else "Compared three clouds")
    wechat = chat.add_conversation("张三" if zh else "Zhang San", channel="wechat")
    chat.add_message(wechat.id, "user", "周报写好了吗?" if zh else "Is the weekly report done?")
    chat.add_message(
        wechat.id, "assistant", "写好了，放在 reports/周报.md。" if zh else "Yes, it's in reports/weekly.md."
    )
    channels.put(account="wxid_tiantian01@im.bot")
    channels.put(
        status="login_expired",
        account="wxid_work02@im.bot",
        reason="微信结束了这次登录" if zh else "WeChat ended the session",
    )
    channels.put(status="error", account="wxid_home03@im.bot", reason="the connection failed; see the log")
    channels.put_feishu(
        status="unhealthy",
        reason="补拉发现 2 条长连接没送到的消息" if zh else "catch-up found 2 messages it missed",
    )

    await window.refresh()
    window.open_conversation(wechat.id)
    window.show_bot_panel("bot-1")
    await settle()
    save("panel", window)
    window.set_bot_panel_visible(False)
    await settle()
    save("chat", window)

    dialog = window.open_channel_login("bot-1")
    await settle()
    if dialog is not None:
        save("login-qr", dialog)
        channels.ask_verify_code(dialog.channel_id)
        await settle()
        dialog.code_input.setText("12")
        dialog.submit_code()
        await settle()
        save("login-verify", dialog)
        channels.expire_code(dialog.channel_id)
        await settle()
        save("login-expired", dialog)
        channels.fail(dialog.channel_id, "the QR code expired 3 times; start again to get a new one")
        await settle()
        save("login-failed", dialog)
        dialog.reject()
        await settle()

    settings = BotSettingsDialog(
        bots, "bot-1", window, channels=channels, channel_changed=bridge.channelChanged
    )
    settings.resize(640, 760)
    settings.show()
    await settings.load()
    await settle()
    section = settings.channel_section
    if section is not None and len(section.rows) > 1:
        section.rows[1].ask_remove()
        await settle()
        scroll = settings.findChild(QScrollArea, "settingsScroll")
        if scroll is not None:
            scroll.ensureWidgetVisible(section.connect_button, 0, 40)
        await settle()
    save("settings", settings)
    settings.reject()

    await render_feishu(bots, window, save, zh)
    await render_telegram(bots, window, save)

    window.shutdown()
    bridge.close()
    window.close()
    window.deleteLater()
    return paths


async def render_feishu(
    bots: FakeBotFacade, window: MainWindow, save: Callable[[str, QWidget], None], zh: bool
) -> None:
    """连接飞书 empty, tested, refused and out of reach; then a 渠道 section with Feishu and Lark rows."""
    channels = FakeChannels()
    settings = BotSettingsDialog(bots, "bot-1", window, channels=channels)
    settings.resize(640, 760)
    settings.show()
    await settings.load()
    await settle()
    section = settings.channel_section
    if section is None:
        settings.reject()
        return
    dialog = section.open_feishu()
    await settle()
    save("feishu-empty", dialog)
    QTest.keyClicks(dialog.app_id_input, "cli_a5f3e2d1c0b9a8f7")
    QTest.keyClicks(dialog.secret_input, "kXq4Vb9mN2pLr7Ts8Wy3Zc")
    dialog.test_app()
    await settle()
    save("feishu-tested", dialog)
    for field in (dialog.app_id_input, dialog.secret_input):  # erased as a person would
        field.selectAll()
        QTest.keyClick(field, Qt.Key.Key_Backspace)
    dialog.test_app()  # both refused here, before anything is asked
    await settle()
    save("feishu-missing", dialog)
    QTest.keyClicks(dialog.app_id_input, "cli_a5f3e2d1c0b9a8f7")
    QTest.keyClicks(dialog.secret_input, "wrong-secret")
    dialog.domain_combo.setCurrentIndex(1)
    refused = (
        "飞书不认这组 App ID 和 App Secret（10014），请到「凭证与基础信息」里重新复制"
        if zh
        else "Lark did not accept this App ID and App Secret (10014); copy both again from Credentials"
    )
    channels.check_error = InvalidInputError("appSecret", refused)
    dialog.test_app()
    await settle()
    save("feishu-refused", dialog)
    channels.check_error = UnavailableError(
        "连不上 open.larksuite.com，请检查网络或代理。"
        if zh
        else "Can't reach open.larksuite.com; check the network or proxy."
    )
    QTest.keyClicks(dialog.secret_input, "x")
    dialog.test_app()
    await settle()
    save("feishu-unavailable", dialog)
    dialog.reject()
    await settle()

    channels.put_feishu()
    channels.put_feishu(status="reconnecting", name="运维助手" if zh else "Ops Helper")
    channels.put_feishu(
        status="unhealthy",
        app_id="cli_b7c8d9e0f1a2",
        name="",
        domain="lark",
        reason="补拉发现 2 条长连接没送到的消息"
        if zh
        else "catch-up found 2 messages the connection never delivered",
    )
    await settings.load()
    await settle()
    scroll = settings.findChild(QScrollArea, "settingsScroll")
    if scroll is not None:
        scroll.ensureWidgetVisible(section.connect_feishu_button, 0, 40)
    await settle()
    save("feishu-settings", settings)
    settings.reject()
    await settle()


async def render_telegram(
    bots: FakeBotFacade, window: MainWindow, save: Callable[[str, QWidget], None]
) -> None:
    """连接 Telegram with a malformed token refused, the pairing step, paired; then a 渠道 section with a
    Telegram row waiting for its pairing code beside a paired one."""
    channels = FakeChannels()
    settings = BotSettingsDialog(bots, "bot-1", window, channels=channels)
    settings.resize(640, 760)
    settings.show()
    await settings.load()
    await settle()
    section = settings.channel_section
    if section is None:
        settings.reject()
        return
    dialog = section.open_telegram()
    await settle()
    QTest.keyClicks(dialog.token_input, "7012345678:AAHdq")
    dialog.connect_bot()
    await settle()
    save("telegram-refused", dialog)
    dialog.token_input.setText("7012345678:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1")
    dialog.connect_bot()
    await settle()
    save("telegram-pairing", dialog)
    channels.pair(dialog.channel_id)
    dialog.show_view(channels.channel(dialog.channel_id))
    await settle()
    save("telegram-paired", dialog)
    dialog.accept()
    await settle()

    channels.put_telegram(name="@tiantian_helper_bot")
    await settings.load()
    await settle()
    scroll = settings.findChild(QScrollArea, "settingsScroll")
    if scroll is not None:
        scroll.ensureWidgetVisible(section.connect_telegram_button, 0, 40)
    await settle()
    save("telegram-settings", settings)
    settings.reject()
    await settle()


def main() -> None:
    render_main(__doc__, render)


if __name__ == "__main__":
    main()

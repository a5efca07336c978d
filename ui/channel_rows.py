"""A bot's chat channels as the bot panel's 渠道 group and the bot settings show them
(docs/desktop.md#channels):

    ● 桌面                                   已连接
    ● 微信 · wxid_a1b2c3                     已连接      green: connected
    ● 微信 · wxid_d4e5f6                 登录已过期      red: only a new scan brings it back
      WeChat ended the session (-14)      [重新扫码]
    ● 微信                                   连接中      grey: a login under way, or before the first poll
                                         [查看二维码]
    ● 飞书 · Errand Bot                     正在重连      amber: Feishu's long connection is being made again
    ● Lark · cli_a1b2c3                     连接异常      amber: connected, but messages went missing
      catch-up found 2 messages the connection missed
    ● Telegram · @errand_bot                等待配对      amber: nobody sent the pairing code yet
      发送 /start 123456 配对
    ● 钉钉 · dingabc123                       已连接      a DingTalk app goes by its AppKey (no robot name)

`BotChannels` reads one bot's channels through the ChannelFacade while the view is shown and says `changed`
when they differ; the words and dots live here so both places say the same thing.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QPushButton, QWidget

from core.channels.facade import ChannelFacade
from core.channels.views import ChannelView
from ui import theme
from ui.bot_scoped_list import BotScopedList
from ui.elided_text import ElidedText
from ui.i18n import t
from ui.status_dot import StatusDot
from ui.theme import DotState
from ui.wrapped_label import WrappedLabel

log = logging.getLogger(__name__)

STATUSES = ("connected", "connecting", "reconnecting", "unhealthy", "login_expired", "error")
# Still there, but not as it should be: the dot turns amber and the reason (if any) goes under the row.
TROUBLED = ("reconnecting", "unhealthy")
# Only something the person does brings these back: red, with the reason under the row.
FAILED = ("login_expired", "error")
# A login that is still asking the person for something: its code can be shown again.
LIVE_LOGIN = ("wait", "scanned", "need_verify_code")
# The channels logged in by scanning a QR code; the others (Feishu, DingTalk) connect with an app's
# credentials, Telegram with a bot token.
QR_KINDS = ("wechat",)


def kind_name(kind: str) -> str:
    """「微信」 for wechat, 「飞书」 for feishu, 「钉钉」 for dingtalk, 「Telegram」 for telegram,
    「桌面」 for the desktop; an unknown kind as it is spelt."""
    if kind == "desktop":
        return t("task.channel.desktop")
    key = f"channel.{kind}"
    named = t(key)
    return kind if named == key else named


def platform_name(view: ChannelView) -> str:
    """The kind as the person knows it: a Feishu channel on Lark's domain is 「Lark」."""
    if view.kind == "feishu" and view.domain == "lark":
        return t("channel.lark")
    return kind_name(view.kind)


def channel_title(view: ChannelView) -> str:
    """「微信 · wxid_a1b2c3」, or just 「微信」 before an account is known. The account's @domain adds
    nothing a person recognises. A Feishu app's bot goes by its own name (「飞书 · Errand Bot」), else by
    the app id; a DingTalk app, which tells no robot name, by its AppKey (「钉钉 · dingabc123」); a
    Telegram bot by its @username (「Telegram · @errand_bot」)."""
    account = view.name or view.account.split("@", 1)[0]
    return f"{platform_name(view)} · {account}" if account else platform_name(view)


def awaiting_pairing(view: ChannelView) -> bool:
    """A Telegram bot nobody paired with yet: its code is shown until the owner sends it. A channel that
    failed or is in trouble says that instead."""
    return bool(view.pairing_code) and not view.owner and known_status(view) in ("connected", "connecting")


def known_status(view: ChannelView) -> str:
    return view.status if view.status in STATUSES else "error"


def is_failed(view: ChannelView) -> bool:
    return known_status(view) in FAILED


def shown_reason(view: ChannelView) -> str:
    """The reason said under the row: why it failed, what is wrong while it is troubled, or what to send
    to pair."""
    if awaiting_pairing(view):
        return t("channels.pairing_line", code=view.pairing_code)
    return view.reason if known_status(view) in (*FAILED, *TROUBLED) else ""


def channel_dot(view: ChannelView) -> DotState:
    status = known_status(view)
    if awaiting_pairing(view):
        return "needs"
    if status == "connected":
        return "working"
    if status in TROUBLED:
        return "needs"
    if status in FAILED:
        return "failed"
    return "idle"


def status_word(view: ChannelView) -> str:
    """已连接 / 连接中 / 正在重连 / 连接异常 / 登录已过期 / 出错, or 等待配对 for a Telegram bot nobody
    paired with yet."""
    if awaiting_pairing(view):
        return t("channels.status.awaiting_pairing")
    return t(f"channels.status.{known_status(view)}")


def status_words(view: ChannelView) -> str:
    """The whole state in words: 「出错：<reason>」 for an error, 「连接异常：<reason>」 for a troubled
    connection, else the status word."""
    status = known_status(view)
    if status == "error" and view.reason:
        return t("channels.error_line", reason=view.reason)
    if status in TROUBLED and view.reason:
        return t("channels.status_line", status=status_word(view), reason=view.reason)
    return status_word(view)


def login_live(view: ChannelView) -> bool:
    return view.status == "connecting" and view.login is not None and view.login.status in LIVE_LOGIN


def row_action(view: ChannelView) -> str:
    """What a row offers: 'again' (重新扫码) when only a new scan helps, 'show' (查看二维码) while a login
    waits for the person, '' otherwise. Only a QR login is scanned: a Feishu row offers neither."""
    if view.kind not in QR_KINDS:
        return ""
    if view.status in FAILED:
        return "again"
    if login_live(view):
        return "show"
    return ""


class PanelChannelRow(QWidget):
    """One channel in the panel: ● name ··· status; under it the reason and the one action that helps.
    `loginRequested(channel_id, again)`: the person pressed 重新扫码 (again) or 查看二维码."""

    loginRequested = Signal(str, bool)

    def __init__(self, view: ChannelView | None, parent: QWidget | None = None) -> None:
        """`view` None is the desktop's own row, which is always there and always connected."""
        super().__init__(parent)
        self.setObjectName("panelChannelRow")
        self.view = view
        self.dot = StatusDot(channel_dot(view) if view else "working", 7, self)
        # No colour of its own: the palette's text follows a change of scheme.
        self.title = ElidedText(channel_title(view) if view else kind_name("desktop"), 1, self)
        self.title.setObjectName("panelChannelTitle")
        self.status_label = QLabel(status_word(view) if view else t("panel.connected"), self)
        self.status_label.setObjectName("panelChannelStatus")
        failed = view is not None and is_failed(view)
        self.status_label.setProperty("role", "danger" if failed else "muted")
        self.status_label.setFont(theme.font("small"))
        detail = shown_reason(view) if view is not None else ""
        self.reason_label = WrappedLabel(detail, self)
        self.reason_label.setObjectName("panelChannelReason")
        self.reason_label.setTextFormat(Qt.TextFormat.PlainText)
        self.reason_label.setProperty("role", "faint")
        self.reason_label.setFont(theme.font("small"))
        self.reason_label.setVisible(bool(detail))
        action = row_action(view) if view is not None else ""
        self.action_button: QPushButton | None = None
        grid = QGridLayout(self)
        grid.setContentsMargins(12, 9, 12, 9)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(2)
        grid.addWidget(self.dot, 0, 0, Qt.AlignmentFlag.AlignVCenter)
        grid.addWidget(self.title, 0, 1)
        grid.addWidget(self.status_label, 0, 2, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight)
        grid.addWidget(self.reason_label, 1, 1)
        if action:
            label = t("channels.scan_again") if action == "again" else t("channels.show_code")
            self.action_button = QPushButton(label, self)
            self.action_button.setObjectName("panelChannelAction")
            self.action_button.setFlat(True)
            self.action_button.setCursor(Qt.CursorShape.PointingHandCursor)
            self.action_button.setFont(theme.font("small"))
            self.action_button.clicked.connect(lambda _checked=False: self._ask(action == "again"))
            grid.addWidget(self.action_button, 1, 2, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignRight)
        grid.setColumnStretch(1, 1)
        words = status_words(view) if view is not None else t("panel.connected")
        self.setAccessibleName(f"{self.title.text()} · {words}")

    @property
    def status_text(self) -> str:
        return self.status_label.text()

    @property
    def reason_text(self) -> str:
        return "" if self.reason_label.isHidden() else self.reason_label.text()

    def _ask(self, again: bool) -> None:
        if self.view is not None:
            self.loginRequested.emit(self.view.id, again)


class BotChannels(BotScopedList[ChannelView]):
    """One bot's channels, read while a view shows them."""

    def __init__(self, channels: ChannelFacade, parent: QObject | None = None) -> None:
        super().__init__(channels.of_bot, "channels.load_failed", parent)

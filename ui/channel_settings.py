"""Bot settings' 渠道 section (docs/desktop.md#channels): the bot's channels, each with what can be done to
it, and 连接微信, 连接飞书, 连接钉钉 and 连接 Telegram at the end:

    渠道    ● 微信 · wxid_a1b2c3   已连接                              [移除]
            ● 微信 · wxid_d4e5f6   登录已过期               [重新扫码] [移除]
              移除这个微信渠道?它不再收消息,登录也会清除;已有的对话会保留。
              [移除] [取消]                                    asked in place before anything goes
            ● 飞书 · Errand Bot    正在重连                            [移除]
            ● Telegram · @errand_bot  等待配对                         [移除]
              发送 /start 123456 配对
            ● 钉钉 · dingabc123   已连接                               [移除]
              群聊                                       the groups it was added to (ui.channel_groups)
              ● 产品讨论群                 等你允许           [允许] [不允许]
              ● 运维值班群                   已允许                  [不允许]
            [连接微信] [连接飞书] [连接钉钉] [连接 Telegram]
                      ui.feishu_connect_dialog, ui.dingtalk_connect_dialog, ui.telegram_connect_dialog

Everything here acts at once through the ChannelFacade (a login, a removal, a group allowed or not), not on
the dialog's Save: a channel is not a setting that waits. The section re-reads on the bridge's
`channelChanged`.
"""

from __future__ import annotations

import contextlib
import logging

from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from core.channels.facade import ChannelFacade
from core.channels.views import ChannelView
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.channel_groups import GroupList
from ui.channel_rows import (
    QR_KINDS,
    BotChannels,
    channel_dot,
    channel_title,
    is_failed,
    platform_name,
    row_action,
    shown_reason,
    status_word,
    status_words,
)
from ui.delete_confirm import DeleteConfirm
from ui.dingtalk_connect_dialog import DingTalkConnectDialog, open_dingtalk_connect
from ui.elided_text import ElidedText
from ui.feishu_connect_dialog import FeishuConnectDialog, open_feishu_connect
from ui.form import Section, button, small_label
from ui.i18n import t
from ui.link_flow import LinkFlow
from ui.status_dot import StatusDot
from ui.telegram_connect_dialog import TelegramConnectDialog, open_telegram_connect
from ui.wechat_login_dialog import WeChatLoginDialog, open_wechat_login

log = logging.getLogger(__name__)


class SettingsChannelRow(QWidget):
    """● name  status ··· [重新扫码] [移除], and the in-place confirm under it."""

    def __init__(self, view: ChannelView, section: ChannelSection) -> None:
        super().__init__(section.well)
        self.setObjectName("settingsRow")
        self.view = view
        self._section = section
        self.dot = StatusDot(channel_dot(view), 8, self)
        # No colour of its own: the palette's text follows a change of scheme.
        self.title = ElidedText(channel_title(view), 1, self)
        self.title.setObjectName("settingsChannelTitle")
        self.status_label = QLabel(status_word(view), self)
        self.status_label.setObjectName("settingsChannelStatus")
        self.status_label.setProperty("role", "danger" if is_failed(view) else "muted")
        self.status_label.setFont(theme.font("small"))
        # The reason goes under the name, where it may wrap, so the name keeps its room.
        self.reason_label = small_label(shown_reason(view), "faint", "settingsHint", self)
        self.reason_label.setContentsMargins(self.dot.sizeHint().width() + 8, 0, 0, 0)
        action = row_action(view)
        self.login_button: QPushButton | None = None
        if action:
            label = t("channels.scan_again") if action == "again" else t("channels.show_code")
            self.login_button = button(label, self)
            self.login_button.clicked.connect(
                lambda _checked=False: section.open_login(view.id, again=action == "again")
            )
        self.remove_button = button(t("channels.remove"), self, "quiet")
        self.remove_button.clicked.connect(lambda _checked=False: self.ask_remove())
        # A QR login's channel forgets its login; an app's channel the app's credentials; Telegram its token.
        if view.kind in QR_KINDS:
            question = t("channels.remove_confirm")
        elif view.kind == "telegram":
            question = t("channels.remove_confirm_telegram")
        else:
            question = t("channels.remove_confirm_app", channel=platform_name(view))
        self.confirm = DeleteConfirm(
            question,
            (t("channels.remove"), t("channels.removing"), t("settings.cancel")),
            lambda: section.remove(self),
            self.cancel_remove,
            self,
        )
        line = QHBoxLayout()
        line.setSpacing(8)
        line.addWidget(self.dot, 0, Qt.AlignmentFlag.AlignVCenter)
        line.addWidget(self.title, 1)
        line.addWidget(self.status_label, 0, Qt.AlignmentFlag.AlignVCenter)
        line.addSpacing(6)
        if self.login_button is not None:
            line.addWidget(self.login_button)
        line.addWidget(self.remove_button)
        column = QVBoxLayout(self)
        column.setContentsMargins(14, 8, 14, 8)
        column.setSpacing(6)
        column.addLayout(line)
        column.addWidget(self.reason_label)
        # Only DingTalk asks before it works in a group: its groups wait here for the owner's word.
        self.groups: GroupList | None = None
        if view.kind == "dingtalk":
            self.groups = GroupList(
                view.groups, lambda group_id, allowed: section.admit(view.id, group_id, allowed), self
            )
            self.groups.setContentsMargins(self.dot.sizeHint().width() + 8, 0, 0, 0)
            column.addWidget(self.groups)
        column.addWidget(self.confirm)
        self.setAccessibleName(f"{channel_title(view)} · {status_words(view)}")

    def ask_remove(self) -> None:
        self.remove_button.setEnabled(False)
        self.confirm.ask()

    def cancel_remove(self) -> None:
        self.confirm.hide()
        self.remove_button.setEnabled(True)


class ChannelSection(Section):
    def __init__(
        self,
        channels: ChannelFacade,
        bot_id: str,
        parent: QWidget,
        changed: SignalInstance | None = None,
    ) -> None:
        super().__init__(t("panel.channels"), parent)
        self._channels = channels
        self._bot_id = bot_id
        self._changed = changed
        self._calls = AsyncCalls()
        self._shut = False
        self._reader = BotChannels(channels, self)
        self._reader.set_bot(bot_id)
        self._reader.changed.connect(self._show)
        self._reader.failed.connect(self._say)
        self.rows: list[SettingsChannelRow] = []
        self.login_dialog: WeChatLoginDialog | None = None
        self.feishu_dialog: FeishuConnectDialog | None = None
        self.telegram_dialog: TelegramConnectDialog | None = None
        self.dingtalk_dialog: DingTalkConnectDialog | None = None
        self.none_label = small_label(t("channels.none"), "faint", "settingsHint", self.well)
        self.connect_button = button(t("channels.connect_wechat"), self.well)
        self.connect_button.clicked.connect(lambda _checked=False: self.open_login(""))
        self.connect_feishu_button = button(t("channels.connect_feishu"), self.well)
        self.connect_feishu_button.clicked.connect(lambda _checked=False: self.open_feishu())
        self.connect_dingtalk_button = button(t("channels.connect_dingtalk"), self.well)
        self.connect_dingtalk_button.clicked.connect(lambda _checked=False: self.open_dingtalk())
        self.connect_telegram_button = button(t("channels.connect_telegram"), self.well)
        self.connect_telegram_button.clicked.connect(lambda _checked=False: self.open_telegram())
        self.error = small_label("", "danger", "settingsError", self.well)
        self._tail = QWidget(self.well)
        # Side by side while they fit; a narrow window (or longer English words) puts them on two lines.
        self.connect_row = QWidget(self.well)
        buttons = LinkFlow(self.connect_row, spacing=8, line_spacing=8)
        buttons.addWidget(self.connect_button)
        buttons.addWidget(self.connect_feishu_button)
        buttons.addWidget(self.connect_dingtalk_button)
        buttons.addWidget(self.connect_telegram_button)
        tail = QVBoxLayout(self._tail)
        tail.setContentsMargins(14, 10, 14, 10)
        tail.setSpacing(6)
        tail.addWidget(self.none_label)
        tail.addWidget(self.connect_row)
        tail.addWidget(self.error)
        self.add(self._tail)
        if changed is not None:
            changed.connect(self.on_channel_changed)

    def load(self) -> None:
        self._reader.request()

    def on_channel_changed(self, _channel_id: str) -> None:
        if self.isVisible():
            self._reader.request()

    def shutdown(self) -> None:
        self._shut = True  # a dialog closed from here on is not followed by a read
        self._reader.reset()
        self._calls.cancel_all()
        for dialog in (self.login_dialog, self.feishu_dialog, self.dingtalk_dialog, self.telegram_dialog):
            if dialog is not None:
                with contextlib.suppress(RuntimeError):  # gone with the settings dialog already
                    dialog.reject()

    def row(self, channel_id: str) -> SettingsChannelRow | None:
        return next((r for r in self.rows if r.view.id == channel_id), None)

    # -- what the rows ask -----------------------------------------------------------------------------

    def open_login(self, channel_id: str, again: bool = True) -> WeChatLoginDialog:
        if self.login_dialog is not None:
            self.login_dialog.raise_()
            return self.login_dialog
        dialog = open_wechat_login(
            self._channels,
            self._bot_id,
            self._calls,
            channel_id=channel_id,
            again=again,
            changed=self._changed,
            parent=self.window(),
        )
        dialog.finished.connect(lambda _result: self._login_closed(dialog))
        self.login_dialog = dialog
        return dialog

    def open_feishu(self) -> FeishuConnectDialog:
        """连接飞书: the app's credentials, checked and connected in the dialog; the list follows on close."""
        if self.feishu_dialog is not None:
            self.feishu_dialog.raise_()
            return self.feishu_dialog
        dialog = open_feishu_connect(self._channels, self._bot_id, self._calls, parent=self.window())
        dialog.finished.connect(lambda _result: self._feishu_closed(dialog))
        self.feishu_dialog = dialog
        return dialog

    def open_dingtalk(self) -> DingTalkConnectDialog:
        """连接钉钉: the app's credentials, checked and connected in the dialog; the list follows on close."""
        if self.dingtalk_dialog is not None:
            self.dingtalk_dialog.raise_()
            return self.dingtalk_dialog
        dialog = open_dingtalk_connect(self._channels, self._bot_id, self._calls, parent=self.window())
        dialog.finished.connect(lambda _result: self._dingtalk_closed(dialog))
        self.dingtalk_dialog = dialog
        return dialog

    def open_telegram(self) -> TelegramConnectDialog:
        """连接 Telegram: the bot's token connected in the dialog, which then waits for the pairing."""
        if self.telegram_dialog is not None:
            self.telegram_dialog.raise_()
            return self.telegram_dialog
        dialog = open_telegram_connect(
            self._channels, self._bot_id, self._calls, changed=self._changed, parent=self.window()
        )
        dialog.finished.connect(lambda _result: self._telegram_closed(dialog))
        self.telegram_dialog = dialog
        return dialog

    def remove(self, row: SettingsChannelRow) -> None:
        row.confirm.set_busy(True)
        self.error.hide()
        channel_id = row.view.id
        self._calls.start(
            self._channels.remove(self._bot_id, channel_id),
            done=lambda _none: self.load(),
            failed=lambda exc: self._not_removed(channel_id, exc),
        )

    def admit(self, channel_id: str, group_id: str, allowed: bool) -> None:
        """允许 or 不允许 on one of a DingTalk channel's groups; the rows are read again once it is done."""
        self.error.hide()
        self._calls.start(
            self._channels.admit_group(self._bot_id, channel_id, group_id, allowed=allowed),
            done=lambda _view: self.load(),
            failed=lambda exc: self._not_admitted(channel_id, group_id, exc),
        )

    # -- showing ---------------------------------------------------------------------------------------

    def _show(self) -> None:
        layout = self.well.layout()
        assert layout is not None
        # Rows and their lines go; the tail (the 连接 buttons) and the line above it are built again below.
        while layout.count():
            item = layout.takeAt(0)
            widget = item.widget() if item is not None else None
            if widget is not None and widget is not self._tail:
                widget.hide()
                widget.deleteLater()
        self.rows = []
        for view in self._reader.views:
            row = SettingsChannelRow(view, self)
            self.add(row)
            self.rows.append(row)
        self.add(self._tail)
        self.none_label.setVisible(not self.rows)

    def _say(self, text: str) -> None:
        self.error.setText(text)
        self.error.show()

    def _not_removed(self, channel_id: str, exc: Exception) -> None:
        row = self.row(channel_id)
        if row is not None:
            row.confirm.set_busy(False)
            row.cancel_remove()
        log.info("removing channel %s refused: %s", channel_id, reason(exc))
        self._say(t("channels.remove_failed", reason=reason(exc)))

    def _not_admitted(self, channel_id: str, group_id: str, exc: Exception) -> None:
        row = self.row(channel_id)
        shown = row.groups.row(group_id) if row is not None and row.groups is not None else None
        if shown is not None:
            shown.set_busy(False)
        log.info("admitting group %s of channel %s refused: %s", group_id, channel_id, reason(exc))
        self._say(t("channels.group_failed", reason=reason(exc)))

    def _login_closed(self, dialog: WeChatLoginDialog) -> None:
        if self.login_dialog is dialog:
            self.login_dialog = None
        if not self._shut:
            self._reader.request()

    def _feishu_closed(self, dialog: FeishuConnectDialog) -> None:
        if self.feishu_dialog is dialog:
            self.feishu_dialog = None
        if not self._shut:
            self._reader.request()

    def _telegram_closed(self, dialog: TelegramConnectDialog) -> None:
        if self.telegram_dialog is dialog:
            self.telegram_dialog = None
        if not self._shut:
            self._reader.request()

    def _dingtalk_closed(self, dialog: DingTalkConnectDialog) -> None:
        if self.dingtalk_dialog is dialog:
            self.dingtalk_dialog = None
        if not self._shut:
            self._reader.request()

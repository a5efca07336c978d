"""「连接 Telegram」: a bot's Telegram channel from a bot the person made with @BotFather
(docs/desktop.md#connecting-telegram). Two steps in one dialog:

    连接 Telegram                               the token step
    ┌──────────────────────────────────────────────────┐
    │ Bot token   [••••••••••••••••••••••        ]     │
    │             (room for its error, two lines)      │
    │             在 Telegram 里找 @BotFather 发 /newbot…│
    └──────────────────────────────────────────────────┘
    (room for an error that names no field)
                                          [取消] [连接]

    连接 Telegram                               the pairing step, once the channel is stored
    在 Telegram 里打开 @errand_bot，发送：
    ┌──────────────────────────────────────────────────┐
    │  /start 123456                          [复制]   │   large, monospace, selectable
    └──────────────────────────────────────────────────┘
    ● 配对后这里会显示已配对。                   then ● 已配对 ✓
                                          [关闭]  then [完成]

连接 asks the ChannelFacade's `add(bot_id, "telegram", {"token": …})` on the loop, so the window never waits
(ui.connect_dialog: what the connect dialogs do alike); while it runs the button says so and the field
cannot be changed. An empty token, or one that does not look like BotFather's (`checked_token`), is refused
here before anything is asked. A token Telegram refused is said under the field
(`InvalidInputError.field == "token"`), anything else (Telegram out of reach: UnavailableError) above the
buttons; every message has its room kept while empty.

After the add the dialog stays open on the pairing step and re-reads the channel whenever the bridge's
`channelChanged` names it; once someone sent the code the channel has an owner and the dialog says 已配对.
Closing it before pairing keeps the channel (its row in 渠道 still shows the code). Closing it while 连接
runs leaves nothing behind: a channel made after the person gave up is handed to `abandon`, and the opener
removes it (`open_telegram_connect` wires this).
"""

from __future__ import annotations

import logging
from typing import Literal

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from core.channels.facade import ChannelFacade
from core.channels.telegram.config import checked_token
from core.channels.views import ChannelView
from core.errors import InvalidInputError
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.connect_dialog import Abandon, ConnectDialog, open_connect
from ui.connect_form import ReservedLine
from ui.form import button, line_input, small_label
from ui.i18n import t
from ui.reloader import Reloader
from ui.status_dot import StatusDot
from ui.wrapped_label import SELECTABLE, WrappedLabel

log = logging.getLogger(__name__)

Step = Literal["token", "pairing", "paired"]


def start_command(code: str) -> str:
    return f"/start {code}"


class TelegramConnectDialog(ConnectDialog):
    """`connected(channel_id)` once the channel was added; `paired(channel_id)` once someone paired."""

    paired = Signal(str)

    KIND = "telegram"
    # The pairing step is shorter than the token's: the window follows it down too.
    FIT_EXACTLY = True

    def __init__(
        self,
        channels: ChannelFacade,
        bot_id: str,
        parent: QWidget | None = None,
        *,
        changed: SignalInstance | None = None,
        abandon: Abandon | None = None,
    ) -> None:
        """`changed` is the bridge's `channelChanged`. `abandon(bot_id, channel_id)` is called for a channel
        whose `add` came back after the dialog closed, so the opener can remove it."""
        super().__init__(channels, bot_id, parent, abandon=abandon)
        self._reader: Reloader[ChannelView] = Reloader(self._load, self.show_view, self._read_failed)
        self._channel_id = ""
        self.step: Step = "token"
        if changed is not None:
            changed.connect(self.on_channel_changed)

    # -- building --------------------------------------------------------------------------------------

    def _build(self) -> None:
        self.heading = QLabel(self.windowTitle(), self)
        self.heading.setObjectName("telegramHeading")
        self.heading.setFont(theme.font("title"))
        self.token_page = self._build_token_page()
        self.pairing_page = self._build_pairing_page()
        self.pairing_page.hide()

        self.error = ReservedLine("danger", "telegramError", 2, self)
        self.cancel_button = button(t("settings.cancel"), self)
        self.cancel_button.clicked.connect(self.reject)
        self.connect_button = button(t("telegram.connect"), self, "primary")
        self.connect_button.clicked.connect(lambda _checked=False: self.connect_bot())
        self.done_button = button(t("telegram.done"), self, "primary")
        self.done_button.clicked.connect(self.accept)
        self.done_button.hide()
        self._asking = {self.connect_button: t("telegram.connect")}
        self.cancel_button.setAutoDefault(False)
        self.copy_button.setAutoDefault(False)
        self.connect_button.setDefault(True)  # Enter in the field connects
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.connect_button)
        buttons.addWidget(self.done_button)

        column = QVBoxLayout(self)
        column.setContentsMargins(28, 22, 28, 16)
        column.setSpacing(8)
        column.addWidget(self.heading)
        column.addSpacing(4)
        column.addWidget(self.token_page)
        column.addWidget(self.pairing_page)
        column.addWidget(self.error)
        column.addLayout(buttons)
        self.setMinimumWidth(520)

    def _build_token_page(self) -> QFrame:
        well = QFrame(self)
        well.setObjectName("settingsWell")
        self.token_input = line_input(well, t("telegram.token_placeholder"))
        self.token_input.setEchoMode(QLineEdit.EchoMode.Password)
        # Telegram's own words about a refused token may run to two lines.
        self.token_error = ReservedLine("danger", "settingsError", 2, well)
        self.token_input.textEdited.connect(lambda _text: self.token_error.set_message(""))
        self.inputs = {"token": self.token_input}
        self.errors = {"token": self.token_error}
        self.token_hint = small_label(t("telegram.token_hint"), "faint", "telegramHint", well)
        self.token_hint.setTextInteractionFlags(SELECTABLE)
        label = QLabel(t("telegram.token"), well)
        label.setObjectName("settingsRowLabel")
        label.setBuddy(self.token_input)
        grid = QGridLayout(well)
        grid.setContentsMargins(14, 12, 14, 12)
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(3)
        grid.addWidget(label, 0, 0, Qt.AlignmentFlag.AlignVCenter)
        grid.addWidget(self.token_input, 0, 1)
        grid.addWidget(self.token_error, 1, 1)
        grid.addWidget(self.token_hint, 2, 1)
        grid.setColumnStretch(1, 1)
        return well

    def _build_pairing_page(self) -> QWidget:
        page = QWidget(self)
        self.open_label = WrappedLabel("", page)
        self.open_label.setObjectName("telegramOpen")
        self.open_label.setTextFormat(Qt.TextFormat.PlainText)
        well = QFrame(page)
        well.setObjectName("settingsWell")
        self.command_label = QLabel("", well)
        self.command_label.setObjectName("telegramCommand")
        mono = theme.font("mono")
        mono.setPointSizeF(mono.pointSizeF() * 1.6)
        self.command_label.setFont(mono)
        self.command_label.setTextFormat(Qt.TextFormat.PlainText)
        self.command_label.setTextInteractionFlags(SELECTABLE)
        self.copy_button = button(t("telegram.copy"), well)
        self.copy_button.clicked.connect(lambda _checked=False: self.copy_command())
        code_line = QHBoxLayout(well)
        code_line.setContentsMargins(16, 12, 14, 12)
        code_line.setSpacing(12)
        code_line.addWidget(self.command_label, 1, Qt.AlignmentFlag.AlignVCenter)
        code_line.addWidget(self.copy_button, 0, Qt.AlignmentFlag.AlignVCenter)
        self.pair_dot = StatusDot("needs", 8, page)
        self.pair_status = QLabel("", page)
        self.pair_status.setObjectName("telegramPairStatus")
        self.pair_status.setTextFormat(Qt.TextFormat.PlainText)
        self.pair_status.setWordWrap(True)
        status_line = QHBoxLayout()
        status_line.setSpacing(8)
        status_line.addWidget(self.pair_dot, 0, Qt.AlignmentFlag.AlignVCenter)
        status_line.addWidget(self.pair_status, 1, Qt.AlignmentFlag.AlignVCenter)
        column = QVBoxLayout(page)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(10)
        column.addWidget(self.open_label)
        column.addWidget(well)
        column.addLayout(status_line)
        return page

    # -- what a person sees (tests read these) ---------------------------------------------------------

    @property
    def channel_id(self) -> str:
        return self._channel_id

    @property
    def field_error(self) -> str:
        return self.token_error.message()

    @property
    def command_text(self) -> str:
        """「/start 123456」 while waiting for the pairing."""
        return self.command_label.text()

    @property
    def pairing_text(self) -> str:
        """「在 Telegram 里打开 @name，发送：」, then 「配对后这里会显示已配对。」 or 「已配对 ✓」."""
        return f"{self.open_label.text()}\n{self.pair_status.text()}"

    # -- commands --------------------------------------------------------------------------------------

    def connect_bot(self) -> None:
        """连接: the token checked here, then the channel added; the dialog goes on to the pairing step."""
        if self._busy or self.step != "token":
            return
        self.error.set_message("")
        token = self.token_input.text().strip()
        try:
            checked_token({"token": token})
        except InvalidInputError:
            missing = "telegram.error.token_missing" if not token else "telegram.error.token_shape"
            self.token_error.set_message(t(missing))
            self.token_input.setFocus(Qt.FocusReason.OtherFocusReason)
            return
        self.token_error.set_message("")
        self._start_busy(self.connect_button, t("telegram.connecting"))
        self._add({"token": token})

    def copy_command(self) -> None:
        clipboard = QGuiApplication.clipboard()
        if clipboard is not None and self.command_label.text():
            clipboard.setText(self.command_label.text())
            self.copy_button.setText(t("telegram.copied"))

    def on_channel_changed(self, channel_id: str) -> None:
        if channel_id and channel_id == self._channel_id and self.step == "pairing" and not self._closed:
            self._reader.request()

    def show_view(self, view: ChannelView) -> None:
        """The pairing step for the channel as it is now."""
        if self._closed or self.step == "paired":
            return
        first = self.step == "token"
        self.step = "pairing"
        self.token_page.hide()
        self.error.set_message("")
        self.connect_button.hide()
        self.cancel_button.setText(t("wechat.close"))
        self.pairing_page.show()
        self.open_label.setText(t("telegram.open_and_send", name=view.name or t("channel.telegram")))
        if view.owner:
            self._show_paired()
        else:
            if view.pairing_code:
                self.command_label.setText(start_command(view.pairing_code))
            self.pair_dot.set_state("needs")
            self.pair_status.setText(t("telegram.waiting"))
        if first:
            self._fit_height()

    # -- showing ---------------------------------------------------------------------------------------

    def _show_paired(self) -> None:
        self.step = "paired"
        self._reader.reset()
        self.pair_dot.set_state("working")
        self.pair_status.setText(t("telegram.paired"))
        self.cancel_button.hide()
        self.done_button.show()
        self.done_button.setDefault(True)
        self.done_button.setFocus(Qt.FocusReason.OtherFocusReason)
        self.paired.emit(self._channel_id)

    # -- answers ---------------------------------------------------------------------------------------

    def _added(self, view: ChannelView) -> None:
        """The channel is stored: the dialog goes on to the pairing step."""
        self._channel_id = view.id
        self.connected.emit(view.id)
        self.show_view(view)
        # What moved while the command ran is read again, so a pairing announced meanwhile is not missed.
        if self.step == "pairing":
            self._reader.request()

    async def _load(self) -> ChannelView:
        return await self._channels.get(self._bot_id, self._channel_id)

    def _read_failed(self, exc: Exception) -> None:
        log.info("telegram channel %s not read: %s", self._channel_id, reason(exc))
        self.error.set_message(t("channels.load_failed", reason=reason(exc)))

    # -- closing ---------------------------------------------------------------------------------------

    def _stop_showing(self) -> None:
        self._reader.reset()
        super()._stop_showing()


def open_telegram_connect(
    channels: ChannelFacade,
    bot_id: str,
    calls: AsyncCalls,
    *,
    changed: SignalInstance | None = None,
    parent: QWidget | None = None,
) -> TelegramConnectDialog:
    """Open the dialog. A channel added after the person closed it is removed through `calls`, which belong
    to the opener and so outlive the dialog."""
    return open_connect(
        lambda abandon: TelegramConnectDialog(channels, bot_id, parent, changed=changed, abandon=abandon),
        channels,
        calls,
    )

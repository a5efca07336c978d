"""「连接微信」: a bot's WeChat login by QR code (docs/desktop.md#connecting-wechat):

                    连接微信
              ┌──────────────────┐
              │    ▇▇ ▇ ▇▇▇      │      the code's content, drawn by ui.qr_image
              │    ▇ ▇▇▇ ▇       │
              └──────────────────┘
               ● 请用微信扫码               or 已扫码,请在手机上确认 / 二维码已过期,已换新码（2/3）
            [ 4 到 8 位数字   ] [确定]      only while the login asks for the digits the phone shows
      只有扫码的人能在微信里和这个机器人对话。
                                  [再试一次] [取消]

The dialog starts the login without waiting on it (`add`, or `log_in_again` for a channel whose login
expired or failed, or only follows a login already under way), then re-reads the channel whenever it is
announced. Once connected it says so and closes by itself a moment later. A failure says why, with
再试一次. Closing it before a new channel ever connected hands that channel to `abandon`, and the opener
removes it, so a login given up on leaves nothing behind (`open_wechat_login` wires this).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from PySide6.QtCore import Qt, QTimer, Signal, SignalInstance
from PySide6.QtGui import QCloseEvent, QGuiApplication, QPixmap
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from core.channels.facade import ChannelFacade
from core.channels.views import MAX_CODES, ChannelView
from core.errors import InvalidInputError
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.form import button, line_input, small_label
from ui.i18n import t
from ui.qr_image import MIN_SIDE_PX, QUIET_ZONE, qr_image, qr_matrix
from ui.reloader import Reloader
from ui.status_dot import StatusDot
from ui.theme import DotState

log = logging.getLogger(__name__)

# Long enough to read 「已连接」, short enough not to be in the way.
CLOSE_AFTER_MS = 1200
Step = Literal["fetching", "scan", "scanned", "verify", "connected", "failed"]


class WeChatLoginDialog(QDialog):
    """`connected(channel_id)` once the login went through."""

    connected = Signal(str)

    def __init__(
        self,
        channels: ChannelFacade,
        bot_id: str,
        channel_id: str = "",
        *,
        again: bool = True,
        changed: SignalInstance | None = None,
        parent: QWidget | None = None,
        close_after_ms: int = CLOSE_AFTER_MS,
        abandon: Callable[[str, str], None] | None = None,
    ) -> None:
        """No `channel_id`: a new WeChat channel. With one: a new login for it (`again`), or else only the
        login under way followed. `changed` is the bridge's `channelChanged`. `abandon(bot_id, channel_id)`
        is called when the dialog closed before a channel it added ever connected (also once an `add`
        still running at the close comes back), so the opener can remove it."""
        super().__init__(parent)
        self.setObjectName("wechatLogin")
        self.setModal(True)
        self._channels = channels
        self._bot_id = bot_id
        self._channel_id = channel_id
        self._adding = not channel_id
        self._again = again
        self._calls = AsyncCalls()
        self._adds = AsyncCalls()
        self._abandon = abandon
        self._closed = False
        self._reader: Reloader[ChannelView] = Reloader(self._load, self.show_view, self._read_failed)
        self._shown_code = ""
        self._done = False
        self.step: Step = "fetching"
        self.setWindowTitle(t("wechat.title") if self._adding else t("wechat.title_again"))
        self._close_timer = QTimer(self)
        self._close_timer.setSingleShot(True)
        self._close_timer.setInterval(close_after_ms)
        self._close_timer.timeout.connect(self.accept)
        self._build()
        if changed is not None:
            changed.connect(self.on_channel_changed)

    # -- building --------------------------------------------------------------------------------------

    def _build(self) -> None:
        self.heading = QLabel(self.windowTitle(), self)
        self.heading.setObjectName("wechatHeading")
        self.heading.setFont(theme.font("title"))
        self.heading.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.qr_label = QLabel(self)
        self.qr_label.setObjectName("wechatQr")
        self.qr_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.qr_label.setAccessibleName(t("wechat.qr_name"))
        self._qr_side = self._code_side()
        self.qr_label.setFixedSize(self._qr_side, self._qr_side)

        self.dot = StatusDot("idle", 8, self)
        # The step in a few words on one line beside its dot; a failure's reason, which may run long,
        # wraps on its own line under it.
        self.status_label = QLabel("", self)
        self.status_label.setObjectName("wechatStatus")
        self.status_label.setTextFormat(Qt.TextFormat.PlainText)
        self.reason_label = small_label("", "danger", "wechatReason", self)
        self.reason_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        status_line = QHBoxLayout()
        status_line.setSpacing(8)
        status_line.addStretch(1)
        status_line.addWidget(self.dot, 0, Qt.AlignmentFlag.AlignVCenter)
        status_line.addWidget(self.status_label, 0, Qt.AlignmentFlag.AlignVCenter)
        status_line.addStretch(1)

        self.code_box = self._build_code_box()

        self.hint = small_label(t("wechat.owner_hint"), "faint", "wechatHint", self)
        self.hint.setAlignment(Qt.AlignmentFlag.AlignCenter)

        self.retry_button = button(t("wechat.try_again"), self, "primary")
        self.retry_button.clicked.connect(lambda _checked=False: self.start())
        self.retry_button.hide()
        self.close_button = button(t("settings.cancel"), self)
        self.close_button.clicked.connect(self.reject)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.retry_button)
        buttons.addWidget(self.close_button)

        column = QVBoxLayout(self)
        column.setContentsMargins(28, 22, 28, 16)
        column.setSpacing(12)
        column.addWidget(self.heading)
        column.addWidget(self.qr_label, 0, Qt.AlignmentFlag.AlignHCenter)
        column.addLayout(status_line)
        column.addWidget(self.reason_label)
        column.addWidget(self.code_box)
        column.addWidget(self.hint)
        column.addSpacing(4)
        column.addLayout(buttons)
        self.setMinimumWidth(380)
        # Enter in the digits field sends them, and only that: no button takes Enter for itself.
        for each in (self.code_button, self.retry_button, self.close_button):
            each.setAutoDefault(False)
        self._show_step("fetching", t("wechat.fetching"))

    def _build_code_box(self) -> QWidget:
        # Only while the login asks for the digits the phone shows.
        box = QWidget(self)
        self.code_input = line_input(box, t("wechat.verify_placeholder"))
        self.code_input.setObjectName("settingsInput")
        self.code_input.setMaxLength(8)
        self.code_input.setFixedWidth(150)
        self.code_input.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.code_input.setInputMethodHints(Qt.InputMethodHint.ImhDigitsOnly)
        self.code_input.returnPressed.connect(self.submit_code)
        self.code_button = button(t("wechat.verify_ok"), box, "primary")
        self.code_button.clicked.connect(self.submit_code)
        self.code_error = small_label("", "danger", "wechatCodeError", box)
        self.code_error.setAlignment(Qt.AlignmentFlag.AlignCenter)
        code_line = QHBoxLayout()
        code_line.setSpacing(8)
        code_line.addStretch(1)
        code_line.addWidget(self.code_input)
        code_line.addWidget(self.code_button)
        code_line.addStretch(1)
        code_column = QVBoxLayout(box)
        code_column.setContentsMargins(0, 0, 0, 0)
        code_column.setSpacing(4)
        code_column.addLayout(code_line)
        code_column.addWidget(self.code_error)
        box.hide()
        return box

    def _code_side(self) -> int:
        """The QR's logical size: the smallest whole-module size of at least MIN_SIDE_PX for a usual login
        code (33 modules), so the box does not change size when the code arrives."""
        modules = 33 + 2 * QUIET_ZONE
        return -(-MIN_SIDE_PX // modules) * modules

    # -- what the opener drives ------------------------------------------------------------------------

    @property
    def channel_id(self) -> str:
        return self._channel_id

    def start(self) -> None:
        """Start the login (or, following one, read it) without waiting on it."""
        self._close_timer.stop()
        self._show_step("fetching", t("wechat.fetching"))
        if not self._channel_id:
            # Not cancelled by closing: a channel it makes after the person gave up is removed again.
            self._adds.start(self._channels.add(self._bot_id, "wechat"), self._started, self._start_failed)
        elif self._again:
            self._calls.start(
                self._channels.log_in_again(self._bot_id, self._channel_id), self._started, self._start_failed
            )
        else:
            self._again = True  # 再试一次 from here on is a new login
            self._reader.request()

    def on_channel_changed(self, channel_id: str) -> None:
        if channel_id and channel_id == self._channel_id and not self._done and self.isVisible():
            self._reader.request()

    def show_view(self, view: ChannelView) -> None:
        """Show where the login is."""
        if self._done:
            return
        login = view.login
        if view.status == "connected" or (login is not None and login.status == "confirmed"):
            self._show_connected()
        elif login is None:
            if view.status in ("login_expired", "error"):
                self._show_failed(view.reason or t(f"channels.status.{view.status}"))
            else:
                self._show_step("fetching", t("wechat.fetching"))
        elif login.status == "failed":
            self._show_failed(login.reason or view.reason)
        elif login.status == "wait":
            self._show_code(login.qrcode_url)
            if not login.qrcode_url:
                self._show_step("fetching", t("wechat.fetching"))
            elif login.codes > 1:
                self._show_step("scan", t("wechat.expired", n=login.codes, total=MAX_CODES))
            else:
                self._show_step("scan", t("wechat.scan"))
        elif login.status == "scanned":
            self._show_code(login.qrcode_url)
            self._show_step("scanned", t("wechat.scanned"))
        elif login.status == "need_verify_code":
            self._show_code(login.qrcode_url)
            first_ask = self.step != "verify"
            self._show_step("verify", t("wechat.verify"))
            if first_ask:
                self.code_input.clear()
                self.code_error.hide()
                self.code_input.setFocus(Qt.FocusReason.OtherFocusReason)

    def submit_code(self) -> None:
        """确定: hand the digits to the login; a refusal is said under the field and the dialog stays."""
        if self.step != "verify" or not self._channel_id or not self.code_input.text().strip():
            return
        try:
            self._channels.enter_verify_code(self._channel_id, self.code_input.text())
        except InvalidInputError as exc:
            self._code_refused(t("wechat.verify_invalid") if exc.field == "code" else reason(exc))
            return
        except Exception as exc:
            log.info("verify code for %s refused: %s", self._channel_id, reason(exc))
            self._code_refused(reason(exc))
            return
        self.code_error.hide()
        self.code_input.clear()
        self.status_label.setText(t("wechat.verify_sent"))

    # -- showing ---------------------------------------------------------------------------------------

    def _show_step(self, step: Step, words: str, why: str = "") -> None:
        self.step = step
        self.reason_label.setText(why)
        self.reason_label.setVisible(bool(why))
        dots: dict[Step, DotState] = {
            "fetching": "idle",
            "scan": "idle",
            "scanned": "needs",
            "verify": "needs",
            "connected": "working",
            "failed": "failed",
        }
        self.dot.set_state(dots[step])
        self.status_label.setText(words)
        self.status_label.setProperty("role", "danger" if step == "failed" else "")
        self.status_label.style().unpolish(self.status_label)
        self.status_label.style().polish(self.status_label)
        self.code_box.setVisible(step == "verify")
        self.retry_button.setVisible(step == "failed")
        self.hint.setVisible(step in ("fetching", "scan", "scanned"))
        ended = step in ("failed", "connected")
        self.close_button.setText(t("wechat.close") if ended else t("settings.cancel"))
        # A failed or finished login's code can no longer be scanned: don't leave it looking usable.
        if step in ("failed", "connected", "fetching"):
            self.qr_label.setProperty("state", "empty")
            self.qr_label.clear()
            self._shown_code = ""
        else:
            self.qr_label.setProperty("state", "code")
        self.qr_label.style().unpolish(self.qr_label)
        self.qr_label.style().polish(self.qr_label)

    def _show_code(self, content: str) -> None:
        if not content or content == self._shown_code:
            return
        screen = self.screen() or QGuiApplication.primaryScreen()
        ratio = screen.devicePixelRatio() if screen is not None else 1.0
        try:
            image = qr_image(qr_matrix(content), self._qr_side, ratio)
        except Exception as exc:  # a code too long for a QR symbol: say so rather than show nothing
            log.warning("cannot draw the login code: %s", exc)
            self._show_failed(reason(exc))
            return
        pixmap = QPixmap.fromImage(image)
        side = max(self._qr_side, round(image.width() / ratio))
        self.qr_label.setFixedSize(side, side)
        self.qr_label.setPixmap(pixmap)
        self._shown_code = content

    def _show_connected(self) -> None:
        self._show_step("connected", t("wechat.connected"))
        if not self._done:
            self._done = True
            self._reader.reset()
            self.connected.emit(self._channel_id)
            self._close_timer.start()

    def _show_failed(self, why: str) -> None:
        self._show_step("failed", t("wechat.failed"), why)

    def _code_refused(self, text: str) -> None:
        self.code_error.setText(text)
        self.code_error.show()
        self.code_input.selectAll()
        self.code_input.setFocus(Qt.FocusReason.OtherFocusReason)

    # -- answers ---------------------------------------------------------------------------------------

    def _started(self, view: ChannelView) -> None:
        if self._closed:
            # Only Python state from here: the widget may be gone.
            if self._adding and self._abandon is not None:
                self._abandon(self._bot_id, view.id)
            return
        self._channel_id = view.id
        self.show_view(view)
        # What moved while the command ran is read again, so nothing announced meanwhile is missed.
        if not self._done:
            self._reader.request()

    def _start_failed(self, exc: Exception) -> None:
        if self._closed:
            return
        log.info("wechat login for bot %s did not start: %s", self._bot_id, reason(exc))
        self._show_failed(reason(exc))

    async def _load(self) -> ChannelView:
        return await self._channels.get(self._bot_id, self._channel_id)

    def _read_failed(self, exc: Exception) -> None:
        self._show_failed(reason(exc))

    # -- closing ---------------------------------------------------------------------------------------

    def done(self, result: int) -> None:
        self._close_timer.stop()
        self._calls.cancel_all()
        self._reader.reset()
        given_up = self._adding and bool(self._channel_id) and not self._done
        self._done = True
        self._closed = True
        super().done(result)
        if given_up and self._abandon is not None:
            self._abandon(self._bot_id, self._channel_id)

    def closeEvent(self, event: QCloseEvent) -> None:
        self._calls.cancel_all()
        super().closeEvent(event)


def open_wechat_login(
    channels: ChannelFacade,
    bot_id: str,
    calls: AsyncCalls,
    *,
    channel_id: str = "",
    again: bool = True,
    changed: SignalInstance | None = None,
    parent: QWidget | None = None,
) -> WeChatLoginDialog:
    """Open the dialog and start its login. A new channel given up on is removed through `calls`, which
    belong to the opener and so outlive the dialog."""

    def abandon(bot: str, channel: str) -> None:
        calls.start(channels.remove(bot, channel), failed=lambda exc: _not_removed(channel, exc))

    dialog = WeChatLoginDialog(
        channels, bot_id, channel_id, again=again, changed=changed, parent=parent, abandon=abandon
    )
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    dialog.start()
    return dialog


def _not_removed(channel_id: str, exc: Exception) -> None:
    log.warning("channel %s given up on but not removed: %s", channel_id, reason(exc))

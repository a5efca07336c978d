"""「连接飞书」: a bot's Feishu (or Lark) channel from an app the person registered themselves
(docs/desktop.md#connecting-feishu):

    连接飞书
    用你在开放平台建的企业自建应用连接……
    ┌──────────────────────────────────────────────────┐
    │ App ID       [cli_a1b2c3d4e5f6            ]      │
    │              (room for its error)                │
    │ App Secret   [••••••••••••••••            ]      │
    │              (room for its error, two lines)     │
    │ 域名          [飞书（open.feishu.cn）    ⌄]      │
    │              (room for its error)                │
    │              [测试连接] ● 已连上：Errand Bot      │
    └──────────────────────────────────────────────────┘
    应用要开通的权限
      im:message                     以应用身份发消息、回复和更新卡片
      …                              (core.channels.feishu.permissions, in the UI's language)
    要订阅的事件与回调（长连接）
      im.message.receive_v1          接收消息（事件）
      card.action.trigger            卡片上的按钮（回调）
    在开发者后台……                   where in the developer console
    (room for an error that names no field)
                                                  [取消] [连接]

测试连接 asks the ChannelFacade's `check_app` and says the bot's name; 连接 asks `add` and closes once the
channel is stored. Both run on the loop (AsyncCalls), so the window never waits: while one runs, both
buttons are disabled, the one pressed says what it is doing and the fields cannot be changed under it. An
empty field is refused here, before anything is asked. A refused field is said under that field
(`InvalidInputError.field`: appId, appSecret, domain) and goes as soon as the field is edited; anything
else (the platform out of reach: UnavailableError) is said above the buttons. Every message has its room
kept while empty, so nothing moves when one appears. Closing the dialog while 连接 runs leaves nothing
behind: the channel it makes after the person gave up is handed to `abandon`, and the opener removes it
(`open_feishu_connect` wires this).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from PySide6.QtCore import QRect, QSize, Qt, Signal
from PySide6.QtGui import QCloseEvent, QFontMetrics, QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from core.channels.app_check import AppCheck
from core.channels.facade import ChannelFacade
from core.channels.feishu.permissions import EVENTS, PERMISSIONS, Permission
from core.channels.service import ChannelView
from core.errors import InvalidInputError, UnavailableError
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.form import Combo, button, dialog_footer, line_input, small_label
from ui.i18n import language, t
from ui.status_dot import StatusDot
from ui.wrapped_label import SELECTABLE

log = logging.getLogger(__name__)

KIND = "feishu"
DOMAINS = ("feishu", "lark")
FIELDS = ("appId", "appSecret", "domain")
FIELD_LABELS = {"appId": "feishu.app_id", "appSecret": "feishu.app_secret", "domain": "feishu.domain"}
# Core's Chinese keeps ASCII punctuation (its own book's rule); the UI's Chinese is full-width.
FULL_WIDTH = str.maketrans({",": "，", ":": "：", ";": "；", "(": "（", ")": "）"})


class ReservedLine(QLabel):
    """Words that come and go without moving anything: the room for `lines` lines of small text is kept
    while it is empty, and words longer than that are cut with … (all of them in the tooltip)."""

    def __init__(self, role: str, name: str, lines: int, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        if role:
            self.setProperty("role", role)
        self.setFont(theme.font("small"))
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self._message = ""
        self._height = QFontMetrics(self.font()).lineSpacing() * lines + 2
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(self._height)

    # Its room is its own, whatever the words: a wrapping label's height-for-width would let the layout
    # give it less (rows then overlap) or more (rows then move).
    def hasHeightForWidth(self) -> bool:
        return False

    def heightForWidth(self, width: int) -> int:
        return self._height

    def sizeHint(self) -> QSize:
        return QSize(0, self._height)

    def minimumSizeHint(self) -> QSize:
        return QSize(0, self._height)

    def message(self) -> str:
        """All of the words, however many are shown."""
        return self._message

    def set_message(self, text: str) -> None:
        self._message = text
        self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        full = self._message
        width = self.contentsRect().width()
        metrics = QFontMetrics(self.font())

        def fits(text: str) -> bool:
            room = QRect(0, 0, width, 10_000)
            return metrics.boundingRect(room, Qt.TextFlag.TextWordWrap, text).height() <= self.height()

        if width <= 0 or fits(full):
            self.setText(full)
            self.setToolTip("")
            return
        low, high = 0, len(full)  # the longest start of the words that fits with … after it
        while low < high:
            middle = (low + high + 1) // 2
            if fits(full[:middle].rstrip() + "…"):
                low = middle
            else:
                high = middle - 1
        self.setText(full[:low].rstrip() + "…")
        self.setToolTip(full)


def _line(name: str, words: str) -> str:
    return f"{name} · {words}" if words else name


def permission_words(permission: Permission) -> str:
    """What the permission is for, in the UI's language."""
    if language() == "zh":
        return permission.why_zh.translate(FULL_WIDTH)
    return permission.why_en


def event_words(event: str) -> str:
    """What subscribing to the event or callback is for; an event the catalogue does not know, as nothing."""
    key = f"feishu.event.{event}"
    words = t(key)
    return "" if words == key else words


class FeishuConnectDialog(QDialog):
    """`connected(channel_id)` once the channel was added (the dialog then closes)."""

    connected = Signal(str)

    def __init__(
        self,
        channels: ChannelFacade,
        bot_id: str,
        parent: QWidget | None = None,
        *,
        abandon: Callable[[str, str], None] | None = None,
    ) -> None:
        """`abandon(bot_id, channel_id)` is called for a channel whose `add` came back after the dialog
        closed, so the opener can remove it."""
        super().__init__(parent)
        self.setObjectName("feishuConnect")
        self.setModal(True)
        self.setWindowTitle(t("feishu.title"))
        self._channels = channels
        self._bot_id = bot_id
        self._abandon = abandon
        self._calls = AsyncCalls()  # 测试连接: cancelled by closing
        self._adds = AsyncCalls()  # 连接: not cancelled; a channel made after closing is abandoned
        self._closed = False
        self._busy = False
        self._build()

    # -- building --------------------------------------------------------------------------------------

    def _build(self) -> None:
        self.heading = QLabel(self.windowTitle(), self)
        self.heading.setObjectName("feishuHeading")
        self.heading.setFont(theme.font("title"))
        self.intro = small_label(t("feishu.intro"), "muted", "feishuIntro", self)
        fields = self._build_fields()

        scopes = [(p.scope, permission_words(p)) for p in PERMISSIONS]
        subscriptions = [(e, event_words(e)) for e in EVENTS]
        # Both lists' words start at one edge: the names' column is as wide as the widest name in either.
        mono = QFontMetrics(theme.font("mono"))
        names_width = max(mono.horizontalAdvance(name) for name, _words in (*scopes, *subscriptions))
        permissions = self._list_section(t("feishu.permissions"), scopes, "feishuPermission", names_width)
        events = self._list_section(t("feishu.events"), subscriptions, "feishuEvent", names_width)
        self._permission_lines = [_line(name, words) for name, words in scopes]
        self._event_lines = [_line(name, words) for name, words in subscriptions]
        self.where = small_label(t("feishu.console_where"), "faint", "feishuWhere", self)
        self.where.setTextInteractionFlags(SELECTABLE)

        self.error = ReservedLine("danger", "feishuError", 2, self)
        self.cancel_button = button(t("settings.cancel"), self)
        self.cancel_button.clicked.connect(self.reject)
        self.connect_button = button(t("feishu.connect"), self, "primary")
        self.connect_button.clicked.connect(lambda _checked=False: self.connect_app())
        for each in (self.cancel_button, self.test_button):
            each.setAutoDefault(False)
        self.connect_button.setDefault(True)  # Enter in a field connects

        column = QVBoxLayout(self)
        column.setContentsMargins(28, 22, 28, 16)
        column.setSpacing(8)
        column.addWidget(self.heading)
        column.addWidget(self.intro)
        column.addSpacing(4)
        column.addWidget(fields)
        column.addSpacing(8)
        column.addLayout(permissions)
        column.addSpacing(4)
        column.addLayout(events)
        column.addWidget(self.where)
        column.addSpacing(4)
        column.addLayout(dialog_footer(self.error, self.cancel_button, self.connect_button))
        self.setMinimumWidth(600)

    def _build_fields(self) -> QFrame:
        well = QFrame(self)
        well.setObjectName("settingsWell")
        self.app_id_input = line_input(well, t("feishu.app_id_placeholder"))
        self.secret_input = line_input(well, t("feishu.app_secret_placeholder"))
        self.secret_input.setEchoMode(QLineEdit.EchoMode.Password)
        self.domain_combo = Combo(well)
        for domain in DOMAINS:
            self.domain_combo.addItem(t(f"feishu.domain.{domain}"), domain)
        self.inputs: dict[str, QWidget] = {
            "appId": self.app_id_input,
            "appSecret": self.secret_input,
            "domain": self.domain_combo,
        }
        # A refused secret may carry the platform's own words: it has two lines of room, the others one.
        self.errors: dict[str, ReservedLine] = {
            field: ReservedLine("danger", "settingsError", 2 if field == "appSecret" else 1, well)
            for field in FIELDS
        }
        self.app_id_input.textEdited.connect(lambda _text: self._edited("appId"))
        self.secret_input.textEdited.connect(lambda _text: self._edited("appSecret"))
        self.domain_combo.currentIndexChanged.connect(lambda _index: self._edited("domain"))

        self.test_button = button(t("settings.test"), well)
        self.test_button.clicked.connect(lambda _checked=False: self.test_app())
        self.test_dot = StatusDot("working", 8, well)
        kept = self.test_dot.sizePolicy()
        kept.setRetainSizeWhenHidden(True)
        self.test_dot.setSizePolicy(kept)
        self.test_dot.hide()
        self.test_result = ReservedLine("", "testResult", 1, well)
        self.test_result.setProperty("ok", True)  # only a check that went through is said here
        test_line = QHBoxLayout()
        test_line.setSpacing(8)
        test_line.addWidget(self.test_button)
        test_line.addWidget(self.test_dot, 0, Qt.AlignmentFlag.AlignVCenter)
        test_line.addWidget(self.test_result, 1, Qt.AlignmentFlag.AlignVCenter)

        grid = QGridLayout(well)
        grid.setContentsMargins(14, 12, 14, 12)
        grid.setHorizontalSpacing(12)
        grid.setVerticalSpacing(3)
        for index, field in enumerate(FIELDS):
            label = QLabel(t(FIELD_LABELS[field]), well)
            label.setObjectName("settingsRowLabel")
            label.setBuddy(self.inputs[field])
            grid.addWidget(label, index * 2, 0, Qt.AlignmentFlag.AlignVCenter)
            grid.addWidget(self.inputs[field], index * 2, 1)
            grid.addWidget(self.errors[field], index * 2 + 1, 1)
        grid.addLayout(test_line, len(FIELDS) * 2, 1)
        grid.setColumnStretch(1, 1)
        return well

    def _list_section(
        self, title: str, items: list[tuple[str, str]], name: str, names_width: int
    ) -> QVBoxLayout:
        """A small label over a well listing names (selectable, to paste into the console) and what each
        is for."""
        heading = QLabel(title, self)
        heading.setObjectName("settingsSectionLabel")
        heading.setFont(theme.font("small"))
        well = QFrame(self)
        well.setObjectName("settingsWell")
        grid = QGridLayout(well)
        grid.setContentsMargins(14, 10, 14, 10)
        grid.setHorizontalSpacing(16)
        grid.setVerticalSpacing(5)
        for row, (code, words) in enumerate(items):
            code_label = QLabel(code, well)
            code_label.setObjectName(f"{name}Name")
            code_label.setFont(theme.font("mono"))
            code_label.setTextInteractionFlags(SELECTABLE)
            words_label = small_label(words, "muted", f"{name}Words", well)
            grid.addWidget(code_label, row, 0, Qt.AlignmentFlag.AlignTop)
            grid.addWidget(words_label, row, 1, Qt.AlignmentFlag.AlignTop)
        grid.setColumnMinimumWidth(0, names_width)
        grid.setColumnStretch(1, 1)
        section = QVBoxLayout()
        section.setSpacing(6)
        section.addWidget(heading)
        section.addWidget(well)
        return section

    # -- what a person sees (tests read these) ---------------------------------------------------------

    def field_error(self, field: str) -> str:
        return self.errors[field].message()

    @property
    def result_text(self) -> str:
        return self.test_result.message()

    @property
    def error_text(self) -> str:
        return self.error.message()

    def permission_lines(self) -> list[str]:
        """「im:message · 以应用身份发消息、回复和更新卡片」, one per permission."""
        return list(self._permission_lines)

    def event_lines(self) -> list[str]:
        return list(self._event_lines)

    @property
    def busy(self) -> bool:
        return self._busy

    # -- commands --------------------------------------------------------------------------------------

    def config(self) -> dict[str, object]:
        """What the fields say, as `check_app` and `add` take it."""
        return {
            "appId": self.app_id_input.text().strip(),
            "appSecret": self.secret_input.text().strip(),
            "domain": str(self.domain_combo.currentData() or DOMAINS[0]),
        }

    def test_app(self) -> None:
        """测试连接: the app's credentials tried, nothing stored."""
        config = self._checked_config()
        if config is None:
            return
        self._start_busy(self.test_button, t("settings.testing"))
        self._calls.start(self._channels.check_app(KIND, config), done=self._tested, failed=self._refused)

    def connect_app(self) -> None:
        """连接: the channel added; the dialog closes once it is."""
        config = self._checked_config()
        if config is None:
            return
        self._start_busy(self.connect_button, t("feishu.connecting"))
        self._adds.start(
            self._channels.add(self._bot_id, KIND, config), done=self._connected, failed=self._add_refused
        )

    def _checked_config(self) -> Mapping[str, object] | None:
        """The config, or None after saying under each empty field that it is needed."""
        if self._busy:
            return None
        config = self.config()
        # Whatever was said about the last try no longer holds once another is asked for.
        self.error.set_message("")
        self._show_result("")
        missing = {"appId": "feishu.error.app_id_missing", "appSecret": "feishu.error.app_secret_missing"}
        refused = [field for field in missing if not config[field]]
        for field in FIELDS:
            self.errors[field].set_message(t(missing[field]) if field in refused else "")
        if refused:
            self.inputs[refused[0]].setFocus(Qt.FocusReason.OtherFocusReason)
            return None
        return config

    # -- showing ---------------------------------------------------------------------------------------

    def _start_busy(self, pressed: QPushButton, words: str) -> None:
        self._busy = True
        self.test_button.setEnabled(False)
        self.connect_button.setEnabled(False)
        pressed.setText(words)
        # The answer is about what was sent: the fields stay as they were until it comes.
        self.app_id_input.setReadOnly(True)
        self.secret_input.setReadOnly(True)
        self.domain_combo.setEnabled(False)

    def _end_busy(self) -> None:
        self._busy = False
        self.test_button.setText(t("settings.test"))
        self.connect_button.setText(t("feishu.connect"))
        self.test_button.setEnabled(True)
        self.connect_button.setEnabled(True)
        self.app_id_input.setReadOnly(False)
        self.secret_input.setReadOnly(False)
        self.domain_combo.setEnabled(True)

    def _show_result(self, text: str) -> None:
        self.test_result.set_message(text)
        self.test_dot.setVisible(bool(text))

    def _edited(self, field: str) -> None:
        """A field changed: what was said about it, and the test of the old values, no longer hold."""
        self.errors[field].set_message("")
        self._show_result("")

    # -- answers ---------------------------------------------------------------------------------------

    def _tested(self, check: AppCheck) -> None:
        self._end_busy()
        self._show_result(t("feishu.tested", name=check.bot_name or check.bot_open_id))

    def _refused(self, exc: Exception, failed_key: str = "feishu.check_failed") -> None:
        self._end_busy()
        if isinstance(exc, InvalidInputError) and exc.field in self.errors:
            self.errors[exc.field].set_message(reason(exc))
            self.inputs[exc.field].setFocus(Qt.FocusReason.OtherFocusReason)
            return
        if not isinstance(exc, InvalidInputError | UnavailableError):
            log.info("feishu app for bot %s refused: %s", self._bot_id, reason(exc))
        self.error.set_message(t(failed_key, reason=reason(exc)))

    def _connected(self, view: ChannelView) -> None:
        if self._closed:
            # Only Python state from here: the widget may be gone.
            if self._abandon is not None:
                self._abandon(self._bot_id, view.id)
            return
        self._end_busy()
        self.connected.emit(view.id)
        self.accept()

    def _add_refused(self, exc: Exception) -> None:
        if not self._closed:
            self._refused(exc, "feishu.add_failed")

    # -- sizing ----------------------------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        self._fit_height()
        super().showEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width():
            self._fit_height()

    def _fit_height(self) -> None:
        """Tall enough for every line at this width: a window's minimum height does not follow its
        wrapped text by itself, and a squeezed form lays its rows over each other."""
        layout = self.layout()
        if layout is None or not layout.hasHeightForWidth():
            return
        needed = layout.totalHeightForWidth(self.width())
        if needed != self.minimumHeight():
            self.setMinimumHeight(needed)
        if self.height() < needed:
            self.resize(self.width(), needed)

    # -- closing ---------------------------------------------------------------------------------------

    def done(self, result: int) -> None:
        self._calls.cancel_all()
        self._closed = True
        super().done(result)

    def closeEvent(self, event: QCloseEvent) -> None:
        self._calls.cancel_all()
        super().closeEvent(event)


def open_feishu_connect(
    channels: ChannelFacade, bot_id: str, calls: AsyncCalls, parent: QWidget | None = None
) -> FeishuConnectDialog:
    """Open the dialog. A channel added after the person closed it is removed through `calls`, which belong
    to the opener and so outlive the dialog."""

    def abandon(bot: str, channel: str) -> None:
        calls.start(channels.remove(bot, channel), failed=lambda exc: _not_removed(channel, exc))

    dialog = FeishuConnectDialog(channels, bot_id, parent, abandon=abandon)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    dialog.app_id_input.setFocus(Qt.FocusReason.OtherFocusReason)
    return dialog


def _not_removed(channel_id: str, exc: Exception) -> None:
    log.warning("feishu channel %s given up on but not removed: %s", channel_id, reason(exc))

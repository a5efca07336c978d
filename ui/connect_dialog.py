"""What the connect dialogs (连接飞书, 连接钉钉, 连接 Telegram) do alike, so that each says only what its
platform asks for.

`ConnectDialog` is the frame of all three. 连接 asks the ChannelFacade's `add` on the loop (AsyncCalls), so
the window never waits: while a command runs the buttons that ask are disabled, the one pressed says what
it is doing and the fields cannot be changed under it (the answer is about what was sent). A refusal that
names a field (`InvalidInputError.field`) is said under that field, anything else (the platform out of
reach: UnavailableError) above the buttons. The window is kept tall enough for its wrapped lines. Closing it
cancels what only shows (a test, a read) but not an `add`: the channel that `add` makes after the person
gave up is handed to `abandon`, and `open_connect` wires that to a removal through the opener's calls,
which outlive the dialog.

`AppConnectDialog` is the form of the app channels (Feishu, DingTalk): a well of fields with 测试连接
(`check_app`, nothing stored) under them, two lists of what to set up in the platform's developer console,
where that is, and 取消 / 连接. A field the service would refuse is said under it before anything is asked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar, TypeVar

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent, QResizeEvent, QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from core.channels.app_check import AppCheck
from core.channels.facade import ChannelFacade
from core.channels.views import ChannelView
from core.errors import InvalidInputError, UnavailableError
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.connect_form import ReservedLine, list_line, list_section, names_width
from ui.form import button, dialog_footer, small_label
from ui.i18n import t
from ui.status_dot import StatusDot
from ui.wrapped_label import SELECTABLE

log = logging.getLogger(__name__)

Abandon = Callable[[str, str], None]
# A listed section: its title, its (name, words) items, and the object name of its labels.
Listed = tuple[str, Sequence[tuple[str, str]], str]


class ConnectDialog(QDialog):
    """`connected(channel_id)` once the channel was added. A subclass names its `KIND` (the channel kind
    `add` is asked for, and the prefix of its words and object names) and builds its widgets in `_build`,
    which this constructor calls: the `error` line, `inputs` and `errors` by the field names its
    platform's refusals use, and `_asking`, the buttons that ask."""

    connected = Signal(str)

    KIND: ClassVar[str] = ""
    # Whether the window also shrinks to its lines (a dialog whose steps replace each other) or only
    # grows, leaving the height a person gave it.
    FIT_EXACTLY: ClassVar[bool] = False

    error: ReservedLine

    def __init__(
        self,
        channels: ChannelFacade,
        bot_id: str,
        parent: QWidget | None = None,
        *,
        abandon: Abandon | None = None,
    ) -> None:
        """`abandon(bot_id, channel_id)` is called for a channel whose `add` came back after the dialog
        closed, so the opener can remove it."""
        super().__init__(parent)
        self.setObjectName(f"{self.KIND}Connect")
        self.setModal(True)
        self.setWindowTitle(t(f"{self.KIND}.title"))
        self._channels = channels
        self._bot_id = bot_id
        self._abandon = abandon
        self._calls = AsyncCalls()  # what only shows (测试连接, a read): cancelled by closing
        self._adds = AsyncCalls()  # 连接: not cancelled; a channel made after closing is abandoned
        self._closed = False
        self._busy = False
        self.inputs: dict[str, QWidget] = {}
        self.errors: dict[str, ReservedLine] = {}
        # The buttons that ask, each with what it says while nothing runs.
        self._asking: dict[QPushButton, str] = {}
        self._build()

    def _build(self) -> None:
        """The widgets, `error` among them; a subclass lays out its own."""
        raise NotImplementedError

    # -- what a person sees (tests read these) ---------------------------------------------------------

    @property
    def error_text(self) -> str:
        return self.error.message()

    @property
    def busy(self) -> bool:
        return self._busy

    def focus_first(self) -> None:
        """The first field takes the keyboard, as the dialog opens."""
        first = next(iter(self.inputs.values()), None)
        if first is not None:
            first.setFocus(Qt.FocusReason.OtherFocusReason)

    # -- commands --------------------------------------------------------------------------------------

    def _add(self, config: Mapping[str, object]) -> None:
        self._adds.start(
            self._channels.add(self._bot_id, self.KIND, config),
            done=self._connected,
            failed=self._add_refused,
        )

    # -- showing ---------------------------------------------------------------------------------------

    def _start_busy(self, pressed: QPushButton, words: str) -> None:
        self._busy = True
        for each in self._asking:
            each.setEnabled(False)
        pressed.setText(words)
        self._freeze(True)

    def _end_busy(self) -> None:
        self._busy = False
        for each, words in self._asking.items():
            each.setText(words)
            each.setEnabled(True)
        self._freeze(False)

    def _freeze(self, frozen: bool) -> None:
        """The fields as they were sent, until the answer comes: a line stays readable, a choice greys."""
        for each in self.inputs.values():
            if isinstance(each, QLineEdit):
                each.setReadOnly(frozen)
            else:
                each.setEnabled(not frozen)

    # -- answers ---------------------------------------------------------------------------------------

    def _connected(self, view: ChannelView) -> None:
        if self._closed:
            # Only Python state from here: the widget may be gone.
            if self._abandon is not None:
                self._abandon(self._bot_id, view.id)
            return
        self._end_busy()
        self._added(view)

    def _added(self, view: ChannelView) -> None:
        """The channel is stored and the dialog still open: it has done its work."""
        self.connected.emit(view.id)
        self.accept()

    def _add_refused(self, exc: Exception) -> None:
        if not self._closed:
            self._refused(exc, f"{self.KIND}.add_failed")

    def _refused(self, exc: Exception, failed_key: str) -> None:
        self._end_busy()
        if isinstance(exc, InvalidInputError) and exc.field in self.errors:
            self.errors[exc.field].set_message(reason(exc))
            self.inputs[exc.field].setFocus(Qt.FocusReason.OtherFocusReason)
            return
        if not isinstance(exc, InvalidInputError | UnavailableError):
            log.info("%s channel for bot %s refused: %s", self.KIND, self._bot_id, reason(exc))
        self.error.set_message(t(failed_key, reason=reason(exc)))

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
        if layout is None:
            return
        layout.activate()
        needed = (
            layout.totalHeightForWidth(self.width())
            if layout.hasHeightForWidth()
            else layout.totalSizeHint().height()
        )
        if needed != self.minimumHeight():
            self.setMinimumHeight(needed)
        if self.height() < needed or (self.FIT_EXACTLY and self.height() != needed):
            self.resize(self.width(), needed)

    # -- closing ---------------------------------------------------------------------------------------

    def _stop_showing(self) -> None:
        """What only shows is not wanted once the window goes."""
        self._calls.cancel_all()

    def done(self, result: int) -> None:
        self._stop_showing()
        self._closed = True
        super().done(result)

    def closeEvent(self, event: QCloseEvent) -> None:
        self._stop_showing()
        super().closeEvent(event)


class AppConnectDialog(ConnectDialog):
    """A subclass names its `FIELDS` in order with their `FIELD_LABELS`, makes the fields
    (`_make_inputs`), says what the console needs (`_console_lists`), what is wrong before asking
    (`_refusals`), what the fields send (`config`) and what a test that went through says (`_tested_words`).
    Its words are `{KIND}.intro`, `.console_where`, `.connect`, `.connecting`, `.check_failed` and
    `.add_failed`."""

    FIELDS: ClassVar[tuple[str, ...]] = ()
    FIELD_LABELS: ClassVar[Mapping[str, str]] = {}
    # A refused secret may carry the platform's own words: it has two lines of room, the others one.
    ROOMY_FIELD: ClassVar[str] = "appSecret"

    # -- what the platform asks for (a subclass says) --------------------------------------------------

    def _make_inputs(self, well: QWidget) -> dict[str, QWidget]:
        raise NotImplementedError

    def _console_lists(self) -> tuple[Listed, Listed]:
        raise NotImplementedError

    def _refusals(self, config: Mapping[str, object]) -> dict[str, str]:
        """What is wrong with each field, in our words; nothing is asked while anything is."""
        raise NotImplementedError

    def config(self) -> dict[str, object]:
        """What the fields say, as `check_app` and `add` take it."""
        raise NotImplementedError

    def _tested_words(self, check: AppCheck) -> str:
        raise NotImplementedError

    # -- building --------------------------------------------------------------------------------------

    def _build(self) -> None:
        kind = self.KIND
        self.heading = QLabel(self.windowTitle(), self)
        self.heading.setObjectName(f"{kind}Heading")
        self.heading.setFont(theme.font("title"))
        self.intro = small_label(t(f"{kind}.intro"), "muted", f"{kind}Intro", self)
        fields = self._build_fields()

        first, second = self._console_lists()
        width = names_width(first[1], second[1])
        sections = [list_section(self, title, items, name, width) for title, items, name in (first, second)]
        self._listed: dict[str, list[str]] = {
            name: [list_line(*item) for item in items] for _title, items, name in (first, second)
        }
        self.where = small_label(t(f"{kind}.console_where"), "faint", f"{kind}Where", self)
        self.where.setTextInteractionFlags(SELECTABLE)

        self.error = ReservedLine("danger", f"{kind}Error", 2, self)
        self.cancel_button = button(t("settings.cancel"), self)
        self.cancel_button.clicked.connect(self.reject)
        self.connect_button = button(t(f"{kind}.connect"), self, "primary")
        self.connect_button.clicked.connect(lambda _checked=False: self.connect_app())
        self._asking = {self.test_button: t("settings.test"), self.connect_button: t(f"{kind}.connect")}
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
        column.addLayout(sections[0])
        column.addSpacing(4)
        column.addLayout(sections[1])
        column.addWidget(self.where)
        column.addSpacing(4)
        column.addLayout(dialog_footer(self.error, self.cancel_button, self.connect_button))
        self.setMinimumWidth(600)

    def _build_fields(self) -> QFrame:
        well = QFrame(self)
        well.setObjectName("settingsWell")
        self.inputs = self._make_inputs(well)
        self.errors = {
            field: ReservedLine("danger", "settingsError", 2 if field == self.ROOMY_FIELD else 1, well)
            for field in self.FIELDS
        }
        for field, field_input in self.inputs.items():
            if isinstance(field_input, QLineEdit):
                field_input.textEdited.connect(lambda _text, edited=field: self._edited(edited))
            elif isinstance(field_input, QComboBox):
                field_input.currentIndexChanged.connect(lambda _index, edited=field: self._edited(edited))

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
        for index, field in enumerate(self.FIELDS):
            label = QLabel(t(self.FIELD_LABELS[field]), well)
            label.setObjectName("settingsRowLabel")
            label.setBuddy(self.inputs[field])
            grid.addWidget(label, index * 2, 0, Qt.AlignmentFlag.AlignVCenter)
            grid.addWidget(self.inputs[field], index * 2, 1)
            grid.addWidget(self.errors[field], index * 2 + 1, 1)
        grid.addLayout(test_line, len(self.FIELDS) * 2, 1)
        grid.setColumnStretch(1, 1)
        return well

    # -- what a person sees (tests read these) ---------------------------------------------------------

    def field_error(self, field: str) -> str:
        return self.errors[field].message()

    @property
    def result_text(self) -> str:
        return self.test_result.message()

    def _lines(self, name: str) -> list[str]:
        """「name · words」 for each item of the listed section whose labels are named `name`."""
        return list(self._listed.get(name, []))

    # -- commands --------------------------------------------------------------------------------------

    def test_app(self) -> None:
        """测试连接: the app's credentials tried, nothing stored."""
        config = self._checked_config()
        if config is None:
            return
        self._start_busy(self.test_button, t("settings.testing"))
        self._calls.start(
            self._channels.check_app(self.KIND, config), done=self._tested, failed=self._test_refused
        )

    def connect_app(self) -> None:
        """连接: the channel added; the dialog closes once it is."""
        config = self._checked_config()
        if config is None:
            return
        self._start_busy(self.connect_button, t(f"{self.KIND}.connecting"))
        self._add(config)

    def _checked_config(self) -> Mapping[str, object] | None:
        """The config, or None after saying under each field the service would refuse why."""
        if self._busy:
            return None
        config = self.config()
        # Whatever was said about the last try no longer holds once another is asked for.
        self.error.set_message("")
        self._show_result("")
        refused = self._refusals(config)
        for field in self.FIELDS:
            self.errors[field].set_message(refused.get(field, ""))
        if refused:
            first = next(field for field in self.FIELDS if field in refused)
            self.inputs[first].setFocus(Qt.FocusReason.OtherFocusReason)
            return None
        return config

    # -- showing ---------------------------------------------------------------------------------------

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
        self._show_result(self._tested_words(check))

    def _test_refused(self, exc: Exception) -> None:
        self._refused(exc, f"{self.KIND}.check_failed")


D = TypeVar("D", bound=ConnectDialog)


def open_connect(make: Callable[[Abandon], D], channels: ChannelFacade, calls: AsyncCalls) -> D:
    """Open the dialog `make(abandon)` builds. A channel added after the person closed it is removed
    through `calls`, which belong to the opener and so outlive the dialog."""
    kind = ""  # the dialog's, kept once it is made: the widget may be gone by the time a removal fails

    def not_removed(channel: str, exc: Exception) -> None:
        log.warning("%s channel %s given up on but not removed: %s", kind, channel, reason(exc))

    def abandon(bot: str, channel: str) -> None:
        calls.start(channels.remove(bot, channel), failed=lambda exc: not_removed(channel, exc))

    dialog = make(abandon)
    kind = dialog.KIND
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    dialog.focus_first()
    return dialog

"""The friendly set-up card the chat pane shows while the default bot has no model (`not BotView.configured`):

    (E)  你好，我是 Errand
         先接上一个模型，我就能开始了。选一个服务，填上密钥就好。
         [DeepSeek] [OpenAI] [OpenRouter] [本机 Ollama] [自定义]
         接口地址  https://api.deepseek.com/v1
         模型      deepseek-chat
         API 密钥  ••••••••        到 DeepSeek 获取密钥
         ● 连接成功：deepseek-chat 有回应（120 毫秒）。
         [测试连接]                              [保存并开始]

A preset fills the address and model (both stay editable); a local one (Ollama) needs no key, so the key
row goes and its model list is offered. 测试连接 with no key for a service that needs one asks for the key
instead of asking the service; changing the preset, address, model or key takes the last result away.
保存并开始 writes the model through `BotFacade.update`; when the
bot is configured afterwards the card emits `configured` and the window swaps it for the chat. A refusal
is said under its field (or under the buttons); nothing typed is lost.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from core.bots.facade import BotFacade
from core.bots.views import BotUpdate, BotView, ConnectionCheck, ModelPreset
from core.errors import InvalidInputError, UnavailableError
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.avatar import avatar_pixmap, resolve_colour
from ui.bot_settings import preset_label
from ui.connection_check import end_stale_check, forget_check, needs_key, show_check, show_testing
from ui.form import Combo, FieldRow, button, field_message, line_input, small_label
from ui.i18n import language, t
from ui.key_file_choice import KeyFileChoice, is_no_keyring
from ui.status_dot import StatusDot
from ui.wrapped_label import WrappedLabel

log = logging.getLogger(__name__)

CUSTOM = "custom"
CARD_WIDTH = 560
AVATAR = 44


class FirstRunCard(QWidget):
    configured = Signal()

    def __init__(self, bots: BotFacade, bot_id: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("firstRun")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self._bots = bots
        self._bot_id = bot_id
        self._bot: BotView | None = None
        self._presets: list[ModelPreset] = []
        self._calls = AsyncCalls()
        self._test_round = 0  # bumped when what is tested changes: an older test's outcome is dropped

        self.card = QFrame(self)
        self.card.setObjectName("firstRunCard")
        self.card.setMaximumWidth(CARD_WIDTH)
        self.card.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self.preset_group = QButtonGroup(self)
        self.preset_group.setExclusive(True)
        self.preset_buttons: dict[str, QPushButton] = {}
        self._preset_row = QHBoxLayout()
        self._preset_row.setSpacing(6)
        self._build_preset_buttons([])
        self.error = small_label("", "danger", "settingsFormError", self.card)
        self.key_file = KeyFileChoice(self.card)
        self.key_file.chosen.connect(self._keep_keys_in_file)

        inner = QVBoxLayout(self.card)
        inner.setContentsMargins(28, 24, 28, 22)
        inner.setSpacing(14)
        inner.addLayout(self._build_head())
        inner.addLayout(self._preset_row)
        inner.addLayout(self._build_fields())
        inner.addLayout(self._build_result())
        inner.addWidget(self.error)
        inner.addWidget(self.key_file)
        inner.addLayout(self._build_actions())

        # The card floats a little above the middle of the pane, as a calm empty state does.
        outer = QVBoxLayout(self)
        outer.setContentsMargins(24, 24, 24, 24)
        outer.addStretch(2)
        centre = QHBoxLayout()
        centre.addStretch(1)
        centre.addWidget(self.card, 10)
        centre.addStretch(1)
        outer.addLayout(centre)
        outer.addStretch(3)

    # -- building --------------------------------------------------------------------------------------

    def _build_head(self) -> QHBoxLayout:
        self.avatar = QLabel(self.card)
        self.avatar.setFixedSize(AVATAR, AVATAR)
        self.title = QLabel(t("firstrun.title", name="Errand"), self.card)
        self.title.setObjectName("firstRunTitle")
        self.title.setFont(theme.font("title"))
        self.welcome = WrappedLabel(t("firstrun.welcome"), self.card)
        self.welcome.setObjectName("firstRunWelcome")
        self.welcome.setProperty("role", "muted")
        head_text = QVBoxLayout()
        head_text.setSpacing(2)
        head_text.addWidget(self.title)
        head_text.addWidget(self.welcome)
        head = QHBoxLayout()
        head.setSpacing(14)
        head.addWidget(self.avatar, 0, Qt.AlignmentFlag.AlignTop)
        head.addLayout(head_text, 1)
        return head

    def _build_fields(self) -> QVBoxLayout:
        self.base_url_input = line_input(self.card, "https://api.deepseek.com/v1")
        self.base_url_input.textEdited.connect(self._on_base_url_edited)
        self.model_input = Combo(self.card, editable=True)
        self.model_input.activated.connect(lambda _index: self._forget_test())
        model_line = self.model_input.lineEdit()
        if model_line is not None:
            model_line.textEdited.connect(lambda _text: self._forget_test())
        self.key_input = line_input(self.card, t("firstrun.key_placeholder"))
        self.key_input.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_input.textEdited.connect(lambda _text: self._forget_test())
        flush = (0, 6)
        self.rows: dict[str, FieldRow] = {
            "baseUrl": FieldRow(t("settings.base_url"), self.base_url_input, parent=self.card, margins=flush),
            "model": FieldRow(t("settings.model"), self.model_input, parent=self.card, margins=flush),
            "apiKey": FieldRow(t("settings.api_key"), self.key_input, parent=self.card, margins=flush),
        }
        self.rows["apiKey"].hint.setTextFormat(Qt.TextFormat.RichText)
        self.rows["apiKey"].hint.setOpenExternalLinks(True)
        fields = QVBoxLayout()
        fields.setSpacing(0)
        for row in self.rows.values():
            fields.addWidget(row)
        return fields

    def _build_result(self) -> QHBoxLayout:
        self.test_dot = StatusDot("idle", 8, self.card)
        self.test_dot.hide()
        self.test_result = WrappedLabel("", self.card)
        self.test_result.setObjectName("testResult")
        self.test_result.setTextFormat(Qt.TextFormat.PlainText)
        self.test_result.setFont(theme.font("small"))
        self.test_result.hide()
        result_line = QHBoxLayout()
        result_line.setSpacing(8)
        result_line.addWidget(self.test_dot, 0, Qt.AlignmentFlag.AlignVCenter)
        result_line.addWidget(self.test_result, 1)
        return result_line

    def _build_actions(self) -> QHBoxLayout:
        self.test_button = button(t("settings.test"), self.card)
        self.test_button.clicked.connect(self.test_connection)
        self.save_button = button(t("firstrun.save"), self.card, "primary")
        self.save_button.clicked.connect(self.save)
        self.save_button.setEnabled(False)  # until the bot is read
        actions = QHBoxLayout()
        actions.addWidget(self.test_button)
        actions.addStretch(1)
        actions.addWidget(self.save_button)
        return actions

    # -- loading ---------------------------------------------------------------------------------------

    async def load(self) -> None:
        """Read the bot (for its name and anything already typed before) and the provider choices."""
        try:
            bot = await self._bots.get(self._bot_id)
        except Exception as exc:
            log.warning("cannot read bot %s for first run: %s", self._bot_id, reason(exc))
            self._say(t("settings.load_failed", reason=reason(exc)))
            return
        self._bot = bot
        self.title.setText(t("firstrun.title", name=bot.name))
        self.avatar.setPixmap(avatar_pixmap(bot.name, resolve_colour(bot.avatar, bot.id), AVATAR))
        if bot.model_base_url:
            self.base_url_input.setText(bot.model_base_url)
        if bot.model_name:
            self.model_input.setEditText(bot.model_name)
        self.save_button.setEnabled(True)
        try:
            presets = await self._bots.model_presets(lang=language())
        except Exception as exc:
            log.warning("cannot read model presets: %s", reason(exc))
            presets = []
        self._set_presets(presets)

    def _set_presets(self, presets: list[ModelPreset]) -> None:
        self._presets = presets
        self._build_preset_buttons([(p.key, preset_label(p)) for p in presets])
        # With nothing typed yet, start from the first choice so the form is ready for a key.
        if not self.base_url_input.text() and presets:
            self.pick(presets[0].key)
        else:
            self._match_preset()

    def _build_preset_buttons(self, choices: list[tuple[str, str]]) -> None:
        """One checkable button per provider, 自定义 last."""
        for old in self.preset_buttons.values():
            self.preset_group.removeButton(old)
            old.hide()  # out of sight now: deleteLater may wait for a later turn of the event loop
            old.deleteLater()
        self.preset_buttons = {}
        while self._preset_row.count():
            self._preset_row.takeAt(0)
        for key, label in [*choices, (CUSTOM, t("settings.provider.custom"))]:
            made = QPushButton(label, self.card)
            made.setObjectName("presetButton")
            made.setCheckable(True)
            made.setCursor(Qt.CursorShape.PointingHandCursor)
            made.clicked.connect(lambda _checked=False, k=key: self.pick(k))
            self.preset_group.addButton(made)
            self.preset_buttons[key] = made
            self._preset_row.addWidget(made)
        self._preset_row.addStretch(1)

    # -- what a person does ------------------------------------------------------------------------------

    def pick(self, key: str) -> None:
        """Choose a provider: a preset fills the address and model; 自定义 keeps what is typed."""
        self.preset_buttons[key].setChecked(True)
        preset = self._preset(key)
        if preset is not None:
            self.base_url_input.setText(preset.base_url)
            self.model_input.clear()
            self.model_input.addItems(list(preset.models) or ([preset.model] if preset.model else []))
            self.model_input.setEditText(preset.model)
        self._show_key_row()
        for row in self.rows.values():
            row.clear_error()
        self._forget_test()

    def test_connection(self) -> None:
        base_url, model = self._model_fields()
        if not base_url or not model:
            return
        key = self.key_input.text().strip() if self._needs_key() else ""
        stored = self._bot is not None and self._bot.has_api_key
        if needs_key(self._preset(self._picked()), base_url) and not key and not stored:
            # Asking the service would only come back with 401: say what is missing, where it goes.
            forget_check(self.test_dot, self.test_result)
            self.rows["apiKey"].show_error(t("connection.key_missing"))
            return
        show_testing(self.test_button, self.test_dot, self.test_result)
        round_ = self._test_round
        self._calls.start(
            # A typed key is tried as typed; none typed = the stored one (None), if any.
            self._bots.test_connection(base_url, model, key or None, bot_id=self._bot_id, lang=language()),
            done=lambda check: self._tested(check, round_),
            failed=lambda exc: self._tested(ConnectionCheck(ok=False, message=reason(exc)), round_),
        )

    def save(self) -> None:
        if self._bot is None or not self.save_button.isEnabled():
            return
        base_url, model = self._model_fields()
        if not base_url or not model:
            return
        key = self.key_input.text().strip()
        if self._needs_key() and not key and not self._bot.has_api_key:
            self.rows["apiKey"].show_error(t("firstrun.error.key_missing"))
            return
        preset = self._preset(self._picked())
        # A local model needs no key: don't send one that was typed before switching to it.
        api_key = (key or None) if self._needs_key() else None
        changes = BotUpdate(
            model_base_url=base_url,
            model_name=model,
            api_key=api_key,
        )
        self.error.hide()
        self.save_button.setEnabled(False)
        self.save_button.setText(t("settings.saving"))
        log.info("first run: saving model %s at %s (%s)", model, base_url, preset.key if preset else CUSTOM)
        self._calls.start(self._bots.update(self._bot_id, changes), done=self._saved, failed=self._failed)

    # -- answers ---------------------------------------------------------------------------------------

    def _saved(self, view: BotView) -> None:
        self._bot = view
        self.save_button.setEnabled(True)
        self.save_button.setText(t("firstrun.save"))
        if view.configured:
            self.configured.emit()
        else:
            self._say(t("firstrun.error.not_configured"))

    def _failed(self, exc: Exception) -> None:
        self.save_button.setEnabled(True)
        self.save_button.setText(t("firstrun.save"))
        if isinstance(exc, InvalidInputError):
            row = self.rows.get("baseUrl" if exc.field == "provider" else exc.field)
            if row is not None:
                row.show_error(field_message(exc))
                return
            self._say(field_message(exc))
        elif is_no_keyring(exc):
            # The card can finish without a restart: the person may keep the key in a private file instead.
            self._say(exc.words(language()) if isinstance(exc, UnavailableError) else str(exc))
            self.key_file.offer()
        elif isinstance(exc, UnavailableError):
            self._say(exc.words(language()))
        else:
            log.warning("first-run save failed: %s", reason(exc))
            self._say(t("settings.save_failed", reason=reason(exc)))

    def _keep_keys_in_file(self) -> None:
        self._calls.start(self._bots.keep_keys_in_file(), done=self._keys_in_file, failed=self._failed)

    def _keys_in_file(self, _result: None) -> None:
        self.key_file.hide()
        self.error.hide()
        self.save()  # what the person asked for in the first place

    def _tested(self, check: ConnectionCheck, round_: int) -> None:
        if round_ != self._test_round:
            end_stale_check(self.test_button)
            return
        show_check(self.test_button, self.test_dot, self.test_result, check)

    def _forget_test(self) -> None:
        """The preset, address, model or key changed: the last test (or 请先填写密钥) was about others."""
        self._test_round += 1
        forget_check(self.test_dot, self.test_result)
        self.rows["apiKey"].clear_error()

    # -- helpers ---------------------------------------------------------------------------------------

    def _model_fields(self) -> tuple[str, str]:
        """The address and model, each said to be missing under its field when empty."""
        base_url = self.base_url_input.text().strip()
        model = self.model_input.currentText().strip()
        for row in self.rows.values():
            row.clear_error()
        if not base_url:
            self.rows["baseUrl"].show_error(t("settings.error.base_url_missing"))
        if not model:
            preset = self._preset(self._picked())
            missing = "firstrun.error.ollama_pull" if preset is not None and preset.local else None
            self.rows["model"].show_error(t(missing or "settings.error.model_missing"))
        return base_url, model

    def _picked(self) -> str:
        return next((k for k, b in self.preset_buttons.items() if b.isChecked()), CUSTOM)

    def _preset(self, key: str) -> ModelPreset | None:
        return next((p for p in self._presets if p.key == key), None)

    def _needs_key(self) -> bool:
        preset = self._preset(self._picked())
        return preset is None or preset.needs_key

    def _show_key_row(self) -> None:
        preset = self._preset(self._picked())
        self.rows["apiKey"].setVisible(self._needs_key())
        if self._bot is not None and self._bot.has_api_key:
            self.key_input.setPlaceholderText(t("settings.key.saved"))
        hint = ""
        if preset is not None and preset.key_hint:
            hint = t("settings.key.where", url=preset.key_hint, label=preset_label(preset))
        self.rows["apiKey"].set_hint(hint)
        if preset is not None and preset.local and not preset.models:
            self.rows["model"].set_hint(t("firstrun.error.ollama_pull"))
        else:
            self.rows["model"].set_hint("")

    def _match_preset(self) -> None:
        wanted = self.base_url_input.text().strip().rstrip("/")
        match = next((p for p in self._presets if p.base_url.rstrip("/") == wanted), None)
        self.preset_buttons[match.key if match else CUSTOM].setChecked(True)
        self._show_key_row()

    def _on_base_url_edited(self, _text: str) -> None:
        self._forget_test()
        self._match_preset()

    def _say(self, text: str) -> None:
        self.error.setText(text)
        self.error.show()

    def shutdown(self) -> None:
        self._calls.cancel_all()

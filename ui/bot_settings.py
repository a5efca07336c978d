"""A bot's settings, as one calm page of grouped lists (docs/desktop.md#look: a `--well` list per group, small
labels above, state as a dot plus text):

    机器人      名称 · 头像
    模型        服务 · 接口地址 · 模型 · API 密钥 · [测试连接] ● 连接成功：… 有回应（120 毫秒）。
                · 模型能看图片 (follows the model until the person flips it)
    权限        只读 / 工作区可写 / 完全, each with one line of what it means
    后台工作    同时进行 · 安静时段 · 暂停后台工作 · 预算保护 (read only, when the reserve has a line)
    渠道        the bot's channels with 重新扫码 / 移除, and 连接微信 (ui.channel_settings; acts at once)
    工具服务器  its MCP servers with their state, and 编辑配置… (ui.mcp_settings; saves on its own)
    技能        its skills and the folders that are not, 添加技能… and drops (ui.skill_settings; acts at once)

Save sends only what changed, through `BotFacade.update`, which checks every field before it writes
anything: a refused field is said under that field and the dialog stays open with everything typed; a
missing keyring (UnavailableError) is said plainly above the buttons. Cancel discards. An empty key field
leaves the stored key alone; 清除 removes it on save.

The page's building blocks are in `ui.form`, shared with the app settings, the new-task dialog and the
first-run card.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QRectF, QSize, Qt, QTime, Signal, SignalInstance
from PySide6.QtGui import QCloseEvent, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import (
    QButtonGroup,
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QRadioButton,
    QScrollArea,
    QTimeEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from core.bots.avatars import AVATAR_COLOURS
from core.bots.facade import BotFacade
from core.bots.model_images import images_by_default
from core.bots.views import BotUpdate, BotView, ConnectionCheck, ModelPreset
from core.channels.facade import ChannelFacade
from core.errors import InvalidInputError, UnavailableError
from core.mcp.facade import McpFacade
from core.skills.facade import SkillsFacade
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.avatar import avatar_pixmap, resolve_colour, shade
from ui.channel_settings import ChannelSection
from ui.connection_check import end_stale_check, forget_check, needs_key, show_check, show_testing
from ui.form import (
    Combo,
    FieldRow,
    Section,
    Switch,
    button,
    dialog_footer,
    field_message,
    line_input,
    small_label,
)
from ui.i18n import language, t
from ui.mcp_settings import McpSection
from ui.skill_settings import SkillsSection
from ui.status_dot import StatusDot
from ui.wrapped_label import WrappedLabel

log = logging.getLogger(__name__)

# core.bots.validation's bounds; repeated so the UI doesn't import the agent sandbox just for two numbers.
MIN_TASK_SLOTS = 1
MAX_TASK_SLOTS = 4
PERMISSION_PRESETS: tuple[str, ...] = ("read-only", "workspace-write", "full")
CUSTOM = "custom"
AVATAR_PREVIEW = 40
SWATCH = 22
# The calm default (docs/push-rules.md#quiet-hours) offered again when quiet hours are turned back on after
# being off.
DEFAULT_QUIET = ("22:00", "08:00")


# -- building blocks -----------------------------------------------------------------------------------


def swatch_icon(key: str, size: int = SWATCH) -> QIcon:
    pixmap = QPixmap(size * 2, size * 2)
    pixmap.setDevicePixelRatio(2.0)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(shade(key))
    painter.drawEllipse(QRectF(1, 1, size - 2, size - 2))
    painter.end()
    return QIcon(pixmap)


def find_preset(presets: list[ModelPreset], base_url: str) -> ModelPreset | None:
    wanted = base_url.strip().rstrip("/")
    return next((p for p in presets if p.base_url.rstrip("/") == wanted and wanted), None)


def preset_label(preset: ModelPreset) -> str:
    # Core labels the local one 「Ollama(本机)」; the choices read better as 「本机 Ollama」.
    return t("settings.provider.ollama") if preset.key == "ollama" else preset.label


# -- the dialog ----------------------------------------------------------------------------------------


class BotSettingsDialog(QDialog):
    """`saved(BotView)` after a save went through (the dialog then closes)."""

    saved = Signal(object)

    def __init__(
        self,
        bots: BotFacade,
        bot_id: str,
        parent: QWidget | None = None,
        *,
        reserve_line: str = "",
        channels: ChannelFacade | None = None,
        channel_changed: SignalInstance | None = None,
        mcp: McpFacade | None = None,
        mcp_changed: SignalInstance | None = None,
        skills: SkillsFacade | None = None,
        skills_changed: SignalInstance | None = None,
    ) -> None:
        """`reserve_line` is the chat reserve's sentence for this bot (`ReserveWatcher.line`); its row is
        shown only when there is one. With `channels`, a 渠道 section lists the bot's channels
        (`ui.channel_settings`); `channel_changed` is the bridge's `channelChanged`. With `mcp`, a 工具服务器
        section lists its MCP servers (`ui.mcp_settings`), following the bridge's `mcpChanged`. With
        `skills`, a 技能 section lists its skills (`ui.skill_settings`), following `skillsChanged`."""
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setWindowTitle(t("settings.bot.title"))
        self.setModal(True)
        self.resize(600, 720)
        self._bots = bots
        self._bot_id = bot_id
        self._bot: BotView | None = None
        self._presets: list[ModelPreset] = []
        self._key_cleared = False
        # Until the person flips 模型能看图片, it follows what the typed model is known to take.
        self._images_touched = False
        self._calls = AsyncCalls()
        self._test_round = 0  # bumped when what is tested changes: an older test's outcome is dropped
        self._reserve_line = reserve_line.strip()

        scroll = QScrollArea(self)
        scroll.setObjectName("settingsScroll")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        page = QWidget(scroll)
        page.setObjectName("settingsPage")
        column = QVBoxLayout(page)
        column.setContentsMargins(24, 20, 24, 20)
        column.setSpacing(18)
        column.addWidget(self._build_bot_section(page))
        column.addWidget(self._build_model_section(page))
        column.addWidget(self._build_permission_section(page))
        column.addWidget(self._build_background_section(page))
        # Sections that act at once rather than on Save.
        self.channel_section: ChannelSection | None = None
        if channels is not None:
            self.channel_section = ChannelSection(channels, bot_id, page, channel_changed)
        self.mcp_section: McpSection | None = McpSection(mcp, bot_id, page, mcp_changed) if mcp else None
        self.skills_section: SkillsSection | None = (
            SkillsSection(skills, bot_id, page, skills_changed) if skills else None
        )
        for live in (self.channel_section, self.mcp_section, self.skills_section):
            if live is not None:
                column.addWidget(live)
        column.addStretch(1)
        scroll.setWidget(page)

        footer = self._build_footer()

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(0)
        outer.addWidget(scroll, 1)
        outer.addWidget(footer)

    # -- building --------------------------------------------------------------------------------------

    def _build_footer(self) -> QWidget:
        self.error = small_label("", "danger", "settingsFormError", self)
        self.cancel_button = button(t("settings.cancel"), self)
        self.cancel_button.clicked.connect(self.reject)
        self.save_button = button(t("settings.save"), self, "primary")
        self.save_button.setDefault(True)
        self.save_button.setEnabled(False)  # until the bot is read
        self.save_button.clicked.connect(self.save)
        footer = QWidget(self)
        footer.setObjectName("settingsFooter")
        foot = dialog_footer(self.error, self.cancel_button, self.save_button)
        foot.setContentsMargins(24, 10, 24, 14)
        footer.setLayout(foot)
        return footer

    def _build_bot_section(self, page: QWidget) -> Section:
        section = Section(t("settings.section.bot"), page)
        self.name_input = line_input(section)
        self.name_input.setMaxLength(60)
        self.name_input.textChanged.connect(lambda _text: self._paint_preview())
        self.avatar_preview = QLabel(section)
        self.avatar_preview.setObjectName("avatarPreview")
        self.avatar_preview.setFixedSize(AVATAR_PREVIEW, AVATAR_PREVIEW)
        self.avatar_group = QButtonGroup(self)
        self.avatar_group.setExclusive(True)
        self.avatar_buttons: dict[str, QToolButton] = {}
        swatches = QHBoxLayout()
        swatches.setSpacing(6)
        swatches.addWidget(self.avatar_preview)
        swatches.addSpacing(8)
        for key in AVATAR_COLOURS:
            swatch = QToolButton(section)
            swatch.setObjectName("avatarSwatch")
            swatch.setCheckable(True)
            swatch.setIcon(swatch_icon(key))
            swatch.setIconSize(QSize(SWATCH, SWATCH))
            swatch.setToolTip(t(f"settings.avatar.{key}"))
            swatch.setAccessibleName(t(f"settings.avatar.{key}"))
            swatch.setCursor(Qt.CursorShape.PointingHandCursor)
            swatch.toggled.connect(self._on_swatch)
            self.avatar_group.addButton(swatch)
            self.avatar_buttons[key] = swatch
            swatches.addWidget(swatch)
        swatches.addStretch(1)
        self.rows: dict[str, FieldRow] = {}
        self.rows["name"] = FieldRow(t("settings.name"), self.name_input, parent=section)
        self.rows["avatar"] = FieldRow(t("settings.avatar"), swatches, parent=section)
        section.add(self.rows["name"])
        section.add(self.rows["avatar"])
        return section

    def _build_model_section(self, page: QWidget) -> Section:
        section = Section(t("settings.section.model"), page)
        self.provider_combo = Combo(section)
        self.provider_combo.addItem(t("settings.provider.custom"), CUSTOM)
        self.provider_combo.activated.connect(self._on_provider_picked)
        self.base_url_input = line_input(section, "https://api.deepseek.com/v1")
        self.base_url_input.textEdited.connect(self._on_base_url_edited)
        self.model_input = Combo(section, editable=True)
        self.model_input.activated.connect(lambda _index: self._on_model_changed())
        line = self.model_input.lineEdit()
        if line is not None:
            line.setPlaceholderText("deepseek-chat")
            line.textEdited.connect(lambda _text: self._on_model_changed())
        self.key_input = line_input(section, t("settings.key.none"))
        self.key_input.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_input.textEdited.connect(lambda _text: self._forget_test())
        self.clear_key_button = button(t("settings.key.clear"), section, "quiet")
        self.clear_key_button.clicked.connect(self._clear_key)
        self.clear_key_button.hide()
        key_line = QHBoxLayout()
        key_line.setSpacing(6)
        key_line.addWidget(self.key_input, 1)
        key_line.addWidget(self.clear_key_button)

        self.test_button = button(t("settings.test"), section)
        self.test_button.clicked.connect(self.test_connection)
        self.test_dot = StatusDot("idle", 8, section)
        self.test_dot.hide()
        self.test_result = WrappedLabel("", section)
        self.test_result.setObjectName("testResult")
        self.test_result.setTextFormat(Qt.TextFormat.PlainText)
        self.test_result.setFont(theme.font("small"))
        self.test_result.hide()
        test_line = QHBoxLayout()
        test_line.setSpacing(8)
        # Left-aligned: with no result beside it yet, the button keeps its own width.
        test_line.addWidget(self.test_button, 0, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        test_line.addWidget(self.test_dot, 0, Qt.AlignmentFlag.AlignVCenter)
        test_line.addWidget(self.test_result, 1, Qt.AlignmentFlag.AlignVCenter)

        self.rows["provider"] = FieldRow(t("settings.provider"), self.provider_combo, parent=section)
        self.rows["baseUrl"] = FieldRow(t("settings.base_url"), self.base_url_input, parent=section)
        self.rows["model"] = FieldRow(t("settings.model"), self.model_input, parent=section)
        self.rows["apiKey"] = FieldRow(t("settings.api_key"), key_line, parent=section)
        self.rows["apiKey"].hint.setTextFormat(Qt.TextFormat.RichText)
        self.rows["apiKey"].hint.setOpenExternalLinks(True)
        self.rows["test"] = FieldRow("", test_line, parent=section)
        self.images_switch = Switch(t("settings.images.switch"), section)
        self.images_switch.clicked.connect(self._on_images_clicked)
        self.rows["images"] = FieldRow(
            t("settings.images"), self.images_switch, t("settings.images.hint"), parent=section
        )
        for key in ("provider", "baseUrl", "model", "apiKey", "test", "images"):
            section.add(self.rows[key])
        return section

    def _build_permission_section(self, page: QWidget) -> Section:
        section = Section(t("settings.section.permission"), page)
        self.preset_group = QButtonGroup(self)
        self.preset_buttons: dict[str, QRadioButton] = {}
        options = QVBoxLayout()
        options.setSpacing(2)
        for preset in PERMISSION_PRESETS:
            radio = QRadioButton(t(f"settings.permission.{preset}"), section)
            radio.setObjectName("settingsRadio")
            radio.setCursor(Qt.CursorShape.PointingHandCursor)
            explain = small_label(t(f"settings.permission.{preset}.hint"), "faint", "settingsHint", section)
            explain.setContentsMargins(24, 0, 0, 6)
            self.preset_group.addButton(radio)
            self.preset_buttons[preset] = radio
            options.addWidget(radio)
            options.addWidget(explain)
        self.rows["preset"] = FieldRow(t("settings.permission"), options, parent=section)
        section.add(self.rows["preset"])
        return section

    def _build_background_section(self, page: QWidget) -> Section:
        section = Section(t("settings.section.background"), page)
        self.slots_input = Combo(section)
        for count in range(MIN_TASK_SLOTS, MAX_TASK_SLOTS + 1):
            self.slots_input.addItem(str(count), count)
        self.slots_input.setMinimumWidth(80)
        slots_line = QHBoxLayout()
        slots_line.addWidget(self.slots_input)
        slots_line.addStretch(1)

        self.quiet_start = QTimeEdit(section)
        self.quiet_end = QTimeEdit(section)
        for edit in (self.quiet_start, self.quiet_end):
            edit.setObjectName("settingsTime")
            edit.setDisplayFormat("HH:mm")
            # The step buttons are styled away (a styled time edit loses the platform's arrows); typing,
            # the arrow keys and the wheel still change the hour or minute under the cursor. NoButtons
            # would be the direct way, but with a stylesheet it squeezes the text to nothing.
            edit.setAlignment(Qt.AlignmentFlag.AlignCenter)
            edit.setFixedWidth(76)
        self.quiet_to = QLabel(t("settings.quiet.to"), section)
        self.quiet_to.setProperty("role", "muted")
        self.quiet_off = Switch(t("settings.quiet.off"), section)
        self.quiet_off.toggled.connect(self._on_quiet_off)
        quiet_line = QHBoxLayout()
        quiet_line.setSpacing(8)
        quiet_line.addWidget(self.quiet_start)
        quiet_line.addWidget(self.quiet_to)
        quiet_line.addWidget(self.quiet_end)
        quiet_line.addSpacing(12)
        quiet_line.addWidget(self.quiet_off)
        quiet_line.addStretch(1)

        self.paused_switch = Switch(t("settings.paused.switch"), section)
        self.rows["taskSlots"] = FieldRow(
            t("settings.task_slots"), slots_line, t("settings.task_slots.hint"), section
        )
        self.rows["quietHours"] = FieldRow(t("settings.quiet"), quiet_line, t("settings.quiet.hint"), section)
        self.rows["paused"] = FieldRow(
            t("settings.paused"), self.paused_switch, t("settings.paused.hint"), section
        )
        for key in ("taskSlots", "quietHours", "paused"):
            section.add(self.rows[key])
        self._background_section = section
        self.reserve_label: WrappedLabel | None = None
        self._reserve_separator: QWidget | None = None
        self.set_reserve_line(self._reserve_line)
        return section

    def set_reserve_line(self, text: str) -> None:
        """Show the chat reserve's sentence (「OpenRouter 限额 $10.00,剩余 $8.20」) in a read-only row at the
        end of 后台工作; an empty one hides the row."""
        text = text.strip()
        self._reserve_line = text
        row = self.rows.get("reserve")
        if row is None:
            if not text:
                return
            section = self._background_section
            self.reserve_label = WrappedLabel(text, section)
            self.reserve_label.setObjectName("reserveLine")
            self.reserve_label.setTextFormat(Qt.TextFormat.PlainText)
            self.reserve_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            row = FieldRow(t("settings.reserve"), self.reserve_label, t("settings.reserve.hint"), section)
            self.rows["reserve"] = row
            section.add(row)
            well = section.well.layout()
            index = well.indexOf(row) if well is not None else -1
            before = well.itemAt(index - 1) if well is not None and index > 0 else None
            self._reserve_separator = before.widget() if before is not None else None
        elif self.reserve_label is not None:
            self.reserve_label.setText(text)
        row.setVisible(bool(text))
        if self._reserve_separator is not None:
            self._reserve_separator.setVisible(bool(text))

    # -- loading ---------------------------------------------------------------------------------------

    async def load(self) -> None:
        """Read the bot into the form, then the provider choices (a local Ollama probe may take a moment;
        the form is usable before it answers)."""
        try:
            bot = await self._bots.get(self._bot_id)
        except Exception as exc:
            log.warning("cannot read bot %s for its settings: %s", self._bot_id, reason(exc))
            self.error.setText(t("settings.load_failed", reason=reason(exc)))
            self.error.show()
            return
        self._fill(bot)
        if self.channel_section is not None:
            self.channel_section.load()
        if self.mcp_section is not None:
            self.mcp_section.load()
        if self.skills_section is not None:
            self.skills_section.load()
        try:
            presets = await self._bots.model_presets(lang=language())
        except Exception as exc:
            log.warning("cannot read model presets: %s", reason(exc))
            presets = []
        self._set_presets(presets)

    def _fill(self, bot: BotView) -> None:
        self._bot = bot
        self.setWindowTitle(t("settings.bot.title_named", name=bot.name))
        self.name_input.setText(bot.name)
        self.avatar_buttons[resolve_colour(bot.avatar, bot.id)].setChecked(True)
        self.base_url_input.setText(bot.model_base_url)
        self.model_input.setEditText(bot.model_name)
        self._key_cleared = False
        self._show_key_state()
        radio = self.preset_buttons.get(bot.preset) or self.preset_buttons["workspace-write"]
        radio.setChecked(True)
        self.slots_input.setCurrentIndex(max(self.slots_input.findData(bot.task_slots), 0))
        off = bot.quiet_start == bot.quiet_end
        start, end = DEFAULT_QUIET if off else (bot.quiet_start, bot.quiet_end)
        self.quiet_start.setTime(QTime.fromString(start, "HH:mm"))
        self.quiet_end.setTime(QTime.fromString(end, "HH:mm"))
        self.quiet_off.setChecked(off)
        self._on_quiet_off(off)
        self.paused_switch.setChecked(bot.paused)
        self._images_touched = False
        self.images_switch.setChecked(bot.images)
        self._paint_preview()
        self.save_button.setEnabled(True)

    def _set_presets(self, presets: list[ModelPreset]) -> None:
        self._presets = presets
        self.provider_combo.clear()
        for preset in presets:
            self.provider_combo.addItem(preset_label(preset), preset.key)
        self.provider_combo.addItem(t("settings.provider.custom"), CUSTOM)
        self._match_provider()
        matched = self._current_preset()
        if matched is not None and matched.models:
            self._offer_models(matched, keep=self.model_input.currentText())

    # -- what a person does ------------------------------------------------------------------------------

    def save(self) -> None:
        if self._bot is None or not self.save_button.isEnabled():
            return
        self._clear_errors()
        changes = self.changes()
        if changes == BotUpdate():
            self.accept()  # nothing to write
            return
        self._set_saving(True)
        self._calls.start(
            self._bots.update(self._bot_id, changes), done=self._saved, failed=self._save_failed
        )

    def changes(self) -> BotUpdate:
        """The form's differences from the bot as read. Quiet hours go as a pair; off = equal times."""
        bot = self._bot
        assert bot is not None
        name = self.name_input.text().strip()
        avatar = self._picked_avatar()
        base_url = self.base_url_input.text().strip()
        model = self.model_input.currentText().strip()
        typed_key = self.key_input.text().strip()
        api_key = typed_key or ("" if self._key_cleared else None)
        preset = next((p for p, radio in self.preset_buttons.items() if radio.isChecked()), bot.preset)
        slots = int(self.slots_input.currentData() or bot.task_slots)
        start = self.quiet_start.time().toString("HH:mm")
        end = start if self.quiet_off.isChecked() else self.quiet_end.time().toString("HH:mm")
        quiet_changed = (start, end) != (bot.quiet_start, bot.quiet_end)
        paused = self.paused_switch.isChecked()
        images = self.images_switch.isChecked()
        return BotUpdate(
            name=name if name != bot.name else None,
            avatar=avatar if avatar != resolve_colour(bot.avatar, bot.id) else None,
            model_base_url=base_url if base_url != bot.model_base_url else None,
            model_name=model if model != bot.model_name else None,
            api_key=api_key,
            preset=preset if preset != bot.preset else None,
            task_slots=slots if slots != bot.task_slots else None,
            quiet_start=start if quiet_changed else None,
            quiet_end=end if quiet_changed else None,
            paused=paused if paused != bot.paused else None,
            # Sent only when it differs from what the bot would do anyway (its choice, else its model's).
            images=images if images != self._images_expected(base_url, model) else None,
        )

    def test_connection(self) -> None:
        base_url = self.base_url_input.text().strip()
        model = self.model_input.currentText().strip()
        self.rows["baseUrl"].clear_error()
        self.rows["model"].clear_error()
        if not base_url:
            self.rows["baseUrl"].show_error(t("settings.error.base_url_missing"))
            return
        if not model:
            self.rows["model"].show_error(t("settings.error.model_missing"))
            return
        typed_key = self.key_input.text().strip()
        # None = the key stored for this bot; "" = test as if there were none (清除 pressed, not saved yet).
        key = typed_key or ("" if self._key_cleared else None)
        stored = self._bot is not None and self._bot.has_api_key and not self._key_cleared
        self.rows["apiKey"].clear_error()
        if needs_key(self._current_preset(), base_url) and not typed_key and not stored:
            # Asking the service would only come back with 401: say what is missing, where it goes.
            forget_check(self.test_dot, self.test_result)
            self.rows["apiKey"].show_error(t("connection.key_missing"))
            return
        show_testing(self.test_button, self.test_dot, self.test_result)
        round_ = self._test_round
        self._calls.start(
            self._bots.test_connection(base_url, model, key, bot_id=self._bot_id, lang=language()),
            done=lambda check: self._tested(check, round_),
            failed=lambda exc: self._tested(ConnectionCheck(ok=False, message=reason(exc)), round_),
        )

    # -- answers ---------------------------------------------------------------------------------------

    def _saved(self, view: object) -> None:
        self._set_saving(False)
        self.saved.emit(view)
        self.accept()

    def _save_failed(self, exc: Exception) -> None:
        self._set_saving(False)
        if isinstance(exc, InvalidInputError):
            row = self.row_for(exc.field)
            if row is not None:
                row.show_error(field_message(exc))
                return
            text = field_message(exc)
        elif isinstance(exc, UnavailableError):
            text = exc.message  # e.g. no keyring: the core says what to do
        else:
            log.warning("saving bot settings failed: %s", reason(exc))
            text = t("settings.save_failed", reason=reason(exc))
        self.error.setText(text)
        self.error.show()

    def _tested(self, check: ConnectionCheck, round_: int) -> None:
        if round_ != self._test_round:
            end_stale_check(self.test_button)
            return
        show_check(self.test_button, self.test_dot, self.test_result, check)

    def _forget_test(self) -> None:
        """The provider, address, model or key changed: the last test (or 请先填写密钥) was about others."""
        self._test_round += 1
        forget_check(self.test_dot, self.test_result)
        self.rows["apiKey"].clear_error()

    # -- helpers ---------------------------------------------------------------------------------------

    def row_for(self, field: str) -> FieldRow | None:
        """The row a refused field belongs to (the API's spelling: quietHours.start, provider, ...)."""
        aliases = {"quietHours.start": "quietHours", "quietHours.end": "quietHours", "provider": "baseUrl"}
        return self.rows.get(aliases.get(field, field))

    def field_error(self, field: str) -> str:
        row = self.row_for(field)
        return row.error_text if row is not None else ""

    def _clear_errors(self) -> None:
        for row in self.rows.values():
            row.clear_error()
        self.error.hide()

    def _set_saving(self, saving: bool) -> None:
        self.save_button.setEnabled(not saving)
        self.save_button.setText(t("settings.saving") if saving else t("settings.save"))

    def _picked_avatar(self) -> str:
        return next((k for k, b in self.avatar_buttons.items() if b.isChecked()), "")

    def _on_swatch(self, on: bool) -> None:
        if on:
            self._paint_preview()

    def _paint_preview(self) -> None:
        key = self._picked_avatar() or "slate"
        self.avatar_preview.setPixmap(avatar_pixmap(self.name_input.text(), key, AVATAR_PREVIEW))

    def _show_key_state(self) -> None:
        stored = self._bot is not None and self._bot.has_api_key and not self._key_cleared
        self.key_input.setPlaceholderText(t("settings.key.saved") if stored else t("settings.key.none"))
        self.clear_key_button.setVisible(stored)
        preset = self._current_preset()
        if self._key_cleared:
            hint = t("settings.key.cleared")
        elif preset is not None and preset.local:
            hint = t("settings.key.local")
        elif preset is not None and preset.key_hint:
            hint = t("settings.key.where", url=preset.key_hint, label=preset_label(preset))
        else:
            hint = ""
        self.rows["apiKey"].set_hint(hint)

    def _clear_key(self) -> None:
        self._key_cleared = True
        self.key_input.clear()
        self._show_key_state()
        self._forget_test()

    def _on_quiet_off(self, off: bool) -> None:
        for widget in (self.quiet_start, self.quiet_end, self.quiet_to):
            widget.setEnabled(not off)

    def _current_preset(self) -> ModelPreset | None:
        key = self.provider_combo.currentData()
        return next((p for p in self._presets if p.key == key), None)

    def _match_provider(self) -> None:
        preset = find_preset(self._presets, self.base_url_input.text())
        index = self.provider_combo.findData(preset.key if preset else CUSTOM)
        self.provider_combo.setCurrentIndex(max(index, 0))
        self._show_key_state()

    def _on_provider_picked(self, index: int) -> None:
        self._forget_test()
        preset = self._current_preset()
        if preset is None:
            self._show_key_state()
            return  # 自定义: keep what is typed
        self.base_url_input.setText(preset.base_url)
        self._offer_models(preset, keep="")
        self._show_key_state()
        self._follow_model_images()

    def _offer_models(self, preset: ModelPreset, keep: str) -> None:
        self.model_input.clear()
        self.model_input.addItems(list(preset.models) or ([preset.model] if preset.model else []))
        self.model_input.setEditText(keep or preset.model)

    def _on_base_url_edited(self, _text: str) -> None:
        self._forget_test()
        self._match_provider()
        self._follow_model_images()

    def _on_model_changed(self) -> None:
        self._forget_test()
        self._follow_model_images()

    def _on_images_clicked(self, _checked: bool) -> None:
        self._images_touched = True

    def _images_expected(self, base_url: str, model: str) -> bool:
        """What the bot does about images with this address and model when the switch is not sent."""
        bot = self._bot
        if bot is None:
            return False
        if bot.images_chosen is not None:
            return bot.images_chosen
        if (base_url, model) == (bot.model_base_url, bot.model_name):
            return bot.images  # as read: the core knows best (ERRAND_MODEL_IMAGES, say)
        return images_by_default(base_url, model)

    def _follow_model_images(self) -> None:
        """A new address or model moves the switch to what that model is known to take, unless the person
        chose (now or before)."""
        if self._images_touched or self._bot is None or self._bot.images_chosen is not None:
            return
        base_url = self.base_url_input.text().strip()
        model = self.model_input.currentText().strip()
        self.images_switch.setChecked(self._images_expected(base_url, model))

    # -- closing ---------------------------------------------------------------------------------------

    def done(self, result: int) -> None:
        self._shutdown()
        super().done(result)

    def closeEvent(self, event: QCloseEvent) -> None:
        self._shutdown()
        super().closeEvent(event)

    def _shutdown(self) -> None:
        self._calls.cancel_all()
        if self.channel_section is not None:
            self.channel_section.shutdown()
        if self.mcp_section is not None:
            self.mcp_section.shutdown()
        if self.skills_section is not None:
            self.skills_section.shutdown()

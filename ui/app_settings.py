"""App settings: language, theme and start at login, saved through `PreferencesFacade`.

    外观        语言   [跟随系统 ▾]   (applied on 保存: the window is built again in it, no restart)
                主题   [跟随系统 ▾]   (applied at once, so the choice can be seen before saving)
    启动        [开] 登录电脑时启动 Errand
    价格        the person's own price per model (ui.price_settings; only when a PriceFacade is given)
    网页搜索    which search service bots use (ui.web_search_settings; only when a WebSearchFacade is given)

The theme is previewed live and put back on Cancel. Start at login is written by the injected `autostart`
callable (app.autostart.set_start_at_login, or a stand-in in tests), off the loop thread; if it can't be
done (a read-only folder, a registry that refuses) that is said under the switch and nothing is saved.
Prices and the search setup are saved on their own, at once, with their sections' buttons (保存价格 and
删除, 保存搜索设置); the dialog's 保存 is for the preferences.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import cast

from PySide6.QtCore import Signal, SignalInstance
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QFrame,
    QHBoxLayout,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from core.cost.price_facade import PriceFacade
from core.errors import InvalidInputError
from core.preferences import (
    LANGUAGE_CHOICES,
    THEME_CHOICES,
    Preferences,
    PreferencesFacade,
    PreferencesUpdate,
)
from core.web_search.facade import WebSearchFacade
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.form import Combo, FieldRow, Section, Switch, button, dialog_footer, field_message, small_label
from ui.i18n import t
from ui.price_settings import PriceSection
from ui.web_search_settings import WebSearchSection

log = logging.getLogger(__name__)

Autostart = Callable[[bool], None]


def apply_theme_choice(app: QApplication, choice: str) -> None:
    """「跟随系统」 follows the system scheme; 浅色 / 深色 pin one."""
    picked: theme.Scheme | None = "light" if choice == "light" else "dark" if choice == "dark" else None
    theme.apply_theme(app, picked)


class AppSettingsDialog(QDialog):
    """`saved(Preferences)` once the choices are stored (the dialog then closes); `languageChanged(choice)`
    too when the language was one of them ('zh', 'en' or 'auto'), for the app to switch to it at once."""

    saved = Signal(object)
    languageChanged = Signal(str)

    def __init__(
        self,
        preferences: PreferencesFacade,
        autostart: Autostart,
        app: QApplication | None = None,
        parent: QWidget | None = None,
        *,
        prices: PriceFacade | None = None,
        prices_changed: SignalInstance | None = None,
        web_search: WebSearchFacade | None = None,
        web_search_changed: SignalInstance | None = None,
    ) -> None:
        """`prices`: the 价格 section's facade (the host's PriceBook); without it there is no such section.
        `prices_changed` (the bridge's `pricesChanged`) makes the section re-read prices changed elsewhere.
        `web_search` and `web_search_changed` do the same for the 网页搜索 section."""
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setWindowTitle(t("settings.app.title"))
        self.setModal(True)
        self.resize(*((560, 680) if prices is not None or web_search is not None else (520, 360)))
        self._preferences = preferences
        self._autostart = autostart
        self._app = app or cast(QApplication, QApplication.instance())
        self._loaded: Preferences | None = None
        self._calls = AsyncCalls()

        scroll = QScrollArea(self)
        scroll.setObjectName("settingsScroll")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        page = QWidget(scroll)
        page.setObjectName("settingsPage")
        self.rows: dict[str, FieldRow] = {}
        column = QVBoxLayout(page)
        column.setContentsMargins(24, 20, 24, 8)
        column.setSpacing(18)
        column.addWidget(self._build_look(page))
        column.addWidget(self._build_start(page))
        self._build_own_saves(column, page, prices, prices_changed, web_search, web_search_changed)
        column.addStretch(1)
        scroll.setWidget(page)

        self.error = small_label("", "danger", "settingsFormError", self)
        self.cancel_button = button(t("settings.cancel"), self)
        self.cancel_button.clicked.connect(self.reject)
        self.save_button = button(t("settings.save"), self, "primary")
        self.save_button.setDefault(True)
        self.save_button.setEnabled(False)  # until the preferences are read
        self.save_button.clicked.connect(self.save)
        foot = dialog_footer(self.error, self.cancel_button, self.save_button)
        foot.setContentsMargins(24, 0, 24, 0)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 14)
        outer.setSpacing(6)
        outer.addWidget(scroll, 1)
        outer.addLayout(foot)

    def _build_own_saves(
        self,
        column: QVBoxLayout,
        page: QWidget,
        prices: PriceFacade | None,
        prices_changed: SignalInstance | None,
        web_search: WebSearchFacade | None,
        web_search_changed: SignalInstance | None,
    ) -> None:
        """The sections that save on their own, with their own buttons: prices and web search."""
        self.price_section: PriceSection | None = None
        if prices is not None:
            self.price_section = PriceSection(prices, page)
            if prices_changed is not None:
                prices_changed.connect(self.price_section.on_prices_changed)
            column.addWidget(self.price_section)
        self.web_search_section: WebSearchSection | None = None
        if web_search is not None:
            self.web_search_section = WebSearchSection(web_search, page)
            if web_search_changed is not None:
                web_search_changed.connect(self.web_search_section.on_web_search_changed)
            column.addWidget(self.web_search_section)

    def _build_look(self, page: QWidget) -> Section:
        look = Section(t("settings.section.look"), page)
        self.language_combo = Combo(look)
        for lang in LANGUAGE_CHOICES:
            self.language_combo.addItem(t(f"settings.language.{lang}"), lang)
        self.theme_combo = Combo(look)
        for scheme in THEME_CHOICES:
            self.theme_combo.addItem(t(f"settings.theme.{scheme}"), scheme)
        # `activated` is a person's pick only, so loading the stored choice doesn't re-style the app.
        self.theme_combo.activated.connect(lambda _i: self._on_theme())
        language_line = QHBoxLayout()
        language_line.setSpacing(10)
        language_line.addWidget(self.language_combo)
        language_line.addStretch(1)
        theme_line = QHBoxLayout()
        theme_line.addWidget(self.theme_combo)
        theme_line.addStretch(1)
        self.rows["language"] = FieldRow(t("settings.language"), language_line, parent=look)
        self.rows["theme"] = FieldRow(t("settings.theme"), theme_line, parent=look)
        look.add(self.rows["language"])
        look.add(self.rows["theme"])
        return look

    def _build_start(self, page: QWidget) -> Section:
        start = Section(t("settings.section.start"), page)
        self.autostart_switch = Switch(t("settings.autostart.switch"), start)
        self.rows["startAtLogin"] = FieldRow(
            t("settings.autostart"), self.autostart_switch, t("settings.autostart.hint"), start
        )
        start.add(self.rows["startAtLogin"])
        return start

    async def load(self) -> None:
        try:
            prefs = await self._preferences.preferences()
        except Exception as exc:
            log.warning("cannot read preferences: %s", reason(exc))
            self._say(t("settings.load_failed", reason=reason(exc)))
        else:
            self._show_preferences(prefs)
        if self.price_section is not None:
            await self.price_section.load()
        if self.web_search_section is not None:
            await self.web_search_section.load()

    def _show_preferences(self, prefs: Preferences) -> None:
        self._loaded = prefs
        self._select(self.language_combo, prefs.language)
        self._select(self.theme_combo, prefs.theme)
        self.autostart_switch.setChecked(prefs.start_at_login)
        self.save_button.setEnabled(True)

    # -- what a person does ------------------------------------------------------------------------------

    def changes(self) -> PreferencesUpdate:
        loaded = self._loaded
        assert loaded is not None
        chosen_language = str(self.language_combo.currentData())
        chosen_theme = str(self.theme_combo.currentData())
        start = self.autostart_switch.isChecked()
        return PreferencesUpdate(
            language=chosen_language if chosen_language != loaded.language else None,
            theme=chosen_theme if chosen_theme != loaded.theme else None,
            start_at_login=start if start != loaded.start_at_login else None,
        )

    def save(self) -> None:
        if self._loaded is None or not self.save_button.isEnabled():
            return
        for row in self.rows.values():
            row.clear_error()
        self.error.hide()
        changes = self.changes()
        if changes == PreferencesUpdate():
            self.accept()
            return
        self.save_button.setEnabled(False)
        self.save_button.setText(t("settings.saving"))
        self._calls.start(self._store(changes), done=self._saved, failed=self._failed)

    async def _store(self, changes: PreferencesUpdate) -> Preferences:
        if changes.start_at_login is not None:
            # A small file write, but still disk I/O: kept off the loop thread like all blocking work.
            await asyncio.to_thread(self._autostart, changes.start_at_login)
        return await self._preferences.update_preferences(changes)

    # -- answers ---------------------------------------------------------------------------------------

    def _saved(self, prefs: Preferences) -> None:
        language_changed = self._loaded is not None and prefs.language != self._loaded.language
        self._loaded = prefs
        self.save_button.setEnabled(True)
        self.save_button.setText(t("settings.save"))
        self.saved.emit(prefs)
        if language_changed:
            self.languageChanged.emit(prefs.language)
        self.accept()

    def _failed(self, exc: Exception) -> None:
        self.save_button.setEnabled(True)
        self.save_button.setText(t("settings.save"))
        if isinstance(exc, OSError):
            self.rows["startAtLogin"].show_error(t("settings.autostart.failed", reason=str(exc)))
        elif isinstance(exc, InvalidInputError) and exc.field in self.rows:
            self.rows[exc.field].show_error(field_message(exc))
        else:
            log.warning("saving preferences failed: %s", reason(exc))
            self._say(t("settings.save_failed", reason=reason(exc)))

    # -- helpers ---------------------------------------------------------------------------------------

    def _on_theme(self) -> None:
        apply_theme_choice(self._app, str(self.theme_combo.currentData()))

    def _select(self, combo: QComboBox, value: str) -> None:
        index = combo.findData(value)
        combo.setCurrentIndex(max(index, 0))

    def _say(self, text: str) -> None:
        self.error.setText(text)
        self.error.show()

    # -- closing ---------------------------------------------------------------------------------------

    def reject(self) -> None:
        # The theme was only previewed: put back the one that is stored.
        if self._loaded is not None and self.theme_combo.currentData() != self._loaded.theme:
            apply_theme_choice(self._app, self._loaded.theme)
        super().reject()

    def done(self, result: int) -> None:
        self._cancel_calls()
        super().done(result)

    def closeEvent(self, event: QCloseEvent) -> None:
        self._cancel_calls()
        super().closeEvent(event)

    def _cancel_calls(self) -> None:
        self._calls.cancel_all()
        if self.price_section is not None:
            self.price_section.cancel_calls()
        if self.web_search_section is not None:
            self.web_search_section.cancel_calls()

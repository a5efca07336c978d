"""The 网页搜索 section of the app settings (docs/web-search.md#settings): which search service bots use,
saved through `WebSearchFacade` with the section's own button (the dialog's 保存 is for the preferences).

    网页搜索
      设置一个搜索服务后，每个机器人都有 web_search 工具……
      服务   [SearXNG（自己的服务器） ▾]
      地址   [http://127.0.0.1:8080]            (SearXNG only)
      密钥   [已保存在系统钥匙串里，留空则保留]   (Brave Search and Tavily only)
      状态   可用 · SearXNG · http://127.0.0.1:8080
             [保存搜索设置]

The status line says what bots have now: no tool (未设置), a working service, or why a chosen one cannot
search (a key gone from the keyring). A refused field is said under its row and nothing is saved. The
section re-reads the setup when the bridge's `webSearchChanged` says it changed elsewhere (the API).
"""

from __future__ import annotations

import logging
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLineEdit, QVBoxLayout, QWidget

from core.errors import InvalidInputError, UnavailableError
from core.web_search.facade import WebSearchFacade
from core.web_search.views import NAMES, NEEDS_KEY, PROVIDERS, WebSearchView
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.form import LABEL_WIDTH, Combo, EnterSubmits, FieldRow, Section, button, line_input, small_label
from ui.i18n import t
from ui.status_dot import StatusDot
from ui.theme import DotState

log = logging.getLogger(__name__)

KEPT_KEY = "********"  # what the facade reads as "keep the stored key"
_NONE = ""  # the combo's data for 不使用
EXAMPLE_URL = "http://127.0.0.1:8080"


class WebSearchSection(Section):
    """`changed()` after a setup was saved."""

    changed = Signal()

    def __init__(self, web_search: WebSearchFacade, parent: QWidget | None = None) -> None:
        super().__init__(t("web_search.section"), parent)
        self.setObjectName("webSearchSection")
        self._web_search = web_search
        self._calls = AsyncCalls()
        self._loaded: WebSearchView | None = None
        self._saving = False

        intro = QWidget(self.well)
        intro_line = QVBoxLayout(intro)
        intro_line.setContentsMargins(14, 10, 14, 10)
        intro_line.addWidget(small_label(t("web_search.intro"), "muted", "webSearchIntro", intro))
        self.add(intro)

        self.service_combo = Combo(self.well)
        self.service_combo.addItem(t("web_search.service.none"), _NONE)
        for provider in PROVIDERS:
            self.service_combo.addItem(t(f"web_search.service.{provider}"), provider)
        self.service_combo.activated.connect(lambda _i: self._on_service())
        service_line = QHBoxLayout()
        service_line.addWidget(self.service_combo)
        service_line.addStretch(1)
        self.url_input = line_input(self.well, EXAMPLE_URL)
        self.url_input.textEdited.connect(lambda _text: self._on_edit())
        self.key_input = line_input(self.well, t("web_search.key.none"))
        self.key_input.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_input.textEdited.connect(lambda _text: self._on_edit())
        self.rows: dict[str, FieldRow] = {
            "provider": FieldRow(t("web_search.service"), service_line, parent=self.well),
            "url": FieldRow(t("web_search.url"), self.url_input, t("web_search.url.hint"), self.well),
            "key": FieldRow(t("web_search.key"), self.key_input, parent=self.well),
        }
        self.add(self.rows["provider"])
        # The address and the key each come with their line above, so a hidden one leaves no double line.
        self._boxes: dict[str, QWidget] = {}
        for field in ("url", "key"):
            box = self._boxes[field] = QWidget(self.well)
            column = QVBoxLayout(box)
            column.setContentsMargins(0, 0, 0, 0)
            column.setSpacing(0)
            line = QFrame(box)
            line.setObjectName("settingsLine")
            line.setFixedHeight(1)
            column.addWidget(line)
            column.addWidget(self.rows[field])
            self.add(box, ruled=False)

        self.add(self._build_status())

        # Enter in a field saves the search setup, not the preferences (the dialog's default button).
        self._enter = EnterSubmits(self.submit, self)
        for widget in (self.url_input, self.key_input):
            widget.installEventFilter(self._enter)
        self._show_fields()

    def _build_status(self) -> QWidget:
        """What bots have now, anything that went wrong, and 保存搜索设置, under the fields."""
        status = QWidget(self.well)
        status_column = QVBoxLayout(status)
        status_column.setContentsMargins(14, 10, 14, 10)
        status_column.setSpacing(6)
        self.status_dot = StatusDot("idle", 8, status)
        self.status_label = small_label("", "muted", "webSearchStatus", status)
        status_line = QHBoxLayout()
        status_line.setSpacing(8)
        status_line.addWidget(self.status_dot, 0, Qt.AlignmentFlag.AlignTop)
        status_line.addWidget(self.status_label, 1)
        self.env_label = small_label("", "faint", "webSearchFromEnv", status)
        self.error = small_label("", "danger", "webSearchError", status)
        self.save_button = button(t("web_search.save"), status, "primary")
        self.save_button.setEnabled(False)  # until the setup is read, and then until something changes
        self.save_button.clicked.connect(lambda _checked=False: self.submit())
        actions = QHBoxLayout()
        actions.setSpacing(8)
        actions.addWidget(self.save_button)
        actions.addStretch(1)
        status_column.addLayout(status_line)
        status_column.addWidget(self.env_label)
        status_column.addWidget(self.error)
        status_column.addLayout(actions)
        status.setContentsMargins(LABEL_WIDTH + 12, 0, 0, 0)
        return status

    # -- reading ---------------------------------------------------------------------------------------

    async def load(self) -> None:
        try:
            view = await self._web_search.view()
        except Exception as exc:
            log.warning("cannot read the web search setup: %s", reason(exc))
            self._say(t("web_search.load_failed", reason=reason(exc)))
            return
        self._show(view)

    def on_web_search_changed(self) -> None:
        """The setup changed elsewhere: read it again, unless the person is in the middle of changing it."""
        if not self._saving and not self.edited():
            self._calls.start(self.load())

    def _show(self, view: WebSearchView) -> None:
        self._loaded = view
        index = self.service_combo.findData(view.provider or _NONE)
        self.service_combo.setCurrentIndex(max(index, 0))
        self.url_input.setText(view.url)
        self.key_input.clear()
        self._show_fields()
        self._show_status(view)
        self.save_button.setEnabled(False)

    def _show_status(self, view: WebSearchView) -> None:
        dot: DotState
        if view.working:
            assert view.active_provider is not None
            text = t("web_search.status.on", name=NAMES[view.active_provider], url=view.active_url)
            role, dot = "muted", "working"
        elif view.key_missing:
            assert view.provider is not None
            text = t("web_search.status.key_missing", name=NAMES[view.provider])
            role, dot = "danger", "failed"
        elif view.problem:
            text, role, dot = t("web_search.status.problem", reason=view.problem), "danger", "failed"
        else:
            text, role, dot = t("web_search.status.off"), "muted", "idle"
        self.status_dot.set_state(dot)
        self.status_label.setText(text)
        self.status_label.setProperty("role", role)
        self.status_label.style().unpolish(self.status_label)
        self.status_label.style().polish(self.status_label)
        self.status_label.show()
        self.env_label.setText(t("web_search.status.from_env") if view.from_environment else "")
        self.env_label.setVisible(view.from_environment)

    def _show_fields(self) -> None:
        provider = self.chosen()
        self._boxes["url"].setVisible(provider == "searxng")
        self._boxes["key"].setVisible(provider in NEEDS_KEY)
        if provider in NEEDS_KEY:
            stored = self._loaded is not None and self._loaded.provider == provider and self._loaded.has_key
            self.key_input.setPlaceholderText(
                t("web_search.key.saved") if stored else t("web_search.key.none")
            )
            self.rows["key"].set_hint(t(f"web_search.key.hint.{provider}"))

    # -- what a person does ----------------------------------------------------------------------------

    def chosen(self) -> str:
        return str(self.service_combo.currentData() or _NONE)

    def body(self) -> dict[str, Any]:
        """The setup as chosen, for `update`: only the fields the chosen service takes."""
        provider = self.chosen()
        if not provider:
            return {"provider": None}
        if provider == "searxng":
            return {"provider": provider, "url": self.url_input.text().strip()}
        return {"provider": provider, "key": self.key_input.text().strip() or KEPT_KEY}

    def edited(self) -> bool:
        loaded = self._loaded
        if loaded is None:
            return False
        provider = self.chosen() or None
        if provider != loaded.provider:
            return True
        if provider == "searxng":
            return self.url_input.text().strip().rstrip("/") != loaded.url
        return bool(self.key_input.text().strip())

    def submit(self) -> None:
        if self._saving or self._loaded is None or not self.save_button.isEnabled():
            return
        self._clear_errors()
        self._saving = True
        self.save_button.setEnabled(False)
        self.save_button.setText(t("web_search.saving"))
        self._calls.start(self._web_search.update(self.body()), done=self._saved, failed=self._save_failed)

    def _on_service(self) -> None:
        self._clear_errors()
        self._show_fields()
        self._on_edit()
        if self.chosen() == "searxng":
            self.url_input.setFocus()
        elif self.chosen():
            self.key_input.setFocus()

    def _on_edit(self) -> None:
        self.save_button.setEnabled(
            self._loaded is not None and not self._saving and self.edited() and self._has_what_it_needs()
        )

    def _has_what_it_needs(self) -> bool:
        """A service that needs a key has one typed, or one stored for it already."""
        provider = self.chosen()
        if provider not in NEEDS_KEY or self.key_input.text().strip():
            return True
        return self._loaded is not None and self._loaded.provider == provider and self._loaded.has_key

    # -- answers ---------------------------------------------------------------------------------------

    def _saved(self, view: WebSearchView) -> None:
        self._saving = False
        self.save_button.setText(t("web_search.save"))
        self._show(view)
        self.changed.emit()

    def _save_failed(self, exc: Exception) -> None:
        self._saving = False
        self.save_button.setText(t("web_search.save"))
        self._on_edit()
        if isinstance(exc, InvalidInputError) and exc.field in ("url", "key"):
            self.rows[exc.field].show_error(t(f"web_search.error.{exc.field}", example=EXAMPLE_URL))
        elif isinstance(exc, UnavailableError):
            self.rows["key"].show_error(t("web_search.error.keyring", reason=reason(exc)))
        else:
            log.warning("saving the web search setup failed: %s", reason(exc))
            self._say(t("web_search.save_failed", reason=reason(exc)))

    # -- helpers ---------------------------------------------------------------------------------------

    def _clear_errors(self) -> None:
        for row in self.rows.values():
            row.clear_error()
        self.error.hide()

    def _say(self, text: str) -> None:
        self.error.setText(text)
        self.error.show()

    def cancel_calls(self) -> None:
        self._calls.cancel_all()

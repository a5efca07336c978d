"""The 网页搜索 section of the app settings over the real WebSearchService on a SQLite file: it says plainly
when bots have no web search, choosing SearXNG asks for its address and Brave for a key, a saved setup is
what the status line then says, a refused address changes nothing, a key gone from the keyring is said,
and a setup changed through the API shows while the dialog is open."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from core.bus import EventBus
from core.clock import FakeClock
from core.store.database import Database
from core.web_search.service import WebSearchService
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.secrets import MemorySecretStore
from tests.ui.conftest import wait_until
from ui.app_settings import AppSettingsDialog
from ui.bridge import EventBridge
from ui.i18n import t
from ui.web_search_settings import WebSearchSection

SEARX = "http://127.0.0.1:8888"


def click(widget: QWidget) -> None:
    QTest.mouseClick(widget, Qt.MouseButton.LeftButton)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database.for_data_dir(tmp_path / "data", clock=FakeClock())
    await database.open()
    yield database
    await database.close()


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


@pytest.fixture
def secrets() -> MemorySecretStore:
    return MemorySecretStore()


@pytest.fixture
async def service(db: Database, secrets: MemorySecretStore, bus: EventBus) -> AsyncIterator[WebSearchService]:
    made = WebSearchService(db, secrets, FakeClock(), bus, environ={})
    yield made
    await made.close()


async def open_section(
    qtbot: QtBot, qapp: QApplication, service: WebSearchService, bus: EventBus
) -> WebSearchSection:
    bridge = EventBridge(bus)
    dialog = AppSettingsDialog(
        FakeBotFacade(),
        lambda _on: None,
        qapp,
        web_search=service,
        web_search_changed=bridge.webSearchChanged,
    )
    qtbot.addWidget(dialog)
    dialog.show()
    await dialog.load()
    assert dialog.web_search_section is not None
    dialog.destroyed.connect(bridge.close)
    return dialog.web_search_section


def choose(section: WebSearchSection, provider: str) -> None:
    section.service_combo.setCurrentIndex(section.service_combo.findData(provider))
    section.service_combo.activated.emit(section.service_combo.currentIndex())


async def test_with_nothing_set_up_it_says_bots_have_no_web_search(
    qtbot: QtBot, qapp: QApplication, service: WebSearchService, bus: EventBus
) -> None:
    section = await open_section(qtbot, qapp, service, bus)
    assert section.chosen() == ""
    assert section.status_label.text() == t("web_search.status.off")
    assert section.status_dot.state == "idle"
    assert not section.rows["url"].isVisibleTo(section) and not section.rows["key"].isVisibleTo(section)
    assert not section.save_button.isEnabled()  # nothing changed yet


async def test_searxng_asks_for_its_address_and_a_saved_setup_is_what_bots_get(
    qtbot: QtBot, qapp: QApplication, service: WebSearchService, bus: EventBus
) -> None:
    section = await open_section(qtbot, qapp, service, bus)
    choose(section, "searxng")
    assert section.rows["url"].isVisibleTo(section) and not section.rows["key"].isVisibleTo(section)
    QTest.keyClicks(section.url_input, SEARX + "/")
    assert section.save_button.isEnabled()
    QTest.keyClick(section.url_input, Qt.Key.Key_Return)  # Enter saves the section, not the dialog

    await wait_until(lambda: section.status_dot.state == "working")
    assert service.ready
    view = await service.view()
    assert (view.provider, view.url) == ("searxng", SEARX)
    assert section.status_label.text() == t("web_search.status.on", name="SearXNG", url=SEARX)
    assert section.window().isVisible() and not section.save_button.isEnabled()


async def test_a_refused_address_is_said_under_it_and_nothing_is_saved(
    qtbot: QtBot, qapp: QApplication, service: WebSearchService, bus: EventBus
) -> None:
    section = await open_section(qtbot, qapp, service, bus)
    choose(section, "searxng")
    QTest.keyClicks(section.url_input, "searx.example?q=1")
    click(section.save_button)

    await wait_until(lambda: bool(section.rows["url"].error_text))
    assert "http://127.0.0.1:8080" in section.rows["url"].error_text
    assert (await service.view()).provider is None and not service.ready
    assert section.url_input.text() == "searx.example?q=1"  # what was typed stays to be fixed
    assert section.save_button.isEnabled() and section.save_button.text() == t("web_search.save")


async def test_brave_keeps_its_key_in_the_keyring_and_a_lost_key_is_said(
    qtbot: QtBot,
    qapp: QApplication,
    service: WebSearchService,
    bus: EventBus,
    secrets: MemorySecretStore,
    db: Database,
) -> None:
    section = await open_section(qtbot, qapp, service, bus)
    choose(section, "brave")
    assert section.rows["key"].isVisibleTo(section) and not section.rows["url"].isVisibleTo(section)
    assert section.key_input.placeholderText() == t("web_search.key.none")
    assert not section.save_button.isEnabled()  # Brave without a key cannot be saved as is
    QTest.keyClicks(section.key_input, "bsa-" + "0123456789")
    click(section.save_button)

    await wait_until(lambda: section.status_dot.state == "working")
    assert await secrets.get("web-search.brave") == "bsa-0123456789"
    assert section.key_input.text() == "" and section.key_input.placeholderText() == t("web_search.key.saved")

    await secrets.delete("web-search.brave")
    restarted = WebSearchService(db, secrets, FakeClock(), bus, environ={})
    again = await open_section(qtbot, qapp, restarted, bus)
    assert again.status_dot.state == "failed"
    assert again.status_label.text() == t("web_search.status.key_missing", name="Brave Search")
    await restarted.close()


async def test_a_setup_changed_through_the_api_shows_while_the_dialog_is_open(
    qtbot: QtBot, qapp: QApplication, service: WebSearchService, bus: EventBus
) -> None:
    section = await open_section(qtbot, qapp, service, bus)
    await service.update({"provider": "searxng", "url": SEARX})  # as PUT /api/web-search does
    await wait_until(lambda: section.chosen() == "searxng")
    assert section.url_input.text() == SEARX and section.status_dot.state == "working"

    await service.update({"provider": None})
    await wait_until(lambda: section.status_label.text() == t("web_search.status.off"))
    assert section.chosen() == "" and not section.rows["url"].isVisibleTo(section)

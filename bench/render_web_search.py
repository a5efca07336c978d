"""Render the app settings' 网页搜索 section to PNG files, in both schemes.

    .venv/bin/python -m bench.render_web_search [OUT_DIR] [--lang zh|en]

Runs offscreen over the real WebSearchService on a temporary SQLite file with an in-memory keyring. For
both schemes it writes into OUT_DIR (default /tmp/errand-shots): web-search-off-<scheme>-<lang>.png (nothing
set up), web-search-on-<scheme>-<lang>.png (a SearXNG server saved), web-search-refused-<scheme>-<lang>.png
(an address refused under its row) and web-search-key-<scheme>-<lang>.png (Brave chosen, its key lost from
the keyring).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import tempfile
from pathlib import Path

from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QScrollArea, QWidget

from bench.render_runner import render_main, settle
from core.bus import EventBus
from core.clock import FakeClock
from core.store.database import Database
from core.web_search.service import WebSearchService
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.secrets import MemorySecretStore
from ui import i18n, theme
from ui.app_settings import AppSettingsDialog
from ui.web_search_settings import WebSearchSection


def grab(widget: QWidget, out_dir: Path, name: str, scheme: str, lang: str) -> Path:
    path = out_dir / f"{name}-{scheme}-{lang}.png"
    widget.grab().save(str(path))
    return path


async def open_dialog(
    app: QApplication, service: WebSearchService
) -> tuple[AppSettingsDialog, WebSearchSection]:
    dialog = AppSettingsDialog(FakeBotFacade(), lambda _on: None, app, web_search=service)
    dialog.show()
    await dialog.load()
    section = dialog.web_search_section
    assert section is not None
    scroll = dialog.findChild(QScrollArea, "settingsScroll")
    assert scroll is not None
    scroll.ensureWidgetVisible(section.save_button)
    await settle(5)
    return dialog, section


async def render(app: QApplication, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language) -> list[Path]:
    i18n.use_language(lang)
    theme.apply_theme(app, scheme)
    paths: list[Path] = []
    with tempfile.TemporaryDirectory() as data:
        db = Database.for_data_dir(Path(data), clock=FakeClock())
        await db.open()
        secrets = MemorySecretStore()
        service = WebSearchService(db, secrets, FakeClock(), EventBus(), environ={})

        dialog, section = await open_dialog(app, service)
        paths.append(grab(dialog, out_dir, "web-search-off", scheme, lang))
        dialog.reject()

        await service.update({"provider": "searxng", "url": "http://127.0.0.1:8888"})
        dialog, section = await open_dialog(app, service)
        paths.append(grab(dialog, out_dir, "web-search-on", scheme, lang))
        section.url_input.clear()
        QTest.keyClicks(section.url_input, "searx.example")
        section.submit()
        await settle(10)
        paths.append(grab(dialog, out_dir, "web-search-refused", scheme, lang))
        dialog.reject()

        await service.update({"provider": "brave", "key": "bsa-" + "0123456789"})
        await secrets.delete("web-search.brave")
        lost = WebSearchService(db, secrets, FakeClock(), EventBus(), environ={})
        dialog, section = await open_dialog(app, lost)
        paths.append(grab(dialog, out_dir, "web-search-key", scheme, lang))
        dialog.reject()
        await service.close()
        await lost.close()
        await db.close()
    return paths


def main() -> None:
    render_main(__doc__, render)


if __name__ == "__main__":
    main()

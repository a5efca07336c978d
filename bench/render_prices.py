"""Render the app settings with their 价格 section to PNG files, in both schemes.

    .venv/bin/python -m bench.render_prices [OUT_DIR] [--lang zh|en]

Runs offscreen on in-memory fakes. For both schemes it writes into OUT_DIR (default /tmp/errand-shots):
prices-<scheme>-<lang>.png (two overrides, one in USD and one in CNY, under the preferences),
prices-form-<scheme>-<lang>.png (the add form open with a refused output price under its row) and
prices-empty-<scheme>-<lang>.png (no overrides yet).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path

from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QScrollArea, QWidget

from bench.render_runner import render_main, settle
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_prices import FakePriceFacade
from ui import i18n, theme
from ui.app_settings import AppSettingsDialog


def grab(widget: QWidget, out_dir: Path, name: str, scheme: str, lang: str) -> Path:
    path = out_dir / f"{name}-{scheme}-{lang}.png"
    widget.grab().save(str(path))
    return path


async def render(app: QApplication, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language) -> list[Path]:
    i18n.use_language(lang)
    theme.apply_theme(app, scheme)
    paths: list[Path] = []

    bots = FakeBotFacade()
    prices = FakePriceFacade()
    await prices.set(
        "deepseek-chat",
        {"input": "2", "output": "8", "cacheRead": "0.5", "cacheWrite": "2", "currency": "CNY"},
    )
    await prices.set(
        "openai/gpt-4o-mini",
        {"input": "0.15", "output": "0.6", "cacheRead": "0.075", "cacheWrite": "0.15", "currency": "USD"},
    )
    dialog = AppSettingsDialog(bots, lambda _on: None, app, prices=prices)
    dialog.show()
    await dialog.load()
    await settle()
    paths.append(grab(dialog, out_dir, "prices", scheme, lang))

    section = dialog.price_section
    assert section is not None
    section.open_form()
    QTest.keyClicks(section.model_input, "qwen-max")
    QTest.keyClicks(section.inputs["input"], "2.4")
    QTest.keyClicks(section.inputs["output"], "-9.6")
    section.currency_combo.setCurrentIndex(section.currency_combo.findData("CNY"))
    section.submit()
    await settle()
    scroll = dialog.findChild(QScrollArea, "settingsScroll")
    assert scroll is not None
    scroll.ensureWidgetVisible(section.save_button)
    await settle(5)
    paths.append(grab(dialog, out_dir, "prices-form", scheme, lang))
    dialog.reject()

    empty = AppSettingsDialog(bots, lambda _on: None, app, prices=FakePriceFacade())
    empty.show()
    await empty.load()
    await settle()
    paths.append(grab(empty, out_dir, "prices-empty", scheme, lang))
    empty.reject()
    return paths


def main() -> None:
    render_main(__doc__, render)


if __name__ == "__main__":
    main()

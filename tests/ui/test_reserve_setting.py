"""The bot settings' read-only 预算保护 / "Chat reserve" row: it shows the line it is given, in 后台工作,
and is absent without one."""

from __future__ import annotations

import pytest
from pytestqt.qtbot import QtBot

from tests.fakes.fake_bots import FakeBotFacade
from ui.bot_settings import BotSettingsDialog
from ui.i18n import t

LINE = "OpenRouter limit $10.00, $8.20 left"


@pytest.fixture
def bots() -> FakeBotFacade:
    return FakeBotFacade()


async def open_settings(qtbot: QtBot, bots: FakeBotFacade, reserve_line: str = "") -> BotSettingsDialog:
    bot = bots.add("天天")
    dialog = BotSettingsDialog(bots, bot.id, reserve_line=reserve_line)
    qtbot.addWidget(dialog)
    dialog.show()
    await dialog.load()
    return dialog


async def test_the_reserve_row_shows_its_line(qtbot: QtBot, bots: FakeBotFacade) -> None:
    dialog = await open_settings(qtbot, bots, LINE)

    row = dialog.rows["reserve"]
    assert row.isVisible()
    assert row.label.text() == t("settings.reserve") == "Chat reserve"
    assert dialog.reserve_label is not None and dialog.reserve_label.text() == LINE
    # In the background-work section, after the pause switch.
    assert row.parentWidget() is dialog.rows["paused"].parentWidget()

    dialog.set_reserve_line("Balance $1.20 of a $10.00 limit, under 20%")
    assert dialog.reserve_label.text() == "Balance $1.20 of a $10.00 limit, under 20%"
    dialog.set_reserve_line("")
    assert not row.isVisible()


async def test_without_a_line_there_is_no_reserve_row(qtbot: QtBot, bots: FakeBotFacade) -> None:
    dialog = await open_settings(qtbot, bots)

    assert "reserve" not in dialog.rows
    assert dialog.reserve_label is None

    dialog.set_reserve_line(LINE)  # a line that arrives later adds the row
    assert dialog.rows["reserve"].isVisible()
    assert dialog.reserve_label is not None and dialog.reserve_label.text() == LINE

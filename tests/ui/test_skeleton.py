"""The window's first paint is never empty (issue 17 item 12): while the host starts, placeholder rows stand
in the sidebar's list and a muted "Loading…" in the right pane; once the first read is shown they are gone."""

from __future__ import annotations

import asyncio
from typing import cast

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from app.gui import _first_read
from app.live_language import LiveLanguage
from core.host import Host
from tests.fakes.fake_chat import FakeChatFacade
from tests.ui.conftest import wait_until
from ui import i18n, theme
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.skeleton import LoadingSkeleton


class HeldHost:
    """Starts only when the test lets it, so the window can be looked at before."""

    def __init__(self) -> None:
        self.go = asyncio.Event()

    async def start(self) -> None:
        await self.go.wait()


def colours_in(widget: QWidget) -> set[str]:
    """The colours a widget paints (sampled every other pixel)."""
    image = widget.grab().toImage()
    return {
        QColor(image.pixel(x, y)).name()
        for x in range(0, image.width(), 2)
        for y in range(0, image.height(), 2)
    }


async def test_the_window_shows_a_skeleton_until_its_first_read(
    qtbot: QtBot, facade: FakeChatFacade, bridge: EventBridge
) -> None:
    live = LiveLanguage(lambda: MainWindow(facade, bridge))
    window = live.window
    qtbot.addWidget(window)
    skeleton = LoadingSkeleton(window)
    window.show()
    host = HeldHost()
    started = asyncio.ensure_future(_first_read(cast(Host, host), live, skeleton))
    await asyncio.sleep(0)

    # Shown, host not started yet: the skeleton covers the list and the pane.
    assert skeleton.shown()
    assert skeleton.pane.isVisible() and skeleton.rows.isVisible()
    assert skeleton.pane.text == "Loading…"
    assert skeleton.pane.geometry() == window.pane.rect()
    # Not a flat fill: placeholder rows on the sidebar's colour, words on the window's.
    assert colours_in(skeleton.rows) - {theme.colors().sidebar.lower()}
    assert colours_in(skeleton.pane) - {theme.colors().window.lower()}
    assert not live.refreshed

    host.go.set()
    await started
    await wait_until(lambda: not skeleton.shown())
    assert live.refreshed
    assert window.conversation_list.conversations()  # the real content took its place
    assert window.chat_view.conversation_id is not None
    window.shutdown()


async def test_the_skeleton_speaks_chinese_in_a_chinese_ui(
    qtbot: QtBot, facade: FakeChatFacade, bridge: EventBridge
) -> None:
    i18n.use_language("zh")
    window = MainWindow(facade, bridge)
    qtbot.addWidget(window)
    skeleton = LoadingSkeleton(window)
    window.show()
    assert skeleton.pane.text == "正在载入…"
    skeleton.remove()
    skeleton.remove()  # twice is harmless
    assert not skeleton.shown()
    window.shutdown()

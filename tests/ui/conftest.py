"""UI tests run offscreen on the qasync loop, so Qt events and asyncio tasks advance together.

Only tests under tests/ui get this loop: pytest asks the `pytest_asyncio_loop_factories` hook through the
item's own conftest chain, so other test folders keep pytest-asyncio's plain asyncio loop.
"""

from __future__ import annotations

import os

# Before anything imports Qt: no display is needed, and a developer's own locale or theme must not leak in.
os.environ["QT_QPA_PLATFORM"] = "offscreen"
os.environ.setdefault("ERRAND_LANG", "en")
os.environ.setdefault("ERRAND_THEME", "light")

import asyncio
import time
from collections.abc import Callable, Iterator, Mapping

import pytest
import qasync
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from tests.fakes.fake_chat import FakeChatFacade
from ui import i18n, theme
from ui.bridge import EventBridge
from ui.main_window import MainWindow


def _qt_loop() -> asyncio.AbstractEventLoop:
    app = QApplication.instance() or QApplication([])
    loop: asyncio.AbstractEventLoop = qasync.QEventLoop(app)
    return loop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"qasync": _qt_loop}


@pytest.fixture(autouse=True)
def _styled_app(qapp: QApplication) -> Iterator[None]:
    i18n.use_language("en")
    theme.apply_theme(qapp, "light")
    yield
    i18n.use_language(None)


async def wait_until(predicate: Callable[[], bool], timeout: float = 3.0) -> None:
    """Let the loop (Qt events and tasks) run until `predicate` holds; fail after `timeout` seconds.

    Widgets change through Qt events with no asyncio event to wait on, so this yields to the loop (no
    sleeping: a zero-delay yield lets qasync run Qt events and timers) and re-checks, up to a deadline.
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        await asyncio.sleep(0)


@pytest.fixture
def facade() -> FakeChatFacade:
    return FakeChatFacade(bot_name="天天")


@pytest.fixture
def bridge(facade: FakeChatFacade) -> Iterator[EventBridge]:
    made = EventBridge(facade.bus)
    yield made
    made.close()


@pytest.fixture
def window(qtbot: QtBot, facade: FakeChatFacade, bridge: EventBridge) -> Iterator[MainWindow]:
    made = MainWindow(facade, bridge)
    qtbot.addWidget(made)
    made.show()
    yield made
    made.shutdown()

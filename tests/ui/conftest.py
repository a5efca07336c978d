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
import gc
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from pathlib import Path

import pytest
import qasync
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from core.host import Host
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_rules import FakeRuleFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from tests.fakes.model_server import ScriptedModelServer
from tests.integration.host_fixtures import make_host
from ui import i18n, theme
from ui.bridge import EventBridge
from ui.main_window import MainWindow


class _TestLoop(qasync.QEventLoop):  # type: ignore[misc]
    """qasync's loop, but closing it kills its pending Qt timers at once.

    qasync's close() only marks its timer object stopped; the Qt timers stay registered until they next
    fire. Each test gets a new loop, so the old loop's timer object can be garbage-collected while some
    are still registered, and when that collection happens on a worker thread (the database thread
    allocates too) Qt cannot unregister them: the next test's event loop fires a timer on a deleted
    object and the process segfaults. Killing them here, on the main thread, leaves nothing to fire."""

    def close(self) -> None:
        super().close()
        timer = self._timer
        callbacks: dict[int, object] = getattr(timer, "_SimpleTimer__callbacks", {})
        for timer_id in list(callbacks):
            timer.killTimer(timer_id)
        callbacks.clear()


def _qt_loop() -> asyncio.AbstractEventLoop:
    app = QApplication.instance() or QApplication([])
    loop: asyncio.AbstractEventLoop = _TestLoop(app)
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
    # Collect this test's Qt objects now, on the main thread, not whenever a worker thread happens to
    # trigger a collection (a QObject destroyed off its thread leaves its timers registered).
    gc.collect()


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
def tasks(facade: FakeChatFacade) -> FakeTaskFacade:
    return FakeTaskFacade(facade)


@pytest.fixture
def bots(facade: FakeChatFacade) -> FakeBotFacade:
    made = FakeBotFacade(facade.bus)
    made.add("天天", bot_id="bot-1")
    return made


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


def full_window(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    bots: FakeBotFacade,
    rules: FakeRuleFacade,
) -> MainWindow:
    """A shown main window with every facade (tasks, needs-you, bots, rules); the caller shuts it down."""
    made = MainWindow(
        facade, bridge, tasks=tasks, attention=FakeAttentionFacade(facade), bots=bots, rules=rules
    )
    qtbot.addWidget(made)
    made.show()
    return made


@pytest.fixture
def rules(facade: FakeChatFacade) -> FakeRuleFacade:
    return FakeRuleFacade(facade.bus)


@pytest.fixture
def rules_window(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    bots: FakeBotFacade,
    rules: FakeRuleFacade,
) -> Iterator[MainWindow]:
    """`full_window` as a fixture, shut down after the test."""
    made = full_window(qtbot, facade, bridge, tasks, bots, rules)
    yield made
    made.shutdown()


@pytest.fixture
async def model_server() -> AsyncIterator[ScriptedModelServer]:
    """The scripted model over real HTTP on 127.0.0.1, for tests of the window over a real host."""
    async with ScriptedModelServer() as server:
        yield server


@pytest.fixture
async def host(tmp_path: Path, model_server: ScriptedModelServer) -> AsyncIterator[Host]:
    """A real host (SQLite file, agent runtime) talking to `model_server`, on the qasync loop."""
    made = make_host(tmp_path / "data", model_server.base_url, home=tmp_path / "home")
    await made.start()
    yield made
    await made.stop()

"""OS notifications on the qasync loop, with a fake notifier: an item arriving while the window is not
focused notifies once; while it is focused, never; a click opens the needs-you page; a ringing result
notifies once and opens its conversation."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from pytestqt.qtbot import QtBot

from app.notifications import DesktopNotifierSender, Notifications
from core.attention.items import AttentionItem
from core.bots.views import BotUpdate
from core.clock import FakeClock
from core.delivery.outbox import local_zone
from core.store.deliveries import DeliveryRecord
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_notifier import FakeNotifier
from ui.bridge import EventBridge
from ui.main_window import MainWindow


class Focus:
    def __init__(self) -> None:
        self.focused = False

    def __call__(self) -> bool:
        return self.focused


class Setup:
    def __init__(
        self, window: MainWindow, attention: FakeAttentionFacade, notifier: FakeNotifier, focus: Focus
    ) -> None:
        self.window = window
        self.attention = attention
        self.notifier = notifier
        self.focus = focus
        self.raised = 0
        self.reads: list[list[AttentionItem]] = []
        self.read = asyncio.Event()


@pytest.fixture
def attention(facade: FakeChatFacade) -> FakeAttentionFacade:
    return FakeAttentionFacade(facade)


@pytest.fixture
def setup(
    qtbot: QtBot, facade: FakeChatFacade, bridge: EventBridge, attention: FakeAttentionFacade
) -> Iterator[tuple[Setup, Notifications]]:
    window = MainWindow(facade, bridge, attention=attention)
    qtbot.addWidget(window)
    window.show()
    bots = FakeBotFacade()
    # No quiet hours: whether a test rings must not depend on the hour it runs at.
    bots.add("天天", bot_id="bot-1", quiet_start="00:00", quiet_end="00:00")
    notifier = FakeNotifier()
    focus = Focus()
    made = Setup(window, attention, notifier, focus)

    def raise_window() -> None:
        made.raised += 1

    notifications = Notifications(attention, bots, bridge, notifier, window, focus, raise_window)

    def on_items(items: list[AttentionItem]) -> None:
        made.reads.append(items)
        made.read.set()

    notifications.on_items(on_items)
    yield made, notifications
    notifications.shutdown()
    window.shutdown()


async def next_read(s: Setup) -> list[AttentionItem]:
    """The next needs-you read the notifications did (the bridge folds bursts, so wait for the event)."""
    s.read.clear()
    await asyncio.wait_for(s.read.wait(), 5)
    return s.reads[-1]


async def test_an_item_arriving_unfocused_notifies_exactly_once(setup: tuple[Setup, Notifications]) -> None:
    s, notifications = setup
    s.attention.add_question("GPU prices", "Which account should I log in with?", conversation_id="c1")
    await notifications.start()  # what waits at start is on screen already: no notification
    assert s.notifier.sent == []

    s.attention.add_question("Flights", "Window or aisle?")
    assert len(await next_read(s)) == 2
    await asyncio.wait_for(s.notifier.changed.wait(), 5)
    [sent] = s.notifier.sent
    assert sent.title == "天天 needs you"
    assert sent.body == "Flights:Window or aisle?"

    # Another new item notifies once more; reading the same list again notifies nothing.
    s.notifier.changed.clear()
    s.attention.add_failed_task("Old", "gone")
    await asyncio.wait_for(s.notifier.changed.wait(), 5)
    assert len(s.notifier.sent) == 2
    again = notifications.reload()
    assert again is not None
    await again
    assert len(s.notifier.sent) == 2


async def test_a_focused_window_sends_nothing(setup: tuple[Setup, Notifications]) -> None:
    s, notifications = setup
    s.focus.focused = True
    await notifications.start()
    s.attention.add_question("Flights", "Window or aisle?")
    items = await next_read(s)
    assert [i.subject for i in items] == ["Flights · waiting for your answer"]
    await notifications.drain()  # whatever was going to be sent has been
    assert s.notifier.sent == []


async def test_a_click_opens_the_needs_you_page(setup: tuple[Setup, Notifications]) -> None:
    s, notifications = setup
    await notifications.start()
    s.attention.add_approval("rm -rf build/", "Clean up")
    await asyncio.wait_for(s.notifier.changed.wait(), 5)
    assert s.window.shown_pane() is s.window.chat_view
    s.notifier.sent[0].click()
    assert s.raised == 1
    assert s.window.needs_you is not None
    assert s.window.shown_pane() is s.window.needs_you


def result(delivery_id: str = "r_1:result", purpose: str = "result") -> DeliveryRecord:
    return DeliveryRecord(
        id=delivery_id,
        bot_id="bot-1",
        conversation_id="c1",
        task_id="",
        rule_id="",
        run_id="r_1",
        purpose=purpose,  # type: ignore[arg-type]
        text="GPU prices are ready: X cloud is cheapest.",
        files=[],
        card="",
        status="pending",
        held_reason="",
        attempts=0,
        last_error="",
        due_at=0.0,
        sent_at=0.0,
        message_id=0,
        created_at=0.0,
    )


async def test_a_ringing_result_notifies_once(setup: tuple[Setup, Notifications]) -> None:
    s, notifications = setup
    await notifications.start()
    await notifications.on_ring(result())
    await asyncio.wait_for(s.notifier.changed.wait(), 5)
    await notifications.on_ring(result())
    await notifications.on_ring(result("q_1:question", "question"))  # rings from needs-you instead
    await notifications.drain()
    [sent] = s.notifier.sent
    assert (sent.title, sent.body) == ("天天", "GPU prices are ready: X cloud is cheapest.")
    sent.click()
    assert s.raised == 1


async def test_the_real_sender_falls_back_to_the_tray_and_says_false_without_one() -> None:
    shown: list[tuple[str, str]] = []

    def tray(title: str, body: str, _click: object) -> bool:
        shown.append((title, body))
        return True

    class Broken:
        async def send(self, **_kwargs: object) -> str:
            raise RuntimeError("no bus")

    class Hanging:
        async def send(self, **_kwargs: object) -> str:
            await asyncio.Event().wait()
            return ""

    sender = DesktopNotifierSender(fallback=tray)
    sender._notifier = Broken()
    assert await sender.send("天天 needs you", "GPU:?", lambda: None) is True
    assert shown == [("天天 needs you", "GPU:?")]

    hanging = DesktopNotifierSender(fallback=None, timeout_s=0.01)
    hanging._notifier = Hanging()
    assert await hanging.send("t", "b", lambda: None) is False


async def test_the_real_sender_counts_a_dispatched_notification() -> None:
    class Dispatching:
        async def send(self, **kwargs: object) -> str:
            on_dispatched = kwargs["on_dispatched"]
            assert callable(on_dispatched)
            on_dispatched()
            return "id"

    fell_back: list[str] = []

    def tray(title: str, _body: str, _click: object) -> bool:
        fell_back.append(title)
        return True

    sender = DesktopNotifierSender(fallback=tray)
    sender._notifier = Dispatching()
    assert await sender.send("t", "b", lambda: None) is True
    assert fell_back == []


async def test_a_question_in_the_bots_quiet_hours_doesnt_ring(
    qtbot: QtBot, facade: FakeChatFacade, bridge: EventBridge, attention: FakeAttentionFacade
) -> None:
    clock = FakeClock()
    local = datetime.fromtimestamp(clock.time(), ZoneInfo(local_zone()))
    quiet_from = (local - timedelta(hours=1)).strftime("%H:%M")
    quiet_to = (local + timedelta(hours=1)).strftime("%H:%M")
    bots = FakeBotFacade()
    bots.add("天天", bot_id="bot-1", quiet_start=quiet_from, quiet_end=quiet_to)
    notifier = FakeNotifier()
    read = asyncio.Event()
    notifications = Notifications(
        attention, bots, bridge, notifier, MainWindow(facade, bridge), lambda: False, lambda: None, clock
    )
    notifications.on_items(lambda _items: read.set())
    await notifications.start()

    attention.add_question("Flights", "Window or aisle?")
    read.clear()
    await asyncio.wait_for(read.wait(), 5)
    await notifications.drain()
    assert notifier.sent == []

    # Outside its quiet hours the next item rings.
    await bots.update("bot-1", BotUpdate(quiet_start="00:00", quiet_end="00:00"))
    attention.add_failed_task("Old build", "gone")
    await asyncio.wait_for(notifier.changed.wait(), 5)
    assert [n.body for n in notifier.sent] == ["Old build:gone"]
    notifications.shutdown()

"""The chat reserve watcher: reads at start and every 5 minutes on the fake clock, background spend since the
last read taken off at once, listeners told once per change of kind, failures kept to their own bot, shared
reads, and the sentence for settings and needs-you. No real sleeps: the clock moves only when told."""

from __future__ import annotations

import asyncio

import pytest

from core.bus import EventBus
from core.clock import FakeClock
from core.cost.balance import BalanceReading
from core.cost.reserve import BotBalanceSource, ReserveState, ReserveWatcher, reserve_line
from tests.waiting import yield_until

OPENROUTER = "https://openrouter.ai/api/v1"


def limited(limit: float, remaining: float) -> BalanceReading:
    return BalanceReading(True, "ok", limit, remaining, f"${remaining:.2f}", provider="openrouter")


class Provider:
    """Stands in for `read_balance`: a reading per base URL, optional gate and failures, every call kept."""

    def __init__(self) -> None:
        self.readings: dict[str, BalanceReading] = {}
        self.calls: list[tuple[str, str]] = []
        self.gate: asyncio.Event | None = None
        self.failing: set[str] = set()

    async def __call__(self, base_url: str, api_key: str) -> BalanceReading:
        self.calls.append((base_url, api_key))
        if self.gate is not None:
            await self.gate.wait()
        if base_url in self.failing:
            raise RuntimeError("the provider fell over")
        return self.readings[base_url]


class Bots:
    def __init__(self, *sources: BotBalanceSource) -> None:
        self.sources = list(sources)
        self.broken = False

    async def __call__(self) -> list[BotBalanceSource]:
        if self.broken:
            raise RuntimeError("the database is gone")
        return list(self.sources)


async def asleep(clock: FakeClock) -> None:
    await yield_until(lambda: clock.sleeper_count >= 1, "the watcher went to sleep on the fake clock")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def provider() -> Provider:
    made = Provider()
    made.readings[OPENROUTER] = limited(10.0, 8.2)
    return made


def watcher_for(clock: FakeClock, provider: Provider, bots: Bots) -> ReserveWatcher:
    return ReserveWatcher(clock, bus=EventBus(), bots=bots, read=provider)


def bot(bot_id: str = "b1", base_url: str = OPENROUTER, key: str = "sk-1") -> BotBalanceSource:
    return BotBalanceSource(bot_id, base_url, key)


# -- reading -----------------------------------------------------------------------------------------------


async def test_every_bot_is_read_at_start_and_then_every_5_minutes(
    clock: FakeClock, provider: Provider
) -> None:
    provider.readings["https://other.example/v1"] = BalanceReading(False, "unsupported")
    watcher = watcher_for(clock, provider, Bots(bot("b1"), bot("b2", "https://other.example/v1", "sk-2")))
    watcher.start()
    await asleep(clock)
    assert sorted(provider.calls) == [(OPENROUTER, "sk-1"), ("https://other.example/v1", "sk-2")]
    assert watcher.state("b1").kind == "ok" and watcher.state("b2").kind == "off"

    clock.advance(299)
    for _ in range(20):
        await asyncio.sleep(0)
    assert len(provider.calls) == 2

    clock.advance(1)
    await yield_until(lambda: len(provider.calls) == 4, "the second round of reads")
    await asleep(clock)
    clock.advance(300)
    await yield_until(lambda: len(provider.calls) == 6, "the third round of reads")

    await watcher.stop()
    assert not watcher.running


async def test_spend_since_the_last_read_is_taken_off_and_can_tip_into_low(
    clock: FakeClock, provider: Provider
) -> None:
    provider.readings[OPENROUTER] = limited(10.0, 2.5)
    watcher = watcher_for(clock, provider, Bots(bot()))
    changes: list[tuple[str, str]] = []
    watcher.on_change(lambda bot_id: changes.append((bot_id, watcher.state(bot_id).kind)))
    await watcher.refresh()
    assert watcher.state("b1").kind == "ok"
    changes.clear()

    watcher.record_spend("b1", 0.3)
    state = watcher.state("b1")
    assert state.kind == "ok" and state.spent_usd == 0.3
    assert state.remaining_usd == pytest.approx(2.2)
    assert changes == []

    clock.advance(60)  # before the next read
    watcher.record_spend("b1", 0.3)
    assert watcher.is_low("b1")
    assert watcher.state("b1").remaining_usd == pytest.approx(1.9)
    assert watcher.state("b1").since == clock.time()
    assert watcher.low_bots() == ["b1"]
    assert changes == [("b1", "low")]

    became_low = clock.time()
    clock.advance(60)
    watcher.record_spend("b1", 0.5)  # still low: nobody is told again
    assert changes == [("b1", "low")]

    # The next read includes that spend: it is no longer taken off twice.
    provider.readings[OPENROUTER] = limited(10.0, 1.4)
    await watcher.refresh("b1")
    state = watcher.state("b1")
    assert (state.kind, state.remaining_usd, state.spent_usd) == ("low", 1.4, 0.0)
    assert state.since == became_low
    assert changes == [("b1", "low")]


async def test_spend_recorded_while_a_read_is_under_way_stays_taken_off(
    clock: FakeClock, provider: Provider
) -> None:
    watcher = watcher_for(clock, provider, Bots(bot()))
    watcher.record_spend("b1", 0.5)  # before the read: the provider's answer includes it
    provider.gate = asyncio.Event()
    reading = asyncio.create_task(watcher.refresh("b1"))
    await yield_until(lambda: len(provider.calls) == 1, "the read started")
    watcher.record_spend("b1", 1.0)  # during the read: it may not be in the answer
    provider.readings[OPENROUTER] = limited(10.0, 5.0)
    provider.gate.set()
    await reading

    assert watcher.state("b1").remaining_usd == pytest.approx(4.0)
    assert watcher.state("b1").spent_usd == 1.0


async def test_listeners_hear_each_change_once_and_a_raised_limit_brings_it_back(
    clock: FakeClock, provider: Provider
) -> None:
    provider.readings[OPENROUTER] = limited(10.0, 1.0)
    watcher = watcher_for(clock, provider, Bots(bot()))
    kinds: list[str] = []
    unsubscribe = watcher.on_change(lambda bot_id: kinds.append(watcher.state(bot_id).kind))

    await watcher.refresh()
    await watcher.refresh()  # the same again: no change
    assert kinds == ["low"]

    provider.readings[OPENROUTER] = limited(20.0, 11.0)  # the user raised the key's limit
    await watcher.refresh("b1")
    assert kinds == ["low", "ok"]
    assert not watcher.is_low("b1") and watcher.state("b1").since == 0.0

    unsubscribe()
    provider.readings[OPENROUTER] = limited(20.0, 1.0)
    await watcher.refresh("b1")
    assert watcher.is_low("b1") and kinds == ["low", "ok"]


async def test_a_failing_listener_does_not_stop_the_others(clock: FakeClock, provider: Provider) -> None:
    provider.readings[OPENROUTER] = limited(10.0, 1.0)
    watcher = watcher_for(clock, provider, Bots(bot()))
    heard: list[str] = []

    def broken(bot_id: str) -> None:
        raise RuntimeError("listener bug")

    watcher.on_change(broken)
    watcher.on_change(heard.append)
    await watcher.refresh()
    assert heard == ["b1"]


async def test_one_failing_bot_never_stops_the_others(clock: FakeClock, provider: Provider) -> None:
    provider.readings["https://broken.example/v1"] = limited(10.0, 9.0)
    provider.failing.add("https://broken.example/v1")
    bots = Bots(bot("bad", "https://broken.example/v1"), bot("good"))
    watcher = watcher_for(clock, provider, bots)
    watcher.start()
    await asleep(clock)

    assert watcher.state("good").kind == "ok"
    bad = watcher.state("bad")
    assert bad.kind == "off" and bad.reading is not None and bad.reading.code == "error"
    assert "RuntimeError" in bad.reading.reason

    bots.broken = True  # listing fails: what is known is kept, the watcher keeps going
    clock.advance(300)
    await yield_until(lambda: clock.sleeper_count == 0, "the watcher woke")
    await asleep(clock)
    assert watcher.state("good").kind == "ok"
    await watcher.stop()


async def test_a_failed_read_keeps_the_last_good_figures_of_the_same_key(
    clock: FakeClock, provider: Provider
) -> None:
    watcher = watcher_for(clock, provider, Bots(bot()))
    await watcher.refresh()
    provider.failing.add(OPENROUTER)
    watcher.record_spend("b1", 0.2)
    await watcher.refresh()

    state = watcher.state("b1")
    assert state.kind == "ok" and state.remaining_usd == pytest.approx(8.0)
    assert state.reading is not None and state.reading.code == "error"
    assert watcher.line("b1", "en") == (
        "OpenRouter limit $10.00, about $8.00 left (the last read failed; using the figures before it)"
    )


async def test_concurrent_refreshes_share_one_read(clock: FakeClock, provider: Provider) -> None:
    watcher = watcher_for(clock, provider, Bots(bot()))
    provider.gate = asyncio.Event()
    first = asyncio.create_task(watcher.refresh("b1"))
    await yield_until(lambda: len(provider.calls) == 1, "the read started")
    others = [asyncio.create_task(watcher.refresh("b1")), asyncio.create_task(watcher.refresh())]
    for _ in range(20):
        await asyncio.sleep(0)
    assert not first.done() and not any(task.done() for task in others)

    provider.gate.set()
    await asyncio.wait_for(asyncio.gather(first, *others), 5)
    assert len(provider.calls) == 1
    assert watcher.state("b1").kind == "ok"


async def test_a_caller_that_gives_up_leaves_the_shared_read_to_the_others(
    clock: FakeClock, provider: Provider
) -> None:
    watcher = watcher_for(clock, provider, Bots(bot()))
    provider.gate = asyncio.Event()
    impatient = asyncio.create_task(watcher.refresh("b1"))
    patient = asyncio.create_task(watcher.refresh("b1"))
    await yield_until(lambda: len(provider.calls) == 1, "the read started")
    impatient.cancel()
    with pytest.raises(asyncio.CancelledError):
        await impatient
    provider.gate.set()
    await asyncio.wait_for(patient, 5)
    assert watcher.state("b1").kind == "ok"


async def test_a_read_of_a_replaced_key_is_ignored(clock: FakeClock, provider: Provider) -> None:
    bots = Bots(bot(key="sk-old"))
    watcher = watcher_for(clock, provider, bots)
    provider.gate = asyncio.Event()
    old = asyncio.create_task(watcher.refresh("b1"))
    await yield_until(lambda: len(provider.calls) == 1, "the old key's read started")

    bots.sources = [bot(base_url="https://other.example/v1", key="sk-new")]
    provider.readings["https://other.example/v1"] = BalanceReading(False, "unsupported")
    new = asyncio.create_task(watcher.refresh("b1"))
    await yield_until(lambda: len(provider.calls) == 2, "the new key's read started")
    provider.gate.set()
    await asyncio.wait_for(asyncio.gather(old, new), 5)

    state = watcher.state("b1")
    assert state.kind == "off" and state.reading == BalanceReading(False, "unsupported")


async def test_a_bot_that_is_gone_is_forgotten(clock: FakeClock, provider: Provider) -> None:
    provider.readings[OPENROUTER] = limited(10.0, 1.0)
    bots = Bots(bot())
    watcher = watcher_for(clock, provider, bots)
    heard: list[str] = []
    watcher.on_change(heard.append)
    await watcher.refresh()
    assert watcher.is_low("b1")

    bots.sources = []
    await watcher.refresh()
    assert watcher.state("b1") == ReserveState() and heard == ["b1", "b1"]


async def test_stop_ends_a_read_under_way_and_its_waiters_quietly(
    clock: FakeClock, provider: Provider
) -> None:
    watcher = watcher_for(clock, provider, Bots(bot()))
    provider.gate = asyncio.Event()
    waiting = asyncio.create_task(watcher.refresh("b1"))
    await yield_until(lambda: len(provider.calls) == 1, "the read started")
    await watcher.stop()
    await asyncio.wait_for(waiting, 5)
    assert watcher.state("b1").kind == "off"


def test_nonsense_settings_are_refused(clock: FakeClock, provider: Provider) -> None:
    with pytest.raises(ValueError):
        ReserveWatcher(clock, bus=EventBus(), bots=Bots(), read=provider, interval_s=0)
    with pytest.raises(ValueError):
        ReserveWatcher(clock, bus=EventBus(), bots=Bots(), read=provider, low_fraction=1.5)


# -- the sentence ------------------------------------------------------------------------------------------


async def test_the_lines_for_ok_and_low(clock: FakeClock, provider: Provider) -> None:
    watcher = watcher_for(clock, provider, Bots(bot()))
    await watcher.refresh()
    assert watcher.line("b1", "zh") == "OpenRouter 限额 $10.00,剩余 $8.20"
    assert watcher.line("b1", "en") == "OpenRouter limit $10.00, $8.20 left"

    provider.readings[OPENROUTER] = limited(10.0, 1.2)
    await watcher.refresh()
    assert watcher.line("b1", "zh") == "余额 $1.20 / 限额 $10.00,低于 20%:后台工作已停下,留给聊天"
    assert watcher.line("b1", "en") == (
        "Balance $1.20 of a $10.00 limit, under 20%: background work has stopped to keep the rest for chat"
    )

    watcher.record_spend("b1", 5.0)  # more than is left: never shown below zero
    assert watcher.line("b1", "zh").startswith("余额 $0.00 / 限额 $10.00")


@pytest.mark.parametrize(
    ("reading", "zh", "en"),
    [
        (None, "还没有读到余额", "The balance hasn't been read yet"),
        (
            BalanceReading(False, "unsupported"),
            "这个服务不提供余额,预算保护不可用",
            "This provider doesn't report a balance, so the chat reserve is off",
        ),
        (
            BalanceReading(False, "no_limit", provider="openrouter"),
            "这个 OpenRouter 密钥没有设花费上限,预算保护不可用",
            "This OpenRouter key has no spending limit, so the chat reserve is off",
        ),
        (
            BalanceReading(False, "no_limit", balance_text="¥110.00", provider="deepseek"),
            "DeepSeek 显示余额 ¥110.00,但没有限额,预算保护不可用",
            "DeepSeek shows a balance of ¥110.00 but no limit, so the chat reserve is off",
        ),
        (
            BalanceReading(False, "no_key", provider="openrouter"),
            "还没有 API 密钥,读不到余额,预算保护不可用",
            "There is no API key to read the balance with, so the chat reserve is off",
        ),
        (
            BalanceReading(
                False,
                "error",
                provider="openrouter",
                problem="key",
                status=401,
                reason="openrouter.ai refused the API key (HTTP 401)",
            ),
            "读不到余额(API 密钥被拒绝,HTTP 401),预算保护暂不可用",
            "Couldn't read the balance (openrouter.ai refused the API key (HTTP 401)); "
            "the chat reserve is off for now",
        ),
    ],
)
def test_the_lines_when_the_reserve_is_off(reading: BalanceReading | None, zh: str, en: str) -> None:
    state = ReserveState("off", reading=reading)
    assert reserve_line(state, "zh") == zh
    assert reserve_line(state, "en") == en

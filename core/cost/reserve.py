"""The chat reserve (issue 7 item 3; docs/cost.md#the-chat-reserve): background work stops while a
bot's key is close to its spending limit, so what is left stays for chat.

`ReserveWatcher` reads every bot's balance now and every 5 minutes (and when told to, after a budget or key
change). Background spend recorded since the last read is subtracted from what the provider said, so a burst
of task turns can tip a bot into `low` before the next read. A bot is `low` when its remaining balance is
under 20 % of the limit; `off` when its provider reports no limit (or nothing, or the read failed with no
earlier figures to go on); `ok` otherwise. Listeners hear the bot id whenever a bot's kind changes; what to
do about it (cancel task turns, skip rule runs, refuse `task_start`, one needs-you row) is the caller's.

Time is read only through the injected clock. One bot's failing read never stops the others'; a refresh
that arrives while the same key is being read waits for that read instead of starting another.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

import httpx

from core.agent.http_warmup import shared_ssl_context
from core.bus import EventBus
from core.clock import Clock
from core.cost.balance import TIMEOUT_S, BalanceReading, read_balance

__all__ = [
    "LOW_FRACTION",
    "READ_INTERVAL_S",
    "BotBalanceSource",
    "ReserveKind",
    "ReserveState",
    "ReserveWatcher",
    "reserve_line",
]

log = logging.getLogger(__name__)

READ_INTERVAL_S = 300.0
LOW_FRACTION = 0.2

ReserveKind = Literal["off", "ok", "low"]
BalanceRead = Callable[[str, str], Awaitable[BalanceReading]]
"""(base_url, api_key) -> the reading; never expected to raise, but a raise counts as a failed read."""


@dataclass(frozen=True, slots=True)
class BotBalanceSource:
    """Where a bot's balance is read: its model endpoint and key (from `BotService.model_config`)."""

    bot_id: str
    base_url: str
    api_key: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class ReserveState:
    """A bot's reserve as last worked out.

    `reading` is the latest reading (it may be a failed one while the figures still come from an earlier
    good one). `limit_usd` and `remaining_usd` are the last good reading's, the remaining minus `spent_usd`,
    the background spend recorded since (it may go below zero). `since` is the wall time the bot became
    low (0 unless low); `read_at` the wall time of the good reading."""

    kind: ReserveKind = "off"
    reading: BalanceReading | None = None
    remaining_usd: float | None = None
    limit_usd: float | None = None
    since: float = 0.0
    spent_usd: float = 0.0
    read_at: float = 0.0
    low_fraction: float = LOW_FRACTION
    provider_name: str = ""  # of the good reading: 「OpenRouter」


OFF = ReserveState()


@dataclass(frozen=True, slots=True)
class _Read:
    source: BotBalanceSource
    task: asyncio.Task[None]


@dataclass(frozen=True, slots=True)
class _Good:
    source: BotBalanceSource
    reading: BalanceReading
    read_at: float


@dataclass(frozen=True, slots=True)
class ReserveChanged:
    """A bot's chat reserve changed kind (off, ok, low): its background runs park or go on."""

    bot_id: str


class ReserveWatcher:
    """See the module docstring. `bots` lists the bots to watch with their endpoint and key; `read` reads one
    balance (default: `read_balance` over one shared httpx client, closed by `stop`)."""

    def __init__(
        self,
        clock: Clock,
        *,
        bus: EventBus,
        bots: Callable[[], Awaitable[list[BotBalanceSource]]],
        read: BalanceRead | None = None,
        interval_s: float = READ_INTERVAL_S,
        low_fraction: float = LOW_FRACTION,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        if not 0 < low_fraction < 1:
            raise ValueError("low_fraction must be between 0 and 1")
        self._clock = clock
        self._bus = bus
        self._bots = bots
        self._read = read or self._read_over_http
        self._interval_s = interval_s
        self._low_fraction = low_fraction
        self._client: httpx.AsyncClient | None = None
        self._task: asyncio.Task[None] | None = None
        self._sources: dict[str, BotBalanceSource] = {}
        self._reads: dict[str, _Read] = {}
        self._good: dict[str, _Good] = {}
        self._latest: dict[str, BalanceReading] = {}
        self._spent: dict[str, float] = {}
        self._states: dict[str, ReserveState] = {}
        self._listeners: list[Callable[[str], None]] = []

    # -- running -----------------------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Read every bot now, then every `interval_s`."""
        if self.running:
            return
        self._task = asyncio.get_running_loop().create_task(self._watch(), name="reserve-watcher")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        reads = [read.task for read in self._reads.values()]
        self._reads.clear()
        for read_task in reads:
            read_task.cancel()
        for read_task in reads:
            with contextlib.suppress(asyncio.CancelledError):
                await read_task
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    async def _watch(self) -> None:
        while True:
            try:
                await self.refresh()
            except Exception:
                log.exception("reading the bots' balances failed")
            await self._clock.sleep(self._interval_s)

    # -- reading -----------------------------------------------------------------------------------------

    async def refresh(self, bot_id: str | None = None) -> None:
        """Read one bot's balance (after a budget or key change), or every bot's. Bots no longer listed are
        forgotten. Returns once the reads are in."""
        if not await self._list():
            return
        wanted = list(self._sources) if bot_id is None else [bot_id]
        await asyncio.gather(*(self._refresh_bot(one) for one in wanted))

    async def _list(self) -> bool:
        try:
            sources = await self._bots()
        except Exception:
            log.exception("cannot list the bots whose balance to read")
            return False
        self._sources = {source.bot_id: source for source in sources}
        known = set(self._states) | set(self._good) | set(self._latest) | set(self._spent) | set(self._reads)
        for gone in known - set(self._sources):
            self._forget(gone)
        return True

    async def _refresh_bot(self, bot_id: str) -> None:
        source = self._sources.get(bot_id)
        if source is None:
            self._forget(bot_id)
            return
        running = self._reads.get(bot_id)
        if running is None or running.source != source:
            # A read of an older key may still be running; it is left to finish and ignored.
            task = asyncio.get_running_loop().create_task(self._read_bot(source), name=f"balance-{bot_id}")
            running = _Read(source, task)
            self._reads[bot_id] = running
        await _join(running.task)

    async def _read_bot(self, source: BotBalanceSource) -> None:
        bot_id = source.bot_id
        mark = self._spent.get(bot_id, 0.0)  # spend up to here is in what the provider is about to say
        ours = False
        try:
            reading = await self._read_safely(source)
        finally:
            current = self._reads.get(bot_id)
            ours = current is not None and current.task is asyncio.current_task()
            if ours:
                del self._reads[bot_id]
        if ours and self._sources.get(bot_id) == source:
            self._apply(source, reading, mark)

    async def _read_safely(self, source: BotBalanceSource) -> BalanceReading:
        try:
            return await self._read(source.base_url, source.api_key)
        except Exception as exc:
            log.warning("reading the balance of bot %s failed: %s", source.bot_id, type(exc).__name__)
            return BalanceReading(False, "error", reason=f"reading the balance failed ({type(exc).__name__})")

    async def _read_over_http(self, base_url: str, api_key: str) -> BalanceReading:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=TIMEOUT_S, verify=shared_ssl_context())
        return await read_balance(self._client, base_url, api_key)

    # -- spend -------------------------------------------------------------------------------------------

    def record_spend(self, bot_id: str, usd: float) -> None:
        """Estimated background spend (a task or rule run's model call) since the last read; it is taken off
        the remaining balance at once and forgotten when the next read (which includes it) comes in."""
        if not math.isfinite(usd) or usd <= 0:
            return
        self._spent[bot_id] = self._spent.get(bot_id, 0.0) + usd
        if bot_id in self._good:
            self._update(bot_id)

    # -- state -------------------------------------------------------------------------------------------

    def state(self, bot_id: str) -> ReserveState:
        return self._states.get(bot_id, OFF)

    def is_low(self, bot_id: str) -> bool:
        return self.state(bot_id).kind == "low"

    def low_bots(self) -> list[str]:
        """The bots whose background work is held for chat, in id order."""
        return sorted(bot_id for bot_id, state in self._states.items() if state.kind == "low")

    def line(self, bot_id: str, lang: str) -> str:
        """The one sentence for the bot's settings and its needs-you row."""
        return reserve_line(self.state(bot_id), lang)

    def on_change(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call `callback(bot_id)` whenever a bot's kind changes (off, ok, low). Returns the unsubscribe."""
        self._listeners.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return unsubscribe

    def _apply(self, source: BotBalanceSource, reading: BalanceReading, mark: float) -> None:
        bot_id = source.bot_id
        self._latest[bot_id] = reading
        good = self._good.get(bot_id)
        if reading.code == "error":
            # Keep the last good figures of this same key (spend keeps coming off them); none else.
            if good is not None and good.source != source:
                del self._good[bot_id]
        else:
            self._spent[bot_id] = max(0.0, self._spent.get(bot_id, 0.0) - mark)
            if reading.supported and reading.limit_usd is not None and reading.remaining_usd is not None:
                self._good[bot_id] = _Good(source, reading, self._clock.time())
            else:
                self._good.pop(bot_id, None)
        self._update(bot_id)

    def _update(self, bot_id: str) -> None:
        before = self._states.get(bot_id, OFF)
        latest = self._latest.get(bot_id)
        good = self._good.get(bot_id)
        if good is None or good.reading.limit_usd is None or good.reading.remaining_usd is None:
            after = ReserveState("off", reading=latest, low_fraction=self._low_fraction)
        else:
            limit = good.reading.limit_usd
            spent = self._spent.get(bot_id, 0.0)
            remaining = good.reading.remaining_usd - spent
            low = remaining <= 0 or remaining < self._low_fraction * limit
            since = (before.since if before.kind == "low" else self._clock.time()) if low else 0.0
            after = ReserveState(
                "low" if low else "ok",
                reading=latest,
                remaining_usd=remaining,
                limit_usd=limit,
                since=since,
                spent_usd=spent,
                read_at=good.read_at,
                low_fraction=self._low_fraction,
                provider_name=good.reading.provider_name,
            )
        self._states[bot_id] = after
        if after.kind != before.kind:
            log.info("chat reserve of bot %s: %s -> %s", bot_id, before.kind, after.kind)
            self._notify(bot_id)

    def _forget(self, bot_id: str) -> None:
        before = self._states.pop(bot_id, OFF)
        self._reads.pop(bot_id, None)  # a read still running for it is ignored when it ends
        for table in (self._good, self._latest, self._spent):
            table.pop(bot_id, None)
        if before.kind != "off":
            self._notify(bot_id)

    def _notify(self, bot_id: str) -> None:
        self._bus.publish(ReserveChanged(bot_id))
        for callback in list(self._listeners):
            try:
                callback(bot_id)
            except Exception:
                log.exception("a chat reserve listener failed for bot %s", bot_id)


async def _join(task: asyncio.Task[None]) -> None:
    """Wait for a shared read. Cancelling the caller leaves the read running for the others; a read stopped
    by `stop()` ends the wait quietly."""
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        me = asyncio.current_task()
        if task.cancelled() and (me is None or me.cancelling() == 0):
            return
        raise


# -- the sentence ------------------------------------------------------------------------------------------


def _usd(amount: float) -> str:
    return f"${max(amount, 0.0):,.2f}"


def reserve_line(state: ReserveState, lang: str) -> str:
    """「OpenRouter 限额 $10.00,剩余 $8.20」, 「余额 $1.20 / 限额 $10.00,低于 20%:后台工作已停下,留给聊天」,
    「这个服务不提供余额,预算保护不可用」, ... (zh or en)."""
    zh = lang.lower().startswith("zh")
    reading = state.reading
    if state.kind == "off" or state.limit_usd is None or state.remaining_usd is None:
        return _off_line(reading, zh)
    limit, remaining = _usd(state.limit_usd), _usd(state.remaining_usd)
    if state.kind == "low":
        percent = f"{state.low_fraction * 100:g}"
        text = (
            f"余额 {remaining} / 限额 {limit},低于 {percent}%:后台工作已停下,留给聊天"
            if zh
            else f"Balance {remaining} of a {limit} limit, under {percent}%: "
            "background work has stopped to keep the rest for chat"
        )
    else:
        name = state.provider_name
        estimated = state.spent_usd > 0
        if zh:
            text = f"{name} 限额 {limit},剩余{'约' if estimated else ''} {remaining}".strip()
        else:
            text = f"{name} limit {limit}, {'about ' if estimated else ''}{remaining} left".strip()
            text = text[0].upper() + text[1:]
    if reading is not None and reading.code == "error":
        text += (
            "(最近一次读取失败,沿用上次的数字)"
            if zh
            else " (the last read failed; using the figures before it)"
        )
    return text


def _off_line(reading: BalanceReading | None, zh: bool) -> str:
    if reading is None:
        return "还没有读到余额" if zh else "The balance hasn't been read yet"
    name = reading.provider_name
    if reading.code == "unsupported":
        return (
            "这个服务不提供余额,预算保护不可用"
            if zh
            else "This provider doesn't report a balance, so the chat reserve is off"
        )
    if reading.code == "no_key":
        return (
            "还没有 API 密钥,读不到余额,预算保护不可用"
            if zh
            else "There is no API key to read the balance with, so the chat reserve is off"
        )
    if reading.code == "no_limit":
        if reading.balance_text:
            return (
                f"{name} 显示余额 {reading.balance_text},但没有限额,预算保护不可用"
                if zh
                else f"{name} shows a balance of {reading.balance_text} but no limit, "
                "so the chat reserve is off"
            )
        return (
            f"这个 {name} 密钥没有设花费上限,预算保护不可用"
            if zh
            else f"This {name} key has no spending limit, so the chat reserve is off"
        )
    if reading.code == "error":
        if not zh:
            return f"Couldn't read the balance ({reading.reason}); the chat reserve is off for now"
        return f"读不到余额({_problem_zh(reading)}),预算保护暂不可用"
    return "预算保护不可用" if zh else "The chat reserve is off"


def _problem_zh(reading: BalanceReading) -> str:
    status = f"HTTP {reading.status}" if reading.status is not None else ""
    return {
        "key": f"API 密钥被拒绝,{status}",
        "http": f"服务回答 {status}",
        "network": "连不上服务",
        "timeout": f"{TIMEOUT_S:g} 秒内没有回应",
        "answer": "回答看不懂",
    }.get(reading.problem, "读取出错")

"""Figures for a Feishu channel (docs/channels.md#feishu), a real Host against the fake Feishu server.
Run: .venv/bin/python -m bench.bench_feishu [--idle-s 30] [--messages 20] [--latency-ms 100]
         [--chats 20] [--per-chat 20]

Each figure is printed next to a baseline measured in the same run, and all again in a table at the end.

- inbound to reply at the fake: from the fake pushing an `im.message.receive_v1` frame on the long connection
  (`push_nowait`) to the reply's REST call being recorded by the fake (stamped, in loop time, by the bench's
  subclass of the fake), minus the scripted model's latency L, next to the same host's desktop conversation
  in the same run (bench_wechat's measure: from `chat.say` to the assistant message stored and announced,
  minus L). Sequential, interleaved one by one, after one warm-up message each that is not counted (the
  first Feishu message also makes its writer the owner).
- catch-up: a data dir whose channel has `--chats` one-to-one chats that each wrote once before (a real host
  run: the first writer is the owner, the others are allowed, each message answered), then `--per-chat`
  messages per chat written while the host was off (`say_while_offline`, round robin over the chats). From
  `start()` to the long connection up, to the catch-up's history calls answered (the last chat's history
  page written by the fake), and to all of them stored (rows in `inbound_messages`, polled every 2 ms once
  the history is read), and to all of them handed to chat, each in its conversation, in the order written
  (the scripted model answers at once; rows marked handled, polled every 10 ms). Baseline: the same start of
  the same data dir with nothing written while off (measured first). The SDK is already imported in this
  process, so these starts do not pay for its import (see the import figure). Each start follows a
  `gc.collect()`, so a full collection owed for the bench's own garbage does not land in one of them, and
  the loop's longest stall meanwhile is shown (how late a 5 ms sleep woke, at worst). Median (min-max) of
  CATCH_UP_ROUNDS rounds, each a fresh data dir and fake.
- an idle connected channel: the process's CPU time (psutil, in 10 ms ticks; in brackets
  `time.process_time()`, finer) and RSS growth over `--idle-s` seconds with one connected Feishu channel, the
  fake asking for a ping every PING_S = 5 s (Feishu's own: 120 s), next to the same seconds of the same host
  before the channel was added (each window SETTLE_S after what preceded it, and after a `gc.collect()`).
- outbox pushes: 100 reply deliveries (outside the attention budget) for the owner's Feishu chat, from
  `outbox.flush()` to all marked sent; baseline: the same to a desktop conversation.
- importing lark-oapi: `core.channels.feishu.sdk.load()` in a fresh interpreter (cold, after `core.host`),
  next to that interpreter's import of `core.host`, which must not import lark-oapi; and what a full garbage
  collection (`gc.collect()`, which holds the loop) costs after the load and before it. Median of
  IMPORT_RUNS interpreters.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from aiohttp import web
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from bench.bench_wechat import _desktop_reply
from bench.common import figure_table, idle_reading, idle_text, line, median_p95_ms
from bench.push_rate import all_sent, insert_pushes
from core.channels.feishu.catch_up import PER_CHAT
from core.host import Host
from core.store.models import InboundRow
from tests.fakes.fake_feishu import FakeFeishu
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.feishu_fixtures import OWNER, P2P, connect_feishu
from tests.integration.host_fixtures import make_host, running_api

PING_S = 5  # the fake's PingInterval for the idle figure
STALL_TICK_S = 0.005
CATCH_UP_ROUNDS = 3  # each a fresh data dir and fake
SETTLE_S = 2.0  # after a start or a connect, before an idle window: what it left running ends
IMPORT_RUNS = 3
REPO = Path(__file__).resolve().parent.parent

Row = tuple[str, str, str]  # figure, Feishu, baseline


class _TimedFeishu(FakeFeishu):
    """The fake with the bench's stopwatch on it: when each recorded send and each history page left the
    handler, in loop time. The fake itself is unchanged."""

    def __init__(self, *, ping_interval: int = 120) -> None:
        super().__init__(ping_interval=ping_interval)
        self.sent_at: list[float] = []  # one per `sent`, in order
        self.history_done: list[tuple[float, str]] = []  # (when, chat id) per history page answered

    async def _send(self, request: web.Request, reply_to: str) -> web.StreamResponse:
        before = len(self.sent)
        response = await super()._send(request, reply_to)
        # No await between the fake appending to `sent` and here: one stamp per send, in order.
        self.sent_at += [asyncio.get_running_loop().time()] * (len(self.sent) - before)
        return response

    async def _list(self, request: web.Request) -> web.Response:
        response = await super()._list(request)
        self.history_done.append((asyncio.get_running_loop().time(), request.query.get("container_id", "")))
        self._tick.beat()
        return response

    async def wait_history(self, n: int, timeout: float) -> None:
        await self._wait(lambda: len(self.history_done) >= n, timeout)


class _Warnings(logging.Handler):
    """What the run logged at WARNING or above (core's slow paths and complaints, for the report)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        key = f"{record.levelname} {record.name}: {record.getMessage()[:160]}"
        self.seen[key] = self.seen.get(key, 0) + 1


def _host(data: Path, model: ScriptedModelServer, feishu: FakeFeishu, secrets: MemorySecretStore) -> Host:
    return make_host(
        data,
        model.base_url,
        home=data.parent / "home",
        secrets=secrets,
        environ={"ERRAND_FEISHU_DOMAIN": feishu.url},
        gather_s=0.0,  # on the real clock, no 2-minute wait
    )


def _s(value: float) -> str:
    return f"{value:6.2f} s"


# ---- inbound -> reply at the fake, against the desktop ---------------------------------------------


async def _feishu_reply(feishu: _TimedFeishu, text: str) -> float:
    count = len(feishu.sent) + 1
    event = feishu.message_event(chat_id=P2P, sender=OWNER, text=text)
    began = asyncio.get_running_loop().time()
    await feishu.push_nowait(event)
    await feishu.wait_for_sent(count, timeout=10)
    return feishu.sent_at[count - 1] - began


async def reply_latency(model: ScriptedModelServer, tmp: Path, messages: int, latency_s: float) -> list[Row]:
    model.responder = lambda _body: Reply.text("pong", latency_s=latency_s)
    desktop: list[float] = []
    feishu_s: list[float] = []
    warm = (0.0, 0.0)
    requests_before = len(model.requests)
    async with _TimedFeishu() as feishu:
        host = _host(tmp / "reply" / "data", model, feishu, MemorySecretStore())
        async with running_api(host) as client:
            await connect_feishu(client, host, feishu)
            conversation = (await host.chat.create_conversation()).id
            for n in range(messages + 1):  # the first of each is a warm-up
                d = await _desktop_reply(host, conversation, f"hello {n}")
                f = await _feishu_reply(feishu, f"hello {n}")
                if n:
                    desktop.append(d - latency_s)
                    feishu_s.append(f - latency_s)
                else:
                    warm = (d - latency_s, f - latency_s)
    served = model.requests[requests_before:]
    held = [r.responded_at - r.received_at for r in served if r.responded_at is not None]
    model.responder = None
    line(
        "scripted model latency L (subtracted below)",
        f"{latency_s * 1000:.0f} ms per reply   (held at the server: median "
        f"{statistics.median(held) * 1000:.1f} ms; {len(served)} requests for {2 * (messages + 1)} turns)",
    )
    line("desktop: say -> reply stored, minus L (baseline)", median_p95_ms(desktop))
    line("feishu: event pushed -> reply at the fake, minus L", median_p95_ms(feishu_s))
    line(
        "  warm-up (first of each, not counted), minus L",
        f"desktop {warm[0] * 1000:7.1f} ms   feishu {warm[1] * 1000:7.1f} ms",
    )
    gap = statistics.median(feishu_s) - statistics.median(desktop)
    ratio = (statistics.median(feishu_s) + latency_s) / (statistics.median(desktop) + latency_s)
    line("  feishu - desktop (median); ratio with L included", f"{gap * 1000:+7.1f} ms   {ratio:.2f}x")
    return [
        (
            "inbound -> reply, minus L (desktop: say -> stored)",
            median_p95_ms(feishu_s),
            median_p95_ms(desktop),
        ),
        ("  first message (warm-up), minus L", f"{warm[1] * 1000:7.1f} ms", f"{warm[0] * 1000:7.1f} ms"),
    ]


# ---- catch-up -----------------------------------------------------------------------------------------


async def _count(host: Host, channel_id: str, *, handled: bool = False) -> int:
    def read(s: Session) -> int:
        stmt = select(func.count()).select_from(InboundRow).where(InboundRow.channel_id == channel_id)
        if handled:
            stmt = stmt.where(InboundRow.handled_at > 0)
        return int(s.scalar(stmt) or 0)

    return await host.db.read(read)


class _Start:
    """One timed start of a data dir with a Feishu channel: start() returned, connected, history read,
    all stored; and the loop's longest stall meanwhile."""

    def __init__(self) -> None:
        self.returned = self.connected = self.history = self.stored = self.stall = self.all_handed = 0.0
        self.handled = 0


async def _watch_stalls(timed: _Start) -> None:
    """How late a 5 ms sleep wakes, at worst: how long something held the loop without yielding."""
    loop = asyncio.get_running_loop()
    while True:
        before = loop.time()
        await asyncio.sleep(STALL_TICK_S)
        timed.stall = max(timed.stall, loop.time() - before - STALL_TICK_S)


async def _timed_start(host: Host, feishu: _TimedFeishu, chats: int, channel_id: str, target: int) -> _Start:
    loop = asyncio.get_running_loop()
    timed = _Start()
    mark, connections = len(feishu.history_done), feishu.connections
    gc.collect()  # so that a full collection the bench's own garbage owes does not land in this start
    watching = loop.create_task(_watch_stalls(timed))
    try:
        began = loop.time()
        await host.start()
        timed.returned = loop.time() - began
        await feishu.wait_connected(connections + 1, timeout=20)
        timed.connected = loop.time() - began
        await feishu.wait_history(mark + chats, timeout=60)
        done = feishu.history_done[mark:]
        assert len({chat for _, chat in done}) == chats, "one history read per chat"
        timed.history = max(at for at, _ in done) - began
        while True:  # nothing is announced when a message is stored: the table is polled
            if await _count(host, channel_id) >= target:
                break
            if loop.time() > began + 60:
                raise TimeoutError(f"{await _count(host, channel_id)} of {target} stored after 60 s")
            await asyncio.sleep(0.002)
        timed.stored = loop.time() - began
        timed.handled = await _count(host, channel_id, handled=True)
        while await _count(host, channel_id, handled=True) < target:  # each in its conversation, in order
            if loop.time() > began + 120:
                raise TimeoutError(f"{await _count(host, channel_id, handled=True)} of {target} handed on")
            await asyncio.sleep(0.01)
        timed.all_handed = loop.time() - began
    finally:
        watching.cancel()
    return timed


async def _catch_up_round(
    model: ScriptedModelServer, data: Path, chats: int, per_chat: int
) -> tuple[_Start, _Start]:
    """One fresh data dir and fake: the chats written once, then the baseline start and the loaded one."""
    users = [OWNER] + [f"ou_bench{n:026d}" for n in range(1, chats)]
    chat_ids = [P2P] + [f"oc_bench{n:026d}" for n in range(1, chats)]
    secrets = MemorySecretStore()
    async with _TimedFeishu() as feishu:
        first = _host(data, model, feishu, secrets)
        async with running_api(first) as client:
            bot, channel_id = await connect_feishu(client, first, feishu)
            await first.channels.set_allowed(bot, channel_id, users[1:])
            for user, chat in zip(users, chat_ids, strict=True):  # the first writer becomes the owner
                await feishu.push(feishu.message_event(chat_id=chat, sender=user, text="hello"))
            await feishu.wait_for_sent(chats, timeout=30)
            assert await _count(first, channel_id, handled=True) == chats

        empty = _host(data, model, feishu, secrets)
        try:
            base = await _timed_start(empty, feishu, chats, channel_id, chats)
        finally:
            await empty.stop()

        for k in range(per_chat):
            for user, chat in zip(users, chat_ids, strict=True):
                feishu.say_while_offline(chat_id=chat, sender=user, text=f"while off {k}")
        taken = chats * min(per_chat, PER_CHAT)  # catch-up keeps a chat's PER_CHAT newest
        loaded = _host(data, model, feishu, secrets)
        try:
            full = await _timed_start(loaded, feishu, chats, channel_id, chats + taken)
        finally:
            await loaded.stop()  # while the hand-on to chat still runs
    full.handled -= chats  # the messages of the first run were handled then
    return base, full


STEPS = (
    ("  start() returns", "returned"),
    ("  start() -> connected", "connected"),
    ("  start() -> history read (the last chat's page answered)", "history"),
)


def _median_s(starts: Sequence[_Start], field: str) -> str:
    values = [float(getattr(s, field)) for s in starts]
    return f"{_s(statistics.median(values))} ({min(values):.2f}-{max(values):.2f})"


async def catch_up(model: ScriptedModelServer, tmp: Path, chats: int, per_chat: int) -> list[Row]:
    model.responder = lambda _body: Reply.text("ok")
    bases: list[_Start] = []
    fulls: list[_Start] = []
    for n in range(CATCH_UP_ROUNDS):
        base, full = await _catch_up_round(model, tmp / f"catch-up-{n}" / "data", chats, per_chat)
        bases.append(base)
        fulls.append(full)
    model.responder = None
    offline = chats * per_chat
    taken = chats * min(per_chat, PER_CHAT)
    stall_base = max(b.stall for b in bases) * 1000
    stall_full = max(f.stall for f in fulls) * 1000
    handled = ", ".join(str(f.handled) for f in fulls)
    print(
        f"catch-up: median of {CATCH_UP_ROUNDS} rounds (min-max), each a fresh data dir and fake", flush=True
    )
    line(f"catch-up, {chats} chats, nothing written while off (baseline)", "")
    for label, field in STEPS:
        line(label, _median_s(bases, field))
    line("  longest loop stall", f"{stall_base:5.0f} ms")
    line(f"catch-up, {chats} chats x {per_chat} written while off ({offline})", "")
    for label, field in STEPS:
        line(label, _median_s(fulls, field))
    line(f"  start() -> all {taken} stored (not answered)", _median_s(fulls, "stored"))
    line("  by then, each round", f"{handled} handed to chat")
    line(f"  start() -> all {taken} handed to chat (instant model)", _median_s(fulls, "all_handed"))
    line("  longest loop stall", f"{stall_full:5.0f} ms")
    return [
        (
            "start() -> connected (catch-up start)",
            _median_s(fulls, "connected"),
            _median_s(bases, "connected"),
        ),
        (f"start() -> {chats} chats' history read", _median_s(fulls, "history"), _median_s(bases, "history")),
        (f"start() -> all {taken} caught up and stored", _median_s(fulls, "stored"), "(nothing to store)"),
        ("  by then handed to chat", handled, ""),
        (f"start() -> all {taken} handed to chat", _median_s(fulls, "all_handed"), "(nothing to hand on)"),
        ("  longest loop stall, start -> stored", f"{stall_full:5.0f} ms", f"{stall_base:5.0f} ms"),
    ]


# ---- an idle connected channel ----------------------------------------------------------------------


async def idle(model: ScriptedModelServer, tmp: Path, idle_s: float) -> list[Row]:
    async with _TimedFeishu(ping_interval=PING_S) as feishu:
        host = _host(tmp / "idle" / "data", model, feishu, MemorySecretStore())
        async with running_api(host) as client:
            await asyncio.sleep(SETTLE_S)
            bare = await idle_reading(idle_s)
            await connect_feishu(client, host, feishu)
            await asyncio.sleep(SETTLE_S)
            pings = feishu.pings
            channel = await idle_reading(idle_s)
            pings = feishu.pings - pings
    line(f"idle host, no channel, {idle_s:.0f} s (baseline)", idle_text(*bare))
    line(
        f"idle host, one connected Feishu channel, {idle_s:.0f} s",
        f"{idle_text(*channel)}   ({pings} pings)",
    )
    return [
        (
            f"idle {idle_s:.0f} s (ping every {PING_S} s: {pings} pings)",
            idle_text(*channel),
            idle_text(*bare),
        )
    ]


# ---- importing lark-oapi ------------------------------------------------------------------------------

_IMPORTS = """
import asyncio, gc, json, sys, time
import psutil

def full_gc() -> tuple[float, int]:
    gc.collect()  # what the imports left, then one more: the pause a full collection costs from now on
    began = time.perf_counter()
    gc.collect()
    return time.perf_counter() - began, len(gc.get_objects())

began = time.perf_counter()
import core.host
host_s = time.perf_counter() - began
host_lark = "lark_oapi" in sys.modules
rss = psutil.Process().memory_info().rss
host_gc, host_objects = full_gc()
from core.channels.feishu import sdk

async def load() -> float:
    began = time.perf_counter()
    await sdk.load()
    return time.perf_counter() - began

sdk_s = asyncio.run(load())
grew = psutil.Process().memory_info().rss - rss
sdk_gc, sdk_objects = full_gc()
print(json.dumps({
    "host_s": host_s, "host_lark": host_lark, "host_mb": rss / 2**20, "host_gc": host_gc,
    "host_objects": host_objects, "sdk_s": sdk_s, "sdk_mb": grew / 2**20, "sdk_gc": sdk_gc,
    "sdk_objects": sdk_objects,
}))
"""


async def imports() -> list[Row]:
    runs: list[dict[str, float]] = []
    for _ in range(IMPORT_RUNS):
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _IMPORTS, cwd=REPO, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await process.communicate()
        assert process.returncode == 0, "the import subprocess failed"
        runs.append(json.loads(out))

    def median(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    lark = any(r["host_lark"] for r in runs)
    host = f"{median('host_s') * 1000:6.0f} ms   RSS {median('host_mb'):3.0f} MB"
    sdk = f"{median('sdk_s') * 1000:6.0f} ms   RSS +{median('sdk_mb'):.0f} MB"
    host_gc = f"{median('host_gc') * 1000:6.0f} ms   ({median('host_objects') / 1000:.0f} k objects)"
    sdk_gc = f"{median('sdk_gc') * 1000:6.0f} ms   ({median('sdk_objects') / 1000:.0f} k objects)"
    line("import core.host, fresh interpreter (baseline)", f"{host}   (lark_oapi imported: {lark})")
    line("sdk.load() after it: lark-oapi, in a worker thread", sdk)
    line("  a full gc.collect() then (baseline: before the load)", f"{sdk_gc}   before: {host_gc.strip()}")
    return [
        (f"import lark-oapi, cold (median of {IMPORT_RUNS})", sdk, f"{host} (import core.host)"),
        ("  a full GC pause after it (baseline: before)", sdk_gc, host_gc),
    ]


# ---- outbox pushes ------------------------------------------------------------------------------------


async def pushes(model: ScriptedModelServer, tmp: Path, n: int) -> list[Row]:
    """`n` reply pushes (outside the attention budget) to the owner's Feishu chat, from `outbox.flush()`
    to all marked sent (each with its uuid, in its thread); baseline: the same to a desktop conversation."""
    model.responder = lambda _body: Reply.text("ok")
    async with _TimedFeishu() as feishu:
        host = _host(tmp / "push" / "data", model, feishu, MemorySecretStore())
        async with running_api(host) as client:
            bot, _channel = await connect_feishu(client, host, feishu)
            await feishu.push_nowait(feishu.message_event(chat_id=P2P, sender=OWNER, text="hi"))
            await feishu.wait_for_sent(1, timeout=15)
            conversations = (await client.get("/api/conversations")).json()["conversations"]
            [remote] = [c["id"] for c in conversations if c["channel"] == "feishu"]
            desktop = (await host.chat.create_conversation()).id
            await insert_pushes(host, bot, desktop, "d", n)
            desktop_s = await all_sent(host, "d", n)
            mark = len(feishu.sent)
            await insert_pushes(host, bot, remote, "t", n)
            feishu_s = await all_sent(host, "t", n)
            await host.outbox.settled()
            extra = len(feishu.sent) - mark - n
        await host.stop()
    model.responder = None
    f_text = f"{n / feishu_s:7.0f} per s   ({n} in {feishu_s:.2f} s; {extra} extra sends)"
    d_text = f"{n / desktop_s:7.0f} per s   ({n} in {desktop_s:.2f} s)"
    line(f"outbox: {n} reply pushes to a desktop conversation (baseline)", d_text)
    line(f"outbox: {n} reply pushes to Feishu, flush -> all marked sent", f_text)
    return [(f"outbox: {n} pushes, flush -> all sent", f_text, d_text)]


async def main(idle_s: float, messages: int, latency_s: float, chats: int, per_chat: int) -> None:
    warnings = _Warnings()
    logging.getLogger().addHandler(warnings)
    began = time.perf_counter()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with ScriptedModelServer() as model:
            rows += await reply_latency(model, Path(tmp), messages, latency_s)
            rows += await catch_up(model, Path(tmp), chats, per_chat)
            rows += await idle(model, Path(tmp), idle_s)
            rows += await pushes(model, Path(tmp), 100)
    rows += await imports()
    figure_table(rows, "Feishu")
    print(f"\n(whole run {time.perf_counter() - began:.0f} s)")
    if warnings.seen:
        print("logged at WARNING or above:")
        for message, count in sorted(warnings.seen.items()):
            print(f"  {count:4d} x {message}")
    else:
        print("nothing logged at WARNING or above")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-s", type=float, default=30.0)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--chats", type=int, default=20)
    parser.add_argument("--per-chat", type=int, default=20)
    args = parser.parse_args()
    asyncio.run(main(args.idle_s, args.messages, args.latency_ms / 1000, args.chats, args.per_chat))

"""Figures for a Telegram channel (docs/channels.md#telegram), a real Host against the fake Bot API.
Run: .venv/bin/python -m bench.bench_telegram [--idle-s 20] [--messages 20] [--latency-ms 100] [--pushes 100]

Each figure is printed next to a baseline measured in the same run, and all again in a table at the end.

- inbound to reply at the fake: from the fake queueing the owner's message (`user_says`, which wakes the held
  `getUpdates`) to the reply's `sendMessage` being recorded by the fake (stamped, in loop time, by the bench's
  subclass of the fake), minus the scripted model's latency L, next to the same host's desktop conversation
  (bench_wechat's measure: `chat.say` to the assistant message stored and announced, minus L). Sequential,
  interleaved one by one, after one warm-up message each that is not counted.
- an idle connected channel: CPU time (psutil; in brackets `time.process_time()`) and RSS growth over
  `--idle-s` seconds with one paired Telegram channel long-polling (held 25 s), next to the same seconds of
  the same host before the channel was added (each after SETTLE_S and a `gc.collect()`).
- outbox pushes: `--pushes` deliveries of purpose `reply` (outside the attention budget, so no daily cap)
  inserted for the paired Telegram conversation, then `outbox.flush()`: the time from the flush to the last
  one recorded at the fake, as sends per second; baseline: the same number to a desktop conversation, from
  the flush to all marked sent.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from bench.bench_wechat import _desktop_reply
from bench.common import figure_table, idle_reading, idle_text, line, median_p95_ms
from bench.push_rate import insert_pushes, sent_count
from core.host import Host
from tests.fakes.fake_telegram import FakeTelegram, Params
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import make_host, running_api

OWNER = 4242
SETTLE_S = 2.0  # after a connect, before an idle window: what it left running ends

Row = tuple[str, str, str]  # figure, Telegram, baseline


class _TimedTelegram(FakeTelegram):
    """The fake with the bench's stopwatch on it: when each recorded send left the handler, in loop time.
    The fake itself is unchanged."""

    def __init__(self) -> None:
        super().__init__()
        self.sent_at: list[float] = []  # one per `sent`, in order

    async def _send_message(self, params: Params) -> dict[str, Any]:
        before = len(self.sent)
        message = await super()._send_message(params)
        # No await between the fake appending to `sent` and here: one stamp per send, in order.
        self.sent_at += [asyncio.get_running_loop().time()] * (len(self.sent) - before)
        return message


class _Warnings(logging.Handler):
    """What the run logged at WARNING or above (core's slow paths and complaints, for the report)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.seen: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        key = f"{record.levelname} {record.name}: {record.getMessage()[:160]}"
        self.seen[key] = self.seen.get(key, 0) + 1


def _host(data: Path, model: ScriptedModelServer, telegram: FakeTelegram) -> Host:
    return make_host(
        data,
        model.base_url,
        home=data.parent / "home",
        secrets=MemorySecretStore(),
        environ={"ERRAND_TELEGRAM_BASE_URL": telegram.base_url},
        gather_s=0.0,  # on the real clock, no 2-minute wait
    )


async def _connect(client: httpx.AsyncClient, telegram: FakeTelegram) -> str:
    """Connect and pair the owner (no quiet hours); the bot's id."""
    bot = str((await client.get("/api/bots")).json()["bots"][0]["id"])
    r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
    assert r.status_code == 200, r.text
    r = await client.post(f"/api/bots/{bot}/channels", json={"kind": "telegram", "token": telegram.token})
    assert r.status_code == 201, r.text
    telegram.user_says(chat_id=OWNER, user_id=OWNER, text=f"/start {r.json()['pairingCode']}")
    await telegram.wait_until(lambda: any("配对好了" in s.text for s in telegram.sent), 15)
    return bot


# ---- inbound -> reply at the fake, against the desktop ---------------------------------------------


async def _telegram_reply(telegram: _TimedTelegram, text: str) -> float:
    count = len(telegram.sent) + 1
    began = asyncio.get_running_loop().time()
    telegram.user_says(chat_id=OWNER, user_id=OWNER, text=text)
    await telegram.wait_for_sent(count, timeout=10)
    return telegram.sent_at[count - 1] - began


async def reply_latency(model: ScriptedModelServer, tmp: Path, messages: int, latency_s: float) -> list[Row]:
    desktop: list[float] = []
    telegram_s: list[float] = []
    warm = (0.0, 0.0)
    async with _TimedTelegram() as telegram:
        host = _host(tmp / "reply" / "data", model, telegram)
        async with running_api(host) as client:
            await _connect(client, telegram)
            model.responder = lambda _body: Reply.text("pong", latency_s=latency_s)
            requests_before = len(model.requests)
            conversation = (await host.chat.create_conversation()).id
            for n in range(messages + 1):  # the first of each is a warm-up
                d = await _desktop_reply(host, conversation, f"hello {n}")
                t = await _telegram_reply(telegram, f"hello {n}")
                if n:
                    desktop.append(d - latency_s)
                    telegram_s.append(t - latency_s)
                else:
                    warm = (d - latency_s, t - latency_s)
        await host.stop()
    served = model.requests[requests_before:]
    held = [r.responded_at - r.received_at for r in served if r.responded_at is not None]
    model.responder = None
    line(
        "scripted model latency L (subtracted below)",
        f"{latency_s * 1000:.0f} ms per reply   (held at the server: median "
        f"{statistics.median(held) * 1000:.1f} ms; {len(served)} requests for {2 * (messages + 1)} turns)",
    )
    line("desktop: say -> reply stored, minus L (baseline)", median_p95_ms(desktop))
    line("telegram: user_says -> reply at the fake, minus L", median_p95_ms(telegram_s))
    line(
        "  warm-up (first of each, not counted), minus L",
        f"desktop {warm[0] * 1000:7.1f} ms   telegram {warm[1] * 1000:7.1f} ms",
    )
    gap = statistics.median(telegram_s) - statistics.median(desktop)
    ratio = (statistics.median(telegram_s) + latency_s) / (statistics.median(desktop) + latency_s)
    line("  telegram - desktop (median); ratio with L included", f"{gap * 1000:+7.1f} ms   {ratio:.2f}x")
    return [
        (
            "inbound -> reply, minus L (desktop: say -> stored)",
            median_p95_ms(telegram_s),
            median_p95_ms(desktop),
        ),
        ("  first message (warm-up), minus L", f"{warm[1] * 1000:7.1f} ms", f"{warm[0] * 1000:7.1f} ms"),
    ]


# ---- an idle connected channel ----------------------------------------------------------------------


async def idle(model: ScriptedModelServer, tmp: Path, idle_s: float) -> list[Row]:
    async with _TimedTelegram() as telegram:
        host = _host(tmp / "idle" / "data", model, telegram)
        async with running_api(host) as client:
            await asyncio.sleep(SETTLE_S)
            bare = await idle_reading(idle_s)
            await _connect(client, telegram)
            await asyncio.sleep(SETTLE_S)
            polls = len(telegram.get_updates_calls)
            channel = await idle_reading(idle_s)
            polls = len(telegram.get_updates_calls) - polls
        await host.stop()
    line(f"idle host, no channel, {idle_s:.0f} s (baseline)", idle_text(*bare))
    line(
        f"idle host, one paired Telegram channel, {idle_s:.0f} s",
        f"{idle_text(*channel)}   ({polls} getUpdates)",
    )
    return [(f"idle {idle_s:.0f} s ({polls} getUpdates calls)", idle_text(*channel), idle_text(*bare))]


# ---- outbox pushes ------------------------------------------------------------------------------------


async def pushes(model: ScriptedModelServer, tmp: Path, n: int) -> list[Row]:
    model.responder = lambda _body: Reply.text("ok")
    loop = asyncio.get_running_loop()
    async with _TimedTelegram() as telegram:
        host = _host(tmp / "push" / "data", model, telegram)
        async with running_api(host) as client:
            bot = await _connect(client, telegram)
            telegram.user_says(chat_id=OWNER, user_id=OWNER, text="hi")  # its conversation
            await telegram.wait_until(lambda: any(s.text == "ok" for s in telegram.sent), 15)
            conversations = (await client.get("/api/conversations")).json()["conversations"]
            [remote] = [c["id"] for c in conversations if c["channel"] == "telegram"]
            desktop = (await host.chat.create_conversation()).id

            await insert_pushes(host, bot, desktop, "d", n)
            began = loop.time()
            await host.outbox.flush()
            while await sent_count(host, "d") < n:
                if loop.time() > began + 60:
                    raise TimeoutError(f"{await sent_count(host, 'd')} of {n} desktop pushes sent")
                await asyncio.sleep(0.002)
            desktop_s = loop.time() - began

            mark = len(telegram.sent)
            await insert_pushes(host, bot, remote, "t", n)
            began = loop.time()
            await host.outbox.flush()
            await telegram.wait_for_sent(mark + n, timeout=120)
            telegram_s = telegram.sent_at[mark + n - 1] - began
            await host.outbox.settled()
            extra = len(telegram.sent) - mark - n
        await host.stop()
    model.responder = None
    t_text = f"{n / telegram_s:7.0f} per s   ({n} in {telegram_s:.2f} s; {extra} extra sends)"
    d_text = f"{n / desktop_s:7.0f} per s   ({n} in {desktop_s:.2f} s)"
    line(f"outbox: {n} reply pushes to a desktop conversation (baseline)", d_text)
    line(f"outbox: {n} reply pushes recorded at the fake Telegram", t_text)
    return [(f"outbox: {n} pushes, flush -> all delivered", t_text, d_text)]


async def main(idle_s: float, messages: int, latency_s: float, n_pushes: int) -> None:
    warnings = _Warnings()
    logging.getLogger().addHandler(warnings)
    began = time.perf_counter()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with ScriptedModelServer() as model:
            rows += await reply_latency(model, Path(tmp), messages, latency_s)
            rows += await idle(model, Path(tmp), idle_s)
            rows += await pushes(model, Path(tmp), n_pushes)
    figure_table(rows, "Telegram")
    print(f"\n(whole run {time.perf_counter() - began:.0f} s)")
    if warnings.seen:
        print("logged at WARNING or above:")
        for message, count in sorted(warnings.seen.items()):
            print(f"  {count:4d} x {message}")
    else:
        print("nothing logged at WARNING or above")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--idle-s", type=float, default=20.0)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--pushes", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(main(args.idle_s, args.messages, args.latency_ms / 1000, args.pushes))

"""Figures for a DingTalk channel (docs/channels.md#dingtalk), a real Host against the fake DingTalk.
Run: .venv/bin/python -m bench.bench_dingtalk [--idle-s 20] [--messages 20] [--latency-ms 100] [--pushes 100]

Each figure is printed next to a baseline measured in the same run, and all again in a table at the end.

- inbound to reply at the fake: from the fake pushing the owner's message over the stream (`user_says`) to
  the reply reaching the session webhook (stamped, in loop time, by the bench's subclass of the fake), minus
  the scripted model's latency L, next to the same host's desktop conversation (`chat.say` to the reply
  stored and announced, minus L). Sequential, interleaved one by one, after one warm-up each.
- outbox pushes: `--pushes` deliveries of purpose `reply` (outside the attention budget) for the owner's
  DingTalk conversation, then `outbox.flush()`, until all are marked sent: once through the session webhook
  (its errcode 0 is the confirmation), once with the webhook past its end, so each goes by batchSend and
  counts only once read back; baseline: the same number to a desktop conversation.
- an idle connected channel: CPU time and RSS growth over `--idle-s` seconds with one DingTalk stream open,
  next to the same seconds of the same host before the channel was added.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from aiohttp import web

from bench.bench_telegram import SETTLE_S, Row, _Warnings
from bench.bench_wechat import _desktop_reply
from bench.common import figure_table, idle_reading, idle_text, line, median_p95_ms
from bench.push_rate import all_sent, insert_pushes
from core.host import Host
from tests.fakes.fake_dingtalk import FakeDingTalk
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import make_host, running_api

OWNER = "manager4242"


class _TimedDingTalk(FakeDingTalk):
    """The fake with the bench's stopwatch on it: when each recorded send left the handler, in loop time.
    The fake itself is unchanged."""

    def __init__(self, *, late_webhooks: bool = False) -> None:
        # Webhooks that arrive already past their end make every send take the OpenAPI and its read-back.
        super().__init__(now=(lambda: time.time() - 3 * 3600) if late_webhooks else time.time)
        self.sent_at: list[float] = []  # one per `sent`, in order

    async def _webhook(self, request: web.Request) -> web.StreamResponse:
        return self._stamped(len(self.sent), await super()._webhook(request))

    async def _batch_send(self, request: web.Request) -> web.StreamResponse:
        return self._stamped(len(self.sent), await super()._batch_send(request))

    def _stamped(self, before: int, answer: web.StreamResponse) -> web.StreamResponse:
        self.sent_at += [asyncio.get_running_loop().time()] * (len(self.sent) - before)
        return answer


def _host(data: Path, model: ScriptedModelServer, dingtalk: FakeDingTalk) -> Host:
    return make_host(
        data,
        model.base_url,
        home=data.parent / "home",
        secrets=MemorySecretStore(),
        environ={"ERRAND_DINGTALK_ENDPOINT": dingtalk.endpoint},
        gather_s=0.0,  # on the real clock, no 2-minute wait
    )


async def _connect(client: httpx.AsyncClient, dingtalk: FakeDingTalk) -> str:
    """Connect the app (no quiet hours) with its stream up; the bot's id."""
    bot = str((await client.get("/api/bots")).json()["bots"][0]["id"])
    r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
    assert r.status_code == 200, r.text
    body = {"kind": "dingtalk", "appKey": dingtalk.app_key, "appSecret": dingtalk.app_secret}
    r = await client.post(f"/api/bots/{bot}/channels", json=body)
    assert r.status_code == 201, r.text
    await dingtalk.wait_connected(timeout=15)
    return bot


# ---- inbound -> reply at the fake, against the desktop ---------------------------------------------


async def _dingtalk_reply(dingtalk: _TimedDingTalk, text: str) -> float:
    count = len(dingtalk.sent) + 1
    began = asyncio.get_running_loop().time()
    await dingtalk.user_says(text, staff_id=OWNER)
    await dingtalk.wait_for_sent(count, timeout=10)
    return dingtalk.sent_at[count - 1] - began


async def reply_latency(model: ScriptedModelServer, tmp: Path, messages: int, latency_s: float) -> list[Row]:
    desktop: list[float] = []
    dingtalk_s: list[float] = []
    warm = (0.0, 0.0)
    async with _TimedDingTalk() as dingtalk:
        host = _host(tmp / "reply" / "data", model, dingtalk)
        async with running_api(host) as client:
            await _connect(client, dingtalk)
            model.responder = lambda _body: Reply.text("pong", latency_s=latency_s)
            conversation = (await host.chat.create_conversation()).id
            for n in range(messages + 1):  # the first of each is a warm-up
                d = await _desktop_reply(host, conversation, f"hello {n}")
                t = await _dingtalk_reply(dingtalk, f"hello {n}")
                if n:
                    desktop.append(d - latency_s)
                    dingtalk_s.append(t - latency_s)
                else:
                    warm = (d - latency_s, t - latency_s)
            vias = {s.via for s in dingtalk.sent}
        await host.stop()
    model.responder = None
    line("scripted model latency L (subtracted below)", f"{latency_s * 1000:.0f} ms per reply")
    line("desktop: say -> reply stored, minus L (baseline)", median_p95_ms(desktop))
    line(
        f"dingtalk: user_says -> reply at the fake ({', '.join(sorted(vias))}), minus L",
        median_p95_ms(dingtalk_s),
    )
    line(
        "  warm-up (first of each, not counted), minus L",
        f"desktop {warm[0] * 1000:7.1f} ms   dingtalk {warm[1] * 1000:7.1f} ms",
    )
    gap = statistics.median(dingtalk_s) - statistics.median(desktop)
    ratio = (statistics.median(dingtalk_s) + latency_s) / (statistics.median(desktop) + latency_s)
    line("  dingtalk - desktop (median); ratio with L included", f"{gap * 1000:+7.1f} ms   {ratio:.2f}x")
    return [
        (
            "inbound -> reply (webhook), minus L (desktop: say -> stored)",
            median_p95_ms(dingtalk_s),
            median_p95_ms(desktop),
        ),
        ("  first message (warm-up), minus L", f"{warm[1] * 1000:7.1f} ms", f"{warm[0] * 1000:7.1f} ms"),
    ]


# ---- outbox pushes ------------------------------------------------------------------------------------


async def _pushes_one_way(model: ScriptedModelServer, tmp: Path, n: int, *, late: bool) -> tuple[str, str]:
    """(DingTalk's figure, the desktop's) for `n` pushes; `late`: webhooks past their end (OpenAPI)."""
    model.responder = lambda _body: Reply.text("ok")
    async with _TimedDingTalk(late_webhooks=late) as dingtalk:
        host = _host(tmp / ("push-late" if late else "push") / "data", model, dingtalk)
        async with running_api(host) as client:
            bot = await _connect(client, dingtalk)
            await dingtalk.user_says("hi", staff_id=OWNER)  # its conversation, and a session webhook
            await dingtalk.wait_until(lambda: any(s.text == "ok" for s in dingtalk.sent), 15)
            conversations = (await client.get("/api/conversations")).json()["conversations"]
            [remote] = [c["id"] for c in conversations if c["channel"] == "dingtalk"]
            desktop = (await host.chat.create_conversation()).id
            await insert_pushes(host, bot, desktop, "d", n)
            desktop_s = await all_sent(host, "d", n)
            mark, reads = len(dingtalk.sent), len([c for c in dingtalk.calls if "readStatus" in c[1]])
            await insert_pushes(host, bot, remote, "t", n)
            dingtalk_s = await all_sent(host, "t", n)
            await host.outbox.settled()
            extra = len(dingtalk.sent) - mark - n
            reads = len([c for c in dingtalk.calls if "readStatus" in c[1]]) - reads
            vias = ", ".join(sorted({s.via for s in dingtalk.sent[mark:]}))
        await host.stop()
    model.responder = None
    d_text = f"{n / desktop_s:7.0f} per s   ({n} in {desktop_s:.2f} s)"
    how = f"by {vias}; {reads} read-backs; {extra} extra"
    t_text = f"{n / dingtalk_s:7.0f} per s   ({n} in {dingtalk_s:.2f} s {how})"
    return t_text, d_text


async def pushes(model: ScriptedModelServer, tmp: Path, n: int) -> list[Row]:
    rows: list[Row] = []
    for late, how in ((False, "session webhook"), (True, "OpenAPI, read back")):
        t_text, d_text = await _pushes_one_way(model, tmp, n, late=late)
        line(f"outbox: {n} reply pushes to a desktop conversation (baseline)", d_text)
        line(f"outbox: {n} reply pushes to DingTalk ({how}), flush -> all marked sent", t_text)
        rows.append((f"outbox: {n} pushes ({how}), flush -> all sent", t_text, d_text))
    return rows


# ---- an idle connected channel ----------------------------------------------------------------------


async def idle(model: ScriptedModelServer, tmp: Path, idle_s: float) -> list[Row]:
    async with _TimedDingTalk() as dingtalk:
        host = _host(tmp / "idle" / "data", model, dingtalk)
        async with running_api(host) as client:
            await asyncio.sleep(SETTLE_S)
            bare = await idle_reading(idle_s)
            await _connect(client, dingtalk)
            await asyncio.sleep(SETTLE_S)
            calls = len(dingtalk.calls)
            channel = await idle_reading(idle_s)
            calls = len(dingtalk.calls) - calls
        await host.stop()
    line(f"idle host, no channel, {idle_s:.0f} s (baseline)", idle_text(*bare))
    line(
        f"idle host, one DingTalk stream open, {idle_s:.0f} s",
        f"{idle_text(*channel)}   ({calls} HTTP calls)",
    )
    return [(f"idle {idle_s:.0f} s ({calls} HTTP calls)", idle_text(*channel), idle_text(*bare))]


async def main(idle_s: float, messages: int, latency_s: float, n_pushes: int) -> None:
    warnings = _Warnings()
    logging.getLogger().addHandler(warnings)
    began = time.perf_counter()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with ScriptedModelServer() as model:
            rows += await reply_latency(model, Path(tmp), messages, latency_s)
            rows += await pushes(model, Path(tmp), n_pushes)
            rows += await idle(model, Path(tmp), idle_s)
    figure_table(rows, "DingTalk")
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

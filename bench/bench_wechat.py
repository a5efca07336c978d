"""Figures for a WeChat channel (docs/channels.md), a real Host against the fake iLink server on 127.0.0.1.
Run: .venv/bin/python -m bench.bench_wechat [--idle-s 60] [--messages 20] [--latency-ms 100] [--rounds 5]

- restart -> polling again: a host whose data dir holds a logged-in channel, from `start()` to the fake's
  first `getupdates`, next to a restart of the same kind of data dir with no channel (`start()` alone, the
  baseline: what a restart costs without it).
- inbound to stored chat: from the fake queuing a message to the user message being in its conversation
  (the chat pipeline's handover; the model's reply is not part of it).
- inbound to reply at the fake: from the fake queuing a message (`user_says`) to the reply's `sendmessage`
  reaching the fake (`FakeILink.sent_at`), minus the scripted model's latency L, next to the same host's
  desktop conversation in the same run: from `chat.say` to the assistant message stored and announced,
  minus L. Both are sequential (each message after the previous reply), interleaved one by one, after one
  warm-up message each that is not counted (shown on its own line: a first reply pays for its conversation,
  its session and, on WeChat, the sending client).
- an idle connected channel: the process's CPU time (psutil, in 10 ms ticks), RSS growth and RSS over
  `--idle-s` seconds of long polls (the fake holds each poll 5 s, as the real server holds them up to
  35 s), next to the same seconds of a host with no channel, each window 2 s after its start (the host
  without a channel goes first).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import psutil
from sqlalchemy.orm import Session

from bench.common import line, percentile
from core.agent.model_config import ModelConfig
from core.changes import LiveReplyChanged, MessagesChanged
from core.channels.wechat.login import token_secret_name
from core.host import Host
from core.ids import new_id
from core.store import channels as channel_rows
from tests.fakes.fake_ilink import FakeILink
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.waiting import wait_until

HOLD_S = 5.0  # how long the fake holds an empty poll
SETTLE_S = 2.0  # after a start, before an idle window: what a start leaves running (a balance read) ends


def _host(data: Path, model: str, ilink: FakeILink, secrets: MemorySecretStore) -> Host:
    return Host(
        data,
        secrets=secrets,
        model_override=ModelConfig(base_url=model, model="fake-model", api_key="sk-bench"),
        home=data / "home",
        environ={"ERRAND_WECHAT_BASE_URL": ilink.base_url},
        gather_s=0.0,  # pushes on the real clock do not wait 2 minutes (replies are never gathered)
    )


async def _logged_in_channel(host: Host, ilink: FakeILink, secrets: MemorySecretStore) -> str:
    bot = (await host.bots.ensure_default()).id
    channel_id = new_id("ch")

    def store(s: Session) -> None:
        channel_rows.insert_channel(s, id=channel_id, bot_id=bot, kind="wechat", now=time.time())
        channel_rows.set_account(
            s,
            channel_id,
            account=ilink.account_id,
            owner=ilink.owner_id,
            base_url=ilink.base_url,
            now=time.time(),
        )

    await host.db.write(store)
    await secrets.set(token_secret_name(channel_id), ilink.token)
    return channel_id


def _setter(event: asyncio.Event) -> Callable[[object], None]:
    return lambda _change: event.set()


async def _in_chat(host: Host, text: str) -> bool:
    for conversation in await host.chat.list_conversations():
        if conversation.channel != "wechat":
            continue
        if any(m.text == text for m in await host.chat.list_messages(conversation.id)):
            return True
    return False


def _ms(values: Sequence[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"median {statistics.median(ms):7.1f} ms   p90 {percentile(ms, 90):7.1f} ms   (n={len(ms)})"


# ---- restart -> polling again, inbound -> stored chat ------------------------------------------------


async def restarts(model: ScriptedModelServer, rounds: int) -> None:
    restarts_alone: list[float] = []
    restarts_polling: list[float] = []
    handovers: list[float] = []
    for _ in range(rounds):
        async with FakeILink(hold_s=HOLD_S) as ilink:
            with tempfile.TemporaryDirectory() as tmp:
                secrets = MemorySecretStore()
                data = Path(tmp) / "data"
                first = _host(data, model.base_url, ilink, secrets)
                await first.start()
                await first.stop()

                bare = _host(data, model.base_url, ilink, secrets)
                began = time.perf_counter()
                await bare.start()
                restarts_alone.append(time.perf_counter() - began)
                await _logged_in_channel(bare, ilink, secrets)
                await bare.stop()

                again = _host(data, model.base_url, ilink, secrets)
                began = time.perf_counter()
                await again.start()
                await ilink.wait_for_polls(1, timeout=10)
                restarts_polling.append(time.perf_counter() - began)

                changed = asyncio.Event()
                unsubscribe = again.bus.subscribe(_setter(changed))
                text = f"ping {len(handovers)}"
                said = time.perf_counter()
                ilink.user_says(text)
                while not await _in_chat(again, text):
                    changed.clear()
                    await asyncio.wait_for(changed.wait(), 10)
                handovers.append(time.perf_counter() - said)
                unsubscribe()
                await wait_until(again.bus, _sent(ilink, 1), timeout=10, what="the reply sent")
                await again.stop()
    line("restart, no channel: start() returns (baseline)", _ms(restarts_alone))
    line("restart -> polling again (start() -> first getupdates)", _ms(restarts_polling))
    line("inbound -> in its conversation (first after a start)", _ms(handovers))


def _sent(ilink: FakeILink, count: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return len(ilink.sent) >= count

    return check


# ---- inbound -> reply at the fake, against the desktop ---------------------------------------------


class _ReplyStored:
    """Notes (in loop time) the first announcement of a conversation's stored reply: a `MessagesChanged`
    once the turn was live and is no longer. Bus listeners run synchronously at the publish."""

    def __init__(self, host: Host, conversation_id: str) -> None:
        self._host = host
        self._conversation_id = conversation_id
        self._live_seen = False
        self.at: float | None = None
        self.done = asyncio.Event()

    def __call__(self, event: object) -> None:
        if self.at is not None or getattr(event, "conversation_id", None) != self._conversation_id:
            return
        live = self._host.chat.live_reply(self._conversation_id)
        if isinstance(event, LiveReplyChanged) and live is not None:
            self._live_seen = True
        elif isinstance(event, MessagesChanged) and self._live_seen and live is None:
            self.at = asyncio.get_running_loop().time()
            self.done.set()


async def _desktop_reply(host: Host, conversation_id: str, text: str) -> float:
    stored = _ReplyStored(host, conversation_id)
    unsubscribe = host.bus.subscribe(stored)
    try:
        began = asyncio.get_running_loop().time()
        await host.chat.say(conversation_id, text)
        await asyncio.wait_for(stored.done.wait(), 10)
        assert stored.at is not None
        return stored.at - began
    finally:
        unsubscribe()


async def _wechat_reply(host: Host, ilink: FakeILink, text: str) -> float:
    count = len(ilink.sent) + 1
    began = asyncio.get_running_loop().time()
    ilink.user_says(text)
    await wait_until(host.bus, _sent(ilink, count), timeout=10, what="the reply at the fake")
    return ilink.sent_at[count - 1] - began


async def reply_latency(model: ScriptedModelServer, messages: int, latency_s: float) -> None:
    model.responder = lambda _body: Reply.text("pong", latency_s=latency_s)
    desktop: list[float] = []
    wechat: list[float] = []
    warm = (0.0, 0.0)
    requests_before = len(model.requests)
    async with FakeILink(hold_s=HOLD_S) as ilink:
        with tempfile.TemporaryDirectory() as tmp:
            secrets = MemorySecretStore()
            data = Path(tmp) / "data"
            first = _host(data, model.base_url, ilink, secrets)
            await first.start()
            await _logged_in_channel(first, ilink, secrets)
            await first.stop()
            host = _host(data, model.base_url, ilink, secrets)
            await host.start()
            try:
                await ilink.wait_for_polls(1, timeout=10)
                conversation = (await host.chat.create_conversation()).id
                for n in range(messages + 1):  # the first of each is a warm-up
                    d = await _desktop_reply(host, conversation, f"hello {n}")
                    w = await _wechat_reply(host, ilink, f"hello {n}")
                    if n:
                        desktop.append(d - latency_s)
                        wechat.append(w - latency_s)
                    else:
                        warm = (d - latency_s, w - latency_s)
            finally:
                await host.stop()
    served = model.requests[requests_before:]
    held = [r.responded_at - r.received_at for r in served if r.responded_at is not None]
    model.responder = None
    line(
        "scripted model latency L (subtracted below)",
        f"{latency_s * 1000:.0f} ms per reply   (held at the server: median "
        f"{statistics.median(held) * 1000:.1f} ms; {len(served)} requests for {2 * (messages + 1)} turns)",
    )
    line("desktop: say -> reply stored, minus L (baseline)", _ms(desktop))
    line("wechat: inbound -> sendmessage at the fake, minus L", _ms(wechat))
    line(
        "  warm-up (first of each, not counted), minus L",
        f"desktop {warm[0] * 1000:7.1f} ms   wechat {warm[1] * 1000:7.1f} ms",
    )
    ratio = (statistics.median(wechat) + latency_s) / (statistics.median(desktop) + latency_s)
    line(
        "  wechat - desktop (median); ratio with L included",
        f"{(statistics.median(wechat) - statistics.median(desktop)) * 1000:+7.1f} ms   {ratio:.2f}x",
    )


# ---- an idle connected channel ----------------------------------------------------------------------


async def _idle(seconds: float) -> tuple[float, float, float]:
    process = psutil.Process()
    before_cpu = sum(process.cpu_times()[:2])
    before_rss = process.memory_info().rss
    await asyncio.sleep(seconds)
    rss = process.memory_info().rss
    return sum(process.cpu_times()[:2]) - before_cpu, (rss - before_rss) / 2**20, rss / 2**20


async def idle(model: ScriptedModelServer, idle_s: float) -> None:
    async with FakeILink(hold_s=HOLD_S) as ilink:
        with tempfile.TemporaryDirectory() as tmp:
            secrets = MemorySecretStore()
            data = Path(tmp) / "data"
            bare = _host(data, model.base_url, ilink, secrets)
            await bare.start()
            await asyncio.sleep(SETTLE_S)
            cpu_bare, grew_bare, rss_bare = await _idle(idle_s)
            await _logged_in_channel(bare, ilink, secrets)
            await bare.stop()
            connected = _host(data, model.base_url, ilink, secrets)
            await connected.start()
            await ilink.wait_for_polls(1, timeout=10)
            await asyncio.sleep(SETTLE_S)
            polls = ilink.polls
            cpu_channel, grew_channel, rss_channel = await _idle(idle_s)
            polls = ilink.polls - polls
            await connected.stop()
    line(
        f"idle host, no channel, {idle_s:.0f} s (baseline)",
        f"CPU {cpu_bare * 1000:6.0f} ms   RSS {grew_bare:+6.1f} MB -> {rss_bare:6.1f} MB",
    )
    line(
        f"idle host, one connected channel, {idle_s:.0f} s",
        f"CPU {cpu_channel * 1000:6.0f} ms   RSS {grew_channel:+6.1f} MB -> {rss_channel:6.1f} MB"
        f"   ({polls} long polls)",
    )


async def main(idle_s: float, rounds: int, messages: int, latency_s: float) -> None:
    async with ScriptedModelServer() as model:
        await restarts(model, rounds)
        await reply_latency(model, messages, latency_s)
        await idle(model, idle_s)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-s", type=float, default=60.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    args = parser.parse_args()
    asyncio.run(main(args.idle_s, args.rounds, args.messages, args.latency_ms / 1000))

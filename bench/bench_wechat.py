"""Figures for a WeChat channel (docs/channels.md), a real Host against the fake iLink server on 127.0.0.1.
Run: .venv/bin/python -m bench.bench_wechat [--idle-s 20]

- restart to polling: a host whose data dir holds a logged-in channel, from `start()` to the fake's first
  `getupdates`, next to the same host's `start()` alone (the baseline: what a start costs without it).
- an idle connected channel: the process's CPU time and RSS growth over `--idle-s` seconds of long polls
  (the fake holds each poll 5 s, as the real server holds them up to 35 s), next to the same seconds of a
  host with no channel.
- inbound to stored chat: from the fake queuing a message to the user message being in its conversation
  (the chat pipeline's handover; the model's reply is not part of it).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil
from sqlalchemy.orm import Session

from bench.common import line
from core.agent.model_config import ModelConfig
from core.channels.wechat.login import token_secret_name
from core.host import Host
from core.ids import new_id
from core.store import channels as channel_rows
from tests.fakes.fake_ilink import FakeILink
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore


def _host(data: Path, model: str, ilink: FakeILink, secrets: MemorySecretStore) -> Host:
    return Host(
        data,
        secrets=secrets,
        model_override=ModelConfig(base_url=model, model="fake-model", api_key="sk-bench"),
        home=data / "home",
        environ={"ERRAND_WECHAT_BASE_URL": ilink.base_url},
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


async def _idle(seconds: float) -> tuple[float, float]:
    process = psutil.Process()
    before_cpu = sum(process.cpu_times()[:2])
    before_rss = process.memory_info().rss
    await asyncio.sleep(seconds)
    return sum(process.cpu_times()[:2]) - before_cpu, (process.memory_info().rss - before_rss) / 2**20


async def main(idle_s: float, rounds: int) -> None:
    model = ScriptedModelServer()
    await model.__aenter__()
    try:
        starts_alone: list[float] = []
        starts_polling: list[float] = []
        handovers: list[float] = []
        for _ in range(rounds):
            async with FakeILink(hold_s=5.0) as ilink:
                with tempfile.TemporaryDirectory() as tmp:
                    secrets = MemorySecretStore()
                    data = Path(tmp) / "data"
                    first = _host(data, model.base_url, ilink, secrets)
                    began = time.perf_counter()
                    await first.start()
                    starts_alone.append(time.perf_counter() - began)
                    await _logged_in_channel(first, ilink, secrets)
                    await first.stop()

                    again = _host(data, model.base_url, ilink, secrets)
                    began = time.perf_counter()
                    await again.start()
                    await ilink.wait_for_polls(1, timeout=10)
                    starts_polling.append(time.perf_counter() - began)

                    changed = asyncio.Event()
                    again.bus.subscribe(_setter(changed))
                    text = f"ping {len(handovers)}"
                    said = time.perf_counter()
                    ilink.user_says(text)
                    while not await _in_chat(again, text):
                        changed.clear()
                        await asyncio.wait_for(changed.wait(), 10)
                    handovers.append(time.perf_counter() - said)
                    await again.stop()
        line("host start() alone (baseline)", f"median {statistics.median(starts_alone) * 1000:7.1f} ms")
        line(
            "host start() with a logged-in channel -> first poll",
            f"median {statistics.median(starts_polling) * 1000:7.1f} ms   (n={rounds})",
        )
        line(
            "inbound message -> in its conversation", f"median {statistics.median(handovers) * 1000:7.1f} ms"
        )

        async with FakeILink(hold_s=5.0) as ilink:
            with tempfile.TemporaryDirectory() as tmp:
                secrets = MemorySecretStore()
                data = Path(tmp) / "data"
                bare = _host(data, model.base_url, ilink, secrets)
                await bare.start()
                cpu_bare, rss_bare = await _idle(idle_s)
                await _logged_in_channel(bare, ilink, secrets)
                await bare.stop()
                connected = _host(data, model.base_url, ilink, secrets)
                await connected.start()
                await ilink.wait_for_polls(1, timeout=10)
                polls = ilink.polls
                cpu_channel, rss_channel = await _idle(idle_s)
                polls = ilink.polls - polls
                await connected.stop()
        line(
            f"idle host, no channel, {idle_s:.0f} s (baseline)",
            f"CPU {cpu_bare * 1000:6.0f} ms   RSS {rss_bare:+.1f} MB",
        )
        line(
            f"idle host, one connected channel, {idle_s:.0f} s",
            f"CPU {cpu_channel * 1000:6.0f} ms   RSS {rss_channel:+.1f} MB   ({polls} long polls)",
        )
    finally:
        await model.__aexit__(None, None, None)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-s", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.idle_s, args.rounds))

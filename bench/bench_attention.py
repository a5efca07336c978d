"""Figures for questions and the outbox (issue 4). Run: .venv/bin/python -m bench.bench_attention

- from a person's answer to the task's next model request (a question without a default: the answer
  starts a run on the reserved person slot);
- outbox throughput: 1,000 pending deliveries across 50 conversations, decided and recorded by one flush.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from sqlalchemy.orm import Session

from bench.common import line, summary_ms
from core.agent.model_config import ModelConfig
from core.changes import TaskChanged
from core.host import Host
from core.ids import new_id
from core.store import conversations as conv_rows
from core.store import deliveries as delivery_rows
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.task_script import SessionScript, report


def _host(data_dir: Path, server: ScriptedModelServer) -> Host:
    return Host(
        data_dir, secrets=MemorySecretStore(), model_override=ModelConfig(server.base_url, "fake-model", "k")
    )


async def _until(host: Host, check: Callable[[], Awaitable[bool]]) -> None:
    queue, unsubscribe = host.bus.queue(lambda e: isinstance(e, TaskChanged))
    try:
        while not await check():
            await queue.get()
    finally:
        unsubscribe()


async def answer_to_next_request(tmp: Path, samples: int = 10) -> list[float]:
    script = SessionScript()
    out = []
    async with ScriptedModelServer(responder=script) as server:
        host = _host(tmp / "answer", server)
        await host.start()
        for i in range(samples):
            name = f"Ask {i}"
            script.add(name, [report("needs_you", "need it", question="Which one?", options=["A", "B"])])
            task = await host.tasks.create(bot_id=None, words=name)

            async def waiting(task_id: str = task.id) -> bool:
                return (await host.tasks.view(task_id)).stage == "needs-you/answer"

            await _until(host, waiting)
            script.add(name, [report("done", "ok", message="ok")])
            [question] = [q for q in await host.tasks.open_questions() if q.task_id == task.id]
            before = len(server.requests)
            started = time.monotonic()
            await host.tasks.answer(question.id, "B")
            await server.wait_for_requests(before + 1, timeout=10)
            out.append(server.requests[before].received_at - started)
        await host.stop()
    return out


async def outbox_throughput(tmp: Path, items: int = 1000, conversations: int = 50) -> float:
    async with ScriptedModelServer() as server:
        host = _host(tmp / "outbox", server)
        await host.start()
        bot = await host.bots.ensure_default()
        now = host.clock.time()
        cids = [new_id("c") for _ in range(conversations)]

        def fill(s: Session) -> None:
            for cid in cids:
                conv_rows.insert_conversation(s, id=cid, bot_id=bot.id, title="", now=now)
            for i in range(items):
                delivery_rows.insert_delivery(
                    s,
                    id=f"bench-{i}",
                    bot_id=bot.id,
                    conversation_id=cids[i % conversations],
                    purpose="result",
                    text=f"result {i}",
                    now=now - 600 + i * 0.001,
                )

        await host.db.write(fill)
        started = time.perf_counter()
        await host.outbox.flush()
        elapsed = time.perf_counter() - started
        await host.stop()
        return items / elapsed


async def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print("Errand questions and outbox figures (machine:", os.cpu_count(), "cores)")
        line("answer -> the task's next model request", summary_ms(await answer_to_next_request(tmp)))
        rates = [await outbox_throughput(tmp / str(i)) for i in range(3)]
        line(
            "outbox: 1,000 pending deliveries decided and recorded", f"{statistics.median(rates):,.0f} per s"
        )


if __name__ == "__main__":
    asyncio.run(main())

"""Figures for background tasks (issue 3). Run: .venv/bin/python -m bench.bench_tasks

- chat reply latency while two tasks stream slow turns, as a ratio to idle (for comparison, a spike of another
  product: a 63 ms chat reply during two 4-second task turns);
- `errand serve` killed with SIGKILL mid-task: process start -> the recover run's first model request;
- memory per finished task session (for comparison, another product leaked 0.25-0.45 MB per session it could
  not close).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from bench.common import line, summary_ms
from core.agent.model_config import ModelConfig, RetryPolicy
from core.changes import MessagesChanged, TaskChanged
from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.task_script import SessionScript, bash, report

ROOT = Path(__file__).resolve().parents[1]


def _host(data_dir: Path, server: ScriptedModelServer) -> Host:
    return Host(
        data_dir,
        secrets=MemorySecretStore(),
        model_override=ModelConfig(server.base_url, "fake-model", "sk-bench"),
        chat_retry=RetryPolicy(delays_s=(0.05,)),
    )


async def _reply(host: Host, cid: str, text: str) -> float:
    queue, unsubscribe = host.bus.queue(lambda e: isinstance(e, MessagesChanged) and e.conversation_id == cid)
    started = time.perf_counter()
    try:
        await host.chat.say(cid, text)
        while True:
            await queue.get()
            messages = await host.chat.list_messages(cid)
            if messages[-1].role == "assistant":
                return time.perf_counter() - started
    finally:
        unsubscribe()


async def chat_while_tasks_work(tmp: Path, samples: int = 15) -> tuple[list[float], list[float]]:
    script = SessionScript()
    script.fallback = Reply.text("quick answer", latency_s=0.1)
    async with ScriptedModelServer(responder=script) as server:
        host = _host(tmp / "latency", server)
        await host.start()
        cid = (await host.chat.create_conversation()).id
        idle = [await _reply(host, cid, f"idle {i}") for i in range(samples)]
        for name in ("Slow A", "Slow B"):
            script.add(name, [Reply.text("working " * 400, chunks=400, chunk_delay_s=0.02)])
            await host.tasks.create(bot_id=None, words=name, conversation_id=cid)
        await server.wait_until(
            lambda: bool(script.requests["Slow A"] and script.requests["Slow B"]), timeout=10
        )
        busy = [await _reply(host, cid, f"busy {i}") for i in range(samples)]
        await host.stop()
        return idle, busy


async def restart_to_recover(tmp: Path, runs: int = 3) -> list[float]:
    out = []
    for i in range(runs):
        script = SessionScript()
        script.add("Long job", [bash("echo step"), Reply.hang()])
        async with ScriptedModelServer(responder=script) as server:
            data_dir = tmp / f"restart-{i}"
            env = dict(
                os.environ, ERRAND_MODEL_BASE_URL=server.base_url, ERRAND_MODEL="m", ERRAND_API_KEY="k"
            )
            cmd = [sys.executable, "-m", "app.cli", "serve", "--data-dir", str(data_dir)]
            proc = await asyncio.create_subprocess_exec(
                *cmd, cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE
            )
            assert proc.stdout is not None
            await proc.stdout.readline()
            info = json.loads((data_dir / "api.json").read_text())
            headers = {"Authorization": f"Bearer {info['token']}"}
            async with httpx.AsyncClient(base_url=info["url"], headers=headers) as client:
                await client.post("/api/tasks", json={"text": "Long job"})
            await server.wait_for_requests(2, timeout=15)  # only the task talks to this model
            proc.kill()
            await proc.wait()
            script.add("Long job", [Reply.hang()])
            spawned = time.monotonic()
            proc = await asyncio.create_subprocess_exec(
                *cmd, cwd=ROOT, env=env, stdout=asyncio.subprocess.DEVNULL
            )
            await server.wait_for_requests(3, timeout=30)
            out.append(server.requests[-1].received_at - spawned)
            proc.send_signal(signal.SIGTERM)
            await proc.wait()
    return out


async def memory_per_finished_session(tmp: Path, tasks: int = 60) -> tuple[float, float]:
    script = SessionScript()
    async with ScriptedModelServer(responder=script) as server:
        host = _host(tmp / "memory", server)
        await host.start()
        for i in range(tasks):
            script.add(f"Job {i}", [bash("echo hi"), report("done", "ok", message="done"), Reply.text("ok")])

        async def run_batch(first: int, count: int) -> None:
            ids = [(await host.tasks.create(bot_id=None, words=f"Job {first + k}")).id for k in range(count)]
            queue, unsubscribe = host.bus.queue(lambda e: isinstance(e, TaskChanged))
            try:
                while True:
                    views = [await host.tasks.view(t) for t in ids]
                    if all(v.stage == "ready" for v in views):
                        return
                    await queue.get()
            finally:
                unsubscribe()

        await run_batch(0, 10)  # warm-up: imports, caches, connection pool
        gc.collect()
        before = psutil.Process().memory_info().rss
        for batch in range(1, tasks // 10):
            await run_batch(batch * 10, 10)
        gc.collect()
        after = psutil.Process().memory_info().rss
        open_sessions = len(host.runtime.sessions())
        await host.stop()
        finished = tasks - 10
        return (after - before) / finished / 2**20, float(open_sessions)


async def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print("Errand task figures (machine:", os.cpu_count(), "cores)")
        idle, busy = await chat_while_tasks_work(tmp)
        line("chat reply (100 ms model), idle", summary_ms(idle))
        line("chat reply while two tasks stream slow turns", summary_ms(busy))
        line("  ratio busy/idle (medians)", f"{statistics.median(busy) / statistics.median(idle):.2f}")
        line(
            "serve SIGKILL mid-task: start -> recover run's 1st request",
            summary_ms(await restart_to_recover(tmp)),
        )
        per_session, still_open = await memory_per_finished_session(tmp)
        line(
            "RSS growth per finished task (50 tasks)",
            f"{per_session:.3f} MB   (sessions left open: {still_open:.0f})",
        )


if __name__ == "__main__":
    asyncio.run(main())

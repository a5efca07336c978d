"""Figures for the foundation (issue 2). Run: .venv/bin/python -m bench.bench_foundation

- host overhead per model step: fake server's last byte of a reply -> the next request, over 3-tool-call
  chat turns through the real Host (bash `true` as the tool), with and without the bubblewrap sandbox;
- chat reply latency in conversation A while B runs a slow streaming turn, as a ratio to A alone;
- cancel latency of a turn waiting on the model;
- cold start of the desktop app to window shown and to host started (offscreen), and its RSS;
- `errand serve`: process start to the first model request for an API message, and idle RSS.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import psutil

from bench.common import line, summary_ms
from core.agent import events as ev
from core.agent.model_config import ModelConfig, RetryPolicy
from core.agent.runtime import AgentRuntime
from core.agent.sandbox import Permission, Preset
from core.agent.session_spec import SessionSpec
from core.changes import MessagesChanged
from core.clock import SystemClock
from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.fakes.secrets import MemorySecretStore

ROOT = Path(__file__).resolve().parents[1]


def _host(data_dir: Path, server: ScriptedModelServer) -> Host:
    return Host(
        data_dir,
        secrets=MemorySecretStore(),
        model_override=ModelConfig(server.base_url, "fake-model", "sk-bench"),
        chat_retry=RetryPolicy(delays_s=(0.05,)),
    )


async def _reply_stored(host: Host, cid: str) -> None:
    queue, unsubscribe = host.bus.queue(lambda e: isinstance(e, MessagesChanged) and e.conversation_id == cid)
    try:
        while True:
            await queue.get()
            messages = await host.chat.list_messages(cid)
            if messages and messages[-1].role in ("assistant", "error"):
                return
    finally:
        unsubscribe()


async def step_gap(tmp: Path, preset: Preset, turns: int = 20) -> list[float]:
    """Gaps between the end of a model reply and the next request inside a 3-tool-call turn."""
    async with ScriptedModelServer() as server:
        rt = AgentRuntime(sessions_dir=tmp / f"sessions-{preset}", clock=SystemClock())
        workspace = tmp / f"ws-{preset}"
        workspace.mkdir()
        spec = SessionSpec(
            "chat-bench",
            "chat",
            "b_bench",
            workspace,
            ModelConfig(server.base_url, "fake-model", "k"),
            Permission(preset=preset, workspace=workspace),
        )
        session = await rt.open_session(spec)
        gaps: list[float] = []
        for _ in range(turns):
            server.reset()
            server.push_many(
                [Reply.tool_calls([ToolCallSpec("bash", {"command": "true"})]) for _ in range(3)]
                + [Reply.text("done")]
            )
            session.prompt("go")
            await server.wait_for_requests(4, timeout=30)
            await session.wait_idle(30)
            reqs = server.requests
            gaps += [reqs[i + 1].received_at - (reqs[i].responded_at or 0) for i in range(3)]
        await rt.close()
        return gaps


async def chat_latency(tmp: Path, samples: int = 15) -> tuple[list[float], list[float]]:
    def respond(body: dict[str, Any]) -> Reply:
        last = str(body["messages"][-1].get("content", ""))
        if "slow" in last:
            return Reply.text("slow " * 400, chunks=400, chunk_delay_s=0.05)
        return Reply.text("quick answer", latency_s=0.1)

    async with ScriptedModelServer(responder=respond) as server:
        host = _host(tmp / "latency", server)
        await host.start()
        a = (await host.chat.create_conversation()).id
        b = (await host.chat.create_conversation()).id

        async def one() -> float:
            started = time.perf_counter()
            waiter = asyncio.ensure_future(_reply_stored(host, a))
            await host.chat.say(a, "quick?")
            await waiter
            return time.perf_counter() - started

        alone = [await one() for _ in range(samples)]
        await host.chat.say(b, "slow please")
        await server.wait_for_requests(samples + 1)
        busy = [await one() for _ in range(samples)]
        await host.chat.cancel_reply(b)
        await host.stop()
        return alone, busy


async def cancel_latency(tmp: Path, samples: int = 20) -> list[float]:
    async with ScriptedModelServer() as server:
        rt = AgentRuntime(sessions_dir=tmp / "cancel", clock=SystemClock())
        workspace = tmp / "ws-cancel"
        workspace.mkdir()
        spec = SessionSpec(
            "chat-cancel",
            "chat",
            "b",
            workspace,
            ModelConfig(server.base_url, "m", "k"),
            Permission(Preset.WORKSPACE_WRITE, workspace),
        )
        session = await rt.open_session(spec)
        ended = asyncio.Event()
        rt.subscribe(lambda e: ended.set() if isinstance(e, ev.TurnEnded) else None)
        out = []
        for i in range(samples):
            server.push(Reply.hang())
            ended.clear()
            session.prompt(f"hang {i}")
            await server.wait_for_requests(i + 1)
            started = time.perf_counter()
            await session.cancel()
            await ended.wait()
            out.append(time.perf_counter() - started)
        await rt.close()
        return out


def gui_cold_start(tmp: Path, runs: int = 5) -> list[tuple[float, float, float]]:
    import subprocess

    results = []
    for i in range(runs):
        env = dict(os.environ, ERRAND_STARTUP_PROBE="1", QT_QPA_PLATFORM="offscreen")
        out = subprocess.run(
            [sys.executable, "-m", "app.cli", "--data-dir", str(tmp / f"gui-{i}")],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
        fields = dict(line.split() for line in out.splitlines() if line.strip())
        results.append(
            (float(fields["window-shown"]), float(fields["host-started"]), float(fields["rss-mb"]))
        )
    return results


async def serve_start(tmp: Path, runs: int = 3) -> list[tuple[float, float]]:
    """Process start -> first model request for an API message; and the idle RSS after that reply."""
    results = []
    async with ScriptedModelServer() as server:
        for i in range(runs):
            data_dir = tmp / f"serve-{i}"
            env = dict(
                os.environ,
                ERRAND_MODEL_BASE_URL=server.base_url,
                ERRAND_MODEL="fake-model",
                ERRAND_API_KEY="k",
            )
            server.reset()
            spawned = time.monotonic()
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "app.cli",
                "serve",
                "--data-dir",
                str(data_dir),
                cwd=ROOT,
                env=env,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )
            assert proc.stdout is not None
            await proc.stdout.readline()
            info = json.loads((data_dir / "api.json").read_text())
            headers = {"Authorization": f"Bearer {info['token']}"}
            async with httpx.AsyncClient(base_url=info["url"], headers=headers) as client:
                cid = (await client.post("/api/conversations", json={})).json()["id"]
                r = await client.post(f"/api/conversations/{cid}/messages", json={"text": "hi"})
                first = (await server.wait_for_requests(1, timeout=30))[0].received_at - spawned
                await client.get(
                    f"/api/conversations/{cid}/messages",
                    params={"after": r.json()["message"]["id"], "wait": 10},
                )
            rss = psutil.Process(proc.pid).memory_info().rss / 2**20
            proc.send_signal(signal.SIGTERM)
            await proc.wait()
            results.append((first, rss))
    return results


async def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print("Errand foundation figures (machine:", os.cpu_count(), "cores)")
        for preset in (Preset.WORKSPACE_WRITE, Preset.FULL):
            sandbox = "bubblewrap" if preset is Preset.WORKSPACE_WRITE else "no sandbox"
            line(
                f"step gap, 3-tool-call turn, bash `true` ({sandbox})",
                summary_ms(await step_gap(tmp, preset)),
            )
        alone, busy = await chat_latency(tmp)
        line("chat reply (100 ms model), A alone", summary_ms(alone))
        line("chat reply (100 ms model), A while B streams a slow turn", summary_ms(busy))
        line("  ratio busy/alone (medians)", f"{statistics.median(busy) / statistics.median(alone):.2f}")
        line("cancel a turn waiting on the model -> turn ended", summary_ms(await cancel_latency(tmp)))
        gui = gui_cold_start(tmp)
        line("GUI cold start -> window shown (offscreen)", summary_ms([g[0] for g in gui]))
        line("GUI cold start -> host started", summary_ms([g[1] for g in gui]))
        line("GUI RSS after host started", f"{statistics.median([g[2] for g in gui]):.0f} MB")
        serve = await serve_start(tmp)
        line("serve: process start -> first model request", summary_ms([s[0] for s in serve]))
        line("serve: RSS after one reply, idle", f"{statistics.median([s[1] for s in serve]):.0f} MB")


if __name__ == "__main__":
    asyncio.run(main())

"""MCP figures (issue 19), each beside its baseline in the same run.
Run: .venv/bin/python -m bench.bench_mcp [--calls N] [--starts N]

- call overhead: one tool call of the fake stdio server (tests/fakes/mcp_server.py, `echo`) through the
  runtime's tool (schema check, permission, the connection) against the same call made with the SDK's bare
  `ClientSession` on a second copy of the server, interleaved, in this process;
- start-up: `errand serve` process start -> its API answering, and -> the first model request for an API
  message, on a data dir whose bot has no servers and on one whose bot has 5 (they start only when a
  session opens);
- the first turn's wait: on the data dir with servers, how much of that comes from waiting for them (the
  turn's first request waits up to 3 s for servers that are starting, so it has their tools).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

from bench.common import figure_table
from core.bus import EventBus
from core.clock import SystemClock
from core.mcp.service import McpService
from core.store.bots import insert_bot
from core.store.database import Database
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.serve_process import api_client, read_until_listening, serve_env, serve_process
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[1]
BOT = "b_000000000001"


def fake_server(**settings: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-m", "tests.fakes.mcp_server"], "cwd": str(ROOT)} | settings


async def call_overhead(tmp: Path, calls: int) -> tuple[list[float], list[float]]:
    """(through Errand, bare SDK) seconds per call."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    db = Database.for_data_dir(tmp / "calls")
    await db.open()
    await db.write(lambda s: insert_bot(s, id=BOT, name="Bench", workspace=str(tmp), now=0.0))
    bus = EventBus()

    async def require_bot(bot_id: str) -> None:
        return None

    service = McpService(
        db,
        MemorySecretStore(),
        SystemClock(),
        bus,
        logs_dir=tmp / "logs",
        workspace_of=lambda _: tmp,
        require_bot=require_bot,
    )
    ours: list[float] = []
    bare: list[float] = []
    try:
        await service.replace(BOT, {"mcpServers": {"fake": fake_server(permission="allow")}})
        toolset = await service.for_session(_spec(tmp))

        async def ready() -> bool:
            return "fake__echo" in {t.name for t in toolset.tools()}

        await wait_until(bus, ready, 30, what="the fake server's tools")
        echo = next(t for t in toolset.tools() if t.name == "fake__echo")
        args = echo.args_model.model_validate({"text": "hello"})
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "tests.fakes.mcp_server"], cwd=str(ROOT)
        )
        with (tmp / "bare.log").open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                for _ in range(20):  # warm both paths
                    await echo.handler(None, args)  # type: ignore[arg-type]
                    await session.call_tool(
                        "echo", {"text": "hello"}, read_timeout_seconds=timedelta(seconds=10)
                    )
                for _ in range(calls):
                    started = time.perf_counter()
                    await echo.handler(None, args)  # type: ignore[arg-type]
                    ours.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    await session.call_tool(
                        "echo", {"text": "hello"}, read_timeout_seconds=timedelta(seconds=10)
                    )
                    bare.append(time.perf_counter() - started)
    finally:
        await service.close()
        await db.close()
    return ours, bare


def _spec(tmp: Path) -> Any:
    from core.agent.session_spec import SessionSpec

    return SessionSpec(
        session_id="chat-bench",
        kind="chat",
        bot_id=BOT,
        cwd=tmp,
        model=cast(Any, None),  # the toolset reads only the bot and the mode
        permission=cast(Any, None),
    )


async def first_request(
    model: ScriptedModelServer, data_dir: Path, home: Path, servers: int
) -> tuple[float, float, float]:
    """(process start -> API listening, -> first model request, message posted -> first model request) in
    seconds. The data dir
    is set up by an earlier run of serve when `servers` > 0, so this start reads them from the store."""
    env = serve_env(model, home)
    if servers:
        async with serve_process(data_dir, env, log=data_dir.parent / f"{data_dir.name}-setup.log") as proc:
            await read_until_listening(proc)
            async with api_client(data_dir) as client:
                bot = next(b["id"] for b in (await client.get("/api/bots")).json()["bots"] if b["isDefault"])
                config = {f"s{i}": fake_server(permission="allow") for i in range(servers)}
                r = await client.put(f"/api/bots/{bot}/mcp", json={"mcpServers": config})
                assert r.status_code == 200, r.text
            proc.terminate()
            await proc.wait()
    model.reset()
    model.push(Reply.text("hi"))
    spawned = time.monotonic()
    async with serve_process(data_dir, env, log=data_dir.parent / f"{data_dir.name}.log") as proc:
        await read_until_listening(proc)
        listening = time.monotonic()
        async with api_client(data_dir) as client:
            cid = (await client.post("/api/conversations", json={})).json()["id"]
            posted = time.monotonic()
            await client.post(f"/api/conversations/{cid}/messages", json={"text": "hi"})
            first = (await model.wait_for_requests(1, timeout=30))[0].received_at
        proc.terminate()
        await proc.wait()
    return listening - spawned, first - spawned, first - posted


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f} ms"


async def main(calls: int, starts: int) -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        ours, bare = await call_overhead(tmp, calls)
        home = tmp / "home"
        home.mkdir()
        without: list[tuple[float, float, float]] = []
        with_servers: list[tuple[float, float, float]] = []
        async with ScriptedModelServer() as model:
            for i in range(starts):
                without.append(await first_request(model, tmp / f"none-{i}", home, 0))
                with_servers.append(await first_request(model, tmp / f"five-{i}", home, 5))
    overhead = [a - b for a, b in zip(ours, bare, strict=True)]
    rows = [
        (
            "MCP stdio call, through Errand's tool",
            ms(ours),
            f"bare SDK call {ms(bare)} (overhead {ms(overhead)})",
        ),
        (
            "serve start -> API answering, 5 servers configured",
            ms([w[0] for w in with_servers]),
            f"no servers {ms([w[0] for w in without])}",
        ),
        (
            "serve start -> 1st model request, 5 servers configured",
            ms([w[1] for w in with_servers]),
            f"no servers {ms([w[1] for w in without])}",
        ),
        (
            "  of which: message posted -> 1st request (waits for servers)",
            ms([w[2] for w in with_servers]),
            f"no servers {ms([w[2] for w in without])}",
        ),
    ]
    figure_table(rows, "Errand")
    print(f"\n(medians: {calls} calls each way; {starts} starts each)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.bench_mcp")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--starts", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.calls, args.starts))

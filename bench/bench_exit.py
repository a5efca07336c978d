"""SIGTERM to exit of `errand serve` (issue 18: goal ≤ 200 ms).
Run: .venv/bin/python -m bench.bench_exit [--runs N]

Each run starts a real `errand serve` on a fresh data dir against the scripted model, has it answer one chat
message (so the host has done real work and holds what a running host holds), then sends SIGTERM and times
until the process has exited (the host stops cleanly first: writes finish, sessions close). The baseline,
in the same run: a Python process that imported the same top-level modules (the host, the API server) and
does nothing else, from SIGTERM to exit, with the interpreter's own last garbage collection (which `errand`
skips by freezing the heap once its host has stopped, app/cli.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import figure_table
from tests.fakes.model_server import ScriptedModelServer

ROOT = Path(__file__).resolve().parent.parent
IDLE = (
    "import signal, sys, core.host, core.api.server\n"
    "signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))\n"
    "print('ready', flush=True)\n"
    "signal.pause()\n"
)


async def serve_exit(server: ScriptedModelServer, data_dir: Path) -> float:
    env = dict(
        os.environ, ERRAND_MODEL_BASE_URL=server.base_url, ERRAND_MODEL="fake-model", ERRAND_API_KEY="k"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "app.cli", "serve", "--data-dir", str(data_dir)),
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    await proc.stdout.readline()
    info = json.loads((data_dir / "api.json").read_text())
    async with httpx.AsyncClient(
        base_url=info["url"], headers={"Authorization": f"Bearer {info['token']}"}
    ) as c:
        cid = (await c.post("/api/conversations", json={})).json()["id"]
        said = (await c.post(f"/api/conversations/{cid}/messages", json={"text": "hi"})).json()
        await c.get(
            f"/api/conversations/{cid}/messages",
            params={"after": said["message"]["id"], "wait": 10},
            timeout=20,
        )
    sent = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    await proc.wait()
    return time.perf_counter() - sent


async def idle_exit() -> float:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", IDLE, cwd=ROOT, stdout=asyncio.subprocess.PIPE
    )
    assert proc.stdout is not None
    await proc.stdout.readline()
    sent = time.perf_counter()
    proc.send_signal(signal.SIGTERM)
    await proc.wait()
    return time.perf_counter() - sent


def ms(values: list[float]) -> str:
    return (
        f"median {statistics.median(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms (n={len(values)})"
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    served: list[float] = []
    idle: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        async with ScriptedModelServer() as server:
            for i in range(args.runs):
                server.reset()
                served.append(await serve_exit(server, Path(tmp) / f"serve-{i}"))
                idle.append(await idle_exit())
    figure_table([("SIGTERM to exit", ms(served), f"idle import-only process {ms(idle)}")], "errand serve")


if __name__ == "__main__":
    asyncio.run(main())

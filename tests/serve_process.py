"""`errand serve` as a real child process for crash tests: its environment, start, "listening", a client of
its API, and waiting for a send to be recorded as on its platform."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import ssl
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.fakes.model_server import ScriptedModelServer

ROOT = Path(__file__).resolve().parents[1]


def serve_env(model_server: ScriptedModelServer, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ERRAND_")}
    env.update(
        ERRAND_MODEL_BASE_URL=model_server.base_url,
        ERRAND_MODEL="fake-model",
        ERRAND_API_KEY="sk-test",
        HOME=str(home),
    )
    return env


@asynccontextmanager
async def serve_process(
    data_dir: Path, env: dict[str, str], *, log: Path | None = None
) -> AsyncIterator[asyncio.subprocess.Process]:
    """`log`: where its stderr goes (appended), for a test that never reads it: a pipe nobody reads
    would fill up and stall the host."""
    stderr = log.open("ab") if log is not None else None
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.cli",
        "serve",
        "--data-dir",
        str(data_dir),
        "--port",
        "0",
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=stderr if stderr is not None else asyncio.subprocess.PIPE,
    )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        if stderr is not None:
            stderr.close()


async def read_until_listening(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), timeout=30)
    assert b"listening on" in line, line
    return line.decode()


@functools.cache
def client_tls() -> ssl.SSLContext:
    """One TLS context for every API client of this process. httpx builds one per client even for plain
    http (30-70 ms), which a bench would otherwise count as the served process's start-up."""
    return ssl.create_default_context()


def api_client(data_dir: Path) -> httpx.AsyncClient:
    """A client of the API a running `errand serve` wrote to `data_dir/api.json`."""
    info = json.loads((data_dir / "api.json").read_text())
    headers = {"Authorization": f"Bearer {info['token']}"}
    return httpx.AsyncClient(base_url=info["url"], headers=headers, timeout=15, verify=client_tls())


async def recorded_on_platform(client: httpx.AsyncClient, conversation: str, words: str) -> None:
    """Wait until serve recorded the message with `words` as on its platform. The API's long poll answers at
    once for a new message, else after its wait: a flag set on a stored message wakes no one."""
    url = f"/api/conversations/{conversation}/messages"
    async with asyncio.timeout(20):
        while True:
            messages: list[dict[str, Any]] = (await client.get(url)).json()["messages"]
            if any(words in m["text"] and m["onPlatform"] for m in messages):
                return
            last = messages[-1]["id"] if messages else 0
            await client.get(url, params={"after": last, "wait": 1})

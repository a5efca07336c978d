"""`errand serve` as a real child process for crash tests: its environment, start, and "listening"."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

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

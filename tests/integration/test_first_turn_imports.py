"""The first chat turn of a fresh host imports nothing on the loop (docs/architecture.md#start-up): whatever
the first model request needs was imported while the host started, off the loop, so the first reply does
not stall the window; and what only background runs need (the price catalogue) was not loaded at all.
Run in a fresh interpreter, where nothing was imported by an earlier test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import asyncio, sys
from pathlib import Path
from core.agent.model_config import ModelConfig
from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore

async def main() -> None:
    async with ScriptedModelServer() as server:
        server.push(Reply.text("hi"))
        config = ModelConfig(server.base_url, "m", "k")
        host = Host(Path(sys.argv[1]), secrets=MemorySecretStore(), model_override=config)
        await host.start()
        before = set(sys.modules)
        conversation = (await host.chat.create_conversation()).id
        await host.chat.say(conversation, "hello")
        await server.wait_for_requests(1)
        print(",".join(sorted(set(sys.modules) - before)))
        print("genai_prices" in sys.modules)
        await host.stop()

asyncio.run(main())
"""


@pytest.mark.slow
def test_the_first_model_request_of_a_fresh_host_imports_nothing(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / "data")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    imported_in_turn, catalogue_loaded = out.stdout.split("\n")[:2]
    assert imported_in_turn == ""
    # A chat never prices: the catalogue (~150 ms, ~25 MB) waits for a first background run.
    assert catalogue_loaded == "False"

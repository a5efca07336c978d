"""A model server process for UI benchmarks: background tasks step through shell calls and the chat
streams a long reply, so the host feeds the window a steady flow of events.

    python -m bench.streaming_model [--steps N] [--chunks N]

Prints its base URL and serves until SIGTERM. It runs in its own process so its work doesn't load the
loop being measured.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.integration.task_script import SessionScript, bash, report


def responder(steps: int, chunks: int) -> Any:
    counts: Counter[str] = Counter()

    def respond(body: dict[str, Any]) -> Reply:
        who = SessionScript.who(body)
        if who == "chat":
            text = "这是一段很长的回答，用来测量窗口在流式输出时是否流畅。" * 40
            return Reply.text(text, chunks=chunks, chunk_delay_s=0.01, latency_s=0.05)
        counts[who] += 1
        if counts[who] <= steps:
            return replace(bash(f"echo step {counts[who]} of {who}"), latency_s=0.1)
        if counts[who] == steps + 1:
            return report("done", f"{who} finished")
        return Reply.text("Done.")  # ends the turn after the report

    return respond


async def _serve(server: ScriptedModelServer) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        print(server.base_url, flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.streaming_model")
    parser.add_argument("--steps", type=int, default=40, help="shell steps per task before it reports")
    parser.add_argument("--chunks", type=int, default=400, help="deltas in each streamed chat reply")
    args = parser.parse_args(argv)
    asyncio.run(_serve(ScriptedModelServer(responder=responder(args.steps, args.chunks))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

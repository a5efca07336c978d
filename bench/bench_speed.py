"""The speed goals of issue 18, each beside its baseline in the same run.
Run: .venv/bin/python -m bench.bench_speed [--runs N] [--gui-runs N] [--restart-runs N] [--tool-calls N]

Every figure comes from real processes on fresh data dirs against the scripted model (no latency):
- the floor: `bench/floor_loop.py`, a standard-library agent loop (one streamed request, shell calls run
  with `subprocess`, results sent back), started as its own process;
- `errand serve`: process start -> the first model request for a message posted on the API (the time to
  start the process, import, open the store, start the host and the API, and hand the message to a chat
  turn), then the step gaps of that first turn of three shell calls (`true`; `--tool-calls N` for a
  longer turn), from the model's last byte to the next request: the first gap apart (it pays for whatever
  is built on first use) and the later ones;
  with the bot's default sandbox (bubblewrap) and with the preset `full` (no sandbox);
- the cost of one sandboxed shell call: `bwrap <Errand's arguments> bash -c true` started and waited for
  from asyncio, against the same `bash -c true` unconfined;
- memory: `errand serve` once the reply is stored and it sits idle, against the floor's peak;
- desktop: process start -> window with content, and -> host ready (offscreen, `ERRAND_STARTUP_PROBE`);
- restart: `errand serve` killed with SIGKILL inside a task run, started again -> the recovered run's
  first model request.
The rules recompute and SIGTERM-to-exit goals have their own benches (`bench_rules`, `bench_exit`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from bench.bench_startup import one_start
from bench.bench_tasks import restart_to_recover
from bench.common import figure_table
from core.agent.sandbox import Permission, Preset, ShellSandbox
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.serve_process import api_client, client_tls, read_until_listening, serve_process

ROOT = Path(__file__).resolve().parents[1]
TOOL_CALLS = 3  # the turn: three shell calls and an answer (--tool-calls for a longer one)


@dataclass(frozen=True)
class Turn:
    start_s: float  # process start -> first model request
    gaps_s: list[float]  # model reply's last byte -> next request, in order
    rss_mb: float  # idle after the turn (Errand) or peak (the floor)


def _script(server: ScriptedModelServer, calls: int) -> None:
    server.reset()
    server.push_many(
        [Reply.tool_calls([ToolCallSpec("bash", {"command": "true"})]) for _ in range(calls)]
        + [Reply.text("done")]
    )


def _gaps(server: ScriptedModelServer) -> list[float]:
    reqs = server.requests
    return [reqs[i + 1].received_at - (reqs[i].responded_at or 0) for i in range(len(reqs) - 1)]


async def floor_turn(server: ScriptedModelServer, calls: int) -> Turn:
    _script(server, calls)
    spawned = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.floor_loop",
        server.base_url,
        "go",
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0, f"the floor loop failed ({proc.returncode})"
    requests = server.requests
    return Turn(requests[0].received_at - spawned, _gaps(server), int(out.split()[-1]) / 1024)


async def serve_turn(server: ScriptedModelServer, data_dir: Path, preset: Preset, calls: int) -> Turn:
    _script(server, calls)
    env = dict(
        os.environ, ERRAND_MODEL_BASE_URL=server.base_url, ERRAND_MODEL="fake-model", ERRAND_API_KEY="k"
    )
    client_tls()  # the bench's own client set-up is not the served process's start
    spawned = time.monotonic()
    async with serve_process(data_dir, env, log=data_dir.parent / f"{data_dir.name}.log") as proc:
        await read_until_listening(proc)
        async with api_client(data_dir) as client:
            if preset is not Preset.WORKSPACE_WRITE:
                bot = (await client.get("/api/bots")).json()["bots"][0]
                (await client.put(f"/api/bots/{bot['id']}", json={"preset": preset.value})).raise_for_status()
            cid = (await client.post("/api/conversations", json={})).json()["id"]
            r = await client.post(f"/api/conversations/{cid}/messages", json={"text": "go"})
            r.raise_for_status()
            first = (await server.wait_for_requests(1, timeout=30))[0].received_at - spawned
            await server.wait_for_requests(calls + 1, timeout=30)
            after = r.json()["message"]["id"]
            await client.get(f"/api/conversations/{cid}/messages", params={"after": after, "wait": 10})
        await asyncio.sleep(1.0)  # idle: let the loop settle before reading memory
        rss = psutil.Process(proc.pid).memory_info().rss / 2**20
        proc.send_signal(signal.SIGTERM)
        await proc.wait()
        return Turn(first, _gaps(server), rss)


async def shell_call_cost(tmp: Path, runs: int = 40) -> tuple[list[float], list[float]]:
    """One `bash -c true` in bubblewrap as Errand wraps it, and unconfined, each started and awaited."""
    workspace = tmp / "ws-shell"
    workspace.mkdir()
    sandbox = ShellSandbox.detect(Permission(Preset.WORKSPACE_WRITE, workspace))
    if not sandbox.available:
        raise SystemExit(f"bubblewrap is needed for this bench: {sandbox.description}")
    plain = ShellSandbox(Permission(Preset.FULL, workspace))

    async def once(argv: list[str]) -> float:
        started = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(*argv, cwd=workspace, stdout=asyncio.subprocess.DEVNULL)
        await proc.wait()
        return time.perf_counter() - started

    confined = [await once(sandbox.wrap("true", workspace)) for _ in range(runs)]
    unconfined = [await once(plain.wrap("true", workspace)) for _ in range(runs)]
    return confined, unconfined


def ms(value_s: float) -> str:
    return f"{value_s * 1000:.1f} ms"


def med(values: list[float]) -> float:
    return statistics.median(values)


async def main(runs: int, gui_runs: int, restart_runs: int, calls: int) -> None:
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print("Errand speed figures (issue 18), machine:", os.cpu_count(), "cores", flush=True)
        async with ScriptedModelServer() as server:
            floors = [await floor_turn(server, calls) for _ in range(runs)]
            sandboxed = [
                await serve_turn(server, tmp / f"bw-{i}", Preset.WORKSPACE_WRITE, calls) for i in range(runs)
            ]
            free = [await serve_turn(server, tmp / f"full-{i}", Preset.FULL, calls) for i in range(runs)]
        confined, unconfined = await shell_call_cost(tmp)

        floor_start = med([t.start_s for t in floors])
        floor_gap = med([g for t in floors for g in t.gaps_s])
        rows.append(
            (
                "serve start -> 1st model request (goal ≤ 1.0 s)",
                ms(med([t.start_s for t in sandboxed])),
                f"floor {ms(floor_start)}",
            )
        )
        later_free = [g for t in free for g in t.gaps_s[1:]]
        rows.append(
            (
                "step gap, no sandbox (goal ≤ 1.5 × floor)",
                f"{ms(med(later_free))} (= {med(later_free) / floor_gap:.2f} × floor)",
                f"floor {ms(floor_gap)}",
            )
        )
        later_bw = [g for t in sandboxed for g in t.gaps_s[1:]]
        bwrap_extra = med(confined) - med(unconfined)
        rows.append(
            (
                "step gap, bash in bubblewrap (goal ≤ bwrap true + 4 ms)",
                ms(med(later_bw)),
                f"bwrap true {ms(med(confined))} (+{ms(bwrap_extra)} over bash true); floor {ms(floor_gap)}",
            )
        )
        for name, turns in (("no sandbox", free), ("bubblewrap", sandboxed)):
            first = med([t.gaps_s[0] for t in turns])
            later = med([g for t in turns for g in t.gaps_s[1:]])
            rows.append(
                (
                    f"first step gap, {name} (goal within 10 ms of later)",
                    f"{ms(first)} (+{ms(first - later)})",
                    f"later {ms(later)}",
                )
            )
        rows.append(
            (
                "serve RSS idle after a reply (goal ≤ 80 MB)",
                f"{med([t.rss_mb for t in sandboxed]):.0f} MB",
                f"floor peak {med([t.rss_mb for t in floors]):.0f} MB",
            )
        )
        if gui_runs:
            gui = [one_start(tmp / f"gui-{i}") for i in range(gui_runs)]
            rows.append(
                (
                    "desktop start -> window with content (goal ≤ 1.0 s)",
                    f"{med([g['window-shown'] for g in gui]):.2f} s",
                    f"floor start {ms(floor_start)}",
                )
            )
            rows.append(
                (
                    "desktop start -> host ready (goal ≤ 1.5 s)",
                    f"{med([g['host-started'] for g in gui]):.2f} s",
                    "",
                )
            )
            rows.append(("desktop RSS idle (goal ≤ 150 MB)", f"{med([g['rss-mb'] for g in gui]):.0f} MB", ""))
        if restart_runs:
            restarts = await restart_to_recover(tmp, restart_runs)
            rows.append(
                (
                    "SIGKILL, restart -> recovered run's 1st request (goal ≤ 1.5 s)",
                    ms(med(restarts)),
                    f"floor start {ms(floor_start)}",
                )
            )
    figure_table(rows, "Errand")
    print(
        f"\n(medians of {runs} runs of a turn of {calls} shell calls; "
        f"desktop {gui_runs}, restart {restart_runs})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.bench_speed")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--gui-runs", type=int, default=5)
    parser.add_argument("--restart-runs", type=int, default=3)
    parser.add_argument("--tool-calls", type=int, default=TOOL_CALLS, help="shell calls in the measured turn")
    args = parser.parse_args()
    if args.tool_calls < 2:
        parser.error("--tool-calls must be at least 2 (the later gaps are the ones after the first)")
    asyncio.run(main(args.runs, args.gui_runs, args.restart_runs, args.tool_calls))

"""Figures for planned tasks (issue 21). Run: .venv/bin/python -m bench.bench_plans

- parallel speed-up: a goal planned into three independent subtasks, each one scripted 2-second model step,
  from the request to the merged result, against the same three subtasks chained one after another (each
  depending on the one before), in the same run, on a bot with three background slots;
- planner overhead: a planned task with one subtask (instant model) against the same work as a plain task:
  what the planner and the aggregator turns and the subtask bookkeeping add.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import figure_table, line
from core.agent.model_config import ModelConfig, RetryPolicy
from core.bots.views import BotUpdate
from core.changes import TaskChanged
from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.fakes.secrets import MemorySecretStore
from tests.integration.task_script import SessionScript, report

STEP_S = 2.0
PARTS = ("Part A", "Part B", "Part C")


def _host(data_dir: Path, server: ScriptedModelServer) -> Host:
    return Host(
        data_dir,
        secrets=MemorySecretStore(),
        model_override=ModelConfig(server.base_url, "fake-model", "sk-bench"),
        chat_retry=RetryPolicy(delays_s=(0.05,)),
        gather_s=None,
    )


def _plan(chained: bool) -> str:
    subtasks = []
    for n, title in enumerate(PARTS):
        sub: dict[str, object] = {"id": f"p{n}", "title": title, "brief": f"Do {title}."}
        if chained and n:
            sub["dependsOn"] = [f"p{n - 1}"]
        subtasks.append(sub)
    return json.dumps({"subtasks": subtasks})


async def _until_ready(host: Host, task_id: str) -> None:
    queue, unsubscribe = host.bus.queue(lambda e: isinstance(e, TaskChanged) and e.task_id == task_id)
    try:
        async with asyncio.timeout(120):
            while (await host.tasks.view(task_id, "en")).stage != "ready":
                await queue.get()
    finally:
        unsubscribe()


async def _timed(host: Host, goal: str, *, plan: bool) -> float:
    started = time.perf_counter()
    view = await host.tasks.create(bot_id=None, words=goal, plan=plan)
    await _until_ready(host, view.id)
    return time.perf_counter() - started


def _parts(script: SessionScript, step_s: float) -> None:
    """Each part: one model step of `step_s` (its report), then its closing words."""
    for title in PARTS:
        call = ToolCallSpec("task_report", {"state": "done", "summary": title, "message": f"{title} done."})
        script.add(title, [Reply.tool_calls([call], latency_s=step_s), Reply.text("ok")])


async def speed_up(tmp: Path) -> tuple[float, float]:
    script = SessionScript()
    async with ScriptedModelServer(responder=script) as server:
        host = _host(tmp / "parallel", server)
        await host.start()
        bot = await host.bots.ensure_default()
        await host.bots.update(bot.id, BotUpdate(task_slots=3))
        merged = json.dumps({"message": "Merged.", "summary": "merged"})
        timings = []
        for n, chained in enumerate((False, True)):
            goal = f"Goal {n}"
            script.add(f"plan:{goal}", [Reply.text(_plan(chained))])
            script.add(f"merge:{goal}", [Reply.text(merged)])
            _parts(script, STEP_S)
            timings.append(await _timed(host, goal, plan=True))
        await host.stop()
        return timings[0], timings[1]


async def planner_overhead(tmp: Path, samples: int = 5) -> tuple[list[float], list[float]]:
    script = SessionScript()
    one = json.dumps({"subtasks": [{"id": "only", "title": "The work", "brief": "Do the work."}]})
    merged = json.dumps({"message": "Done.", "summary": "done"})
    async with ScriptedModelServer(responder=script) as server:
        host = _host(tmp / "overhead", server)
        await host.start()
        planned, plain = [], []
        for n in range(samples):
            goal = f"Planned {n}"
            script.add(f"plan:{goal}", [Reply.text(one)])
            script.add(f"merge:{goal}", [Reply.text(merged)])
            script.add("The work", [report("done", "did it", message="Did it."), Reply.text("ok")])
            planned.append(await _timed(host, goal, plan=True))
            work = f"Plain {n}"
            script.add(work, [report("done", "did it", message="Did it."), Reply.text("ok")])
            plain.append(await _timed(host, work, plan=False))
        await host.stop()
        return planned, plain


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        parallel, chained = await speed_up(Path(tmp))
        planned, plain = await planner_overhead(Path(tmp))
    over = statistics.median(planned) - statistics.median(plain)
    rows = [
        (
            f"3 subtasks of one {STEP_S:g} s step, request -> merged result",
            f"{parallel:5.2f} s in parallel",
            f"{chained:5.2f} s one after another ({chained / parallel:.2f}x)",
        ),
        (
            "one subtask, request -> result (instant model)",
            f"{statistics.median(planned) * 1000:6.0f} ms planned",
            f"{statistics.median(plain) * 1000:6.0f} ms as a plain task",
        ),
    ]
    figure_table(rows, "planned")
    line("planner + merge + subtask overhead (median)", f"{over * 1000:6.0f} ms")


if __name__ == "__main__":
    asyncio.run(main())

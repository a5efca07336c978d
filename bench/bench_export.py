"""How long the Markdown exports take (issue 7 item 6). Run: .venv/bin/python -m bench.bench_export

A real Host on a temporary data dir (SQLite file). One task with 50 runs of 100 steps each (5,000 steps:
model replies, shell and file tools with multi-line output, a few failures, a key or two to redact), put
straight into the store; then `host.tasks.export_markdown(task_id, "zh")` end to end, ROUNDS times: the
median and the slowest, the document's size, and the longest the event loop was kept from running meanwhile
(the render runs on the loop thread). Then where the time goes: reading (detail and steps), rendering
without redaction, and `redact` over the finished document. The same for a rule with 300 runs of 10 steps
via `host.rules.export_markdown`.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from sqlalchemy.orm import Session

from bench.common import line, summary_ms
from core.activity_steps import ActivityStep
from core.export.redaction import redact
from core.host import Host
from core.ids import new_id
from core.store import conversations as conv_rows
from core.store import rules as rule_rows
from core.store import runs as run_rows
from core.store import tasks as task_rows
from tests.fakes.secrets import MemorySecretStore

ROUNDS = 10
TASK_RUNS = 50
STEPS_PER_RUN = 100
RULE_RUNS = 300
STEPS_PER_RULE_RUN = 10

_PROSE = (
    "比较了三家云的 A100 包月价,X 云最便宜,约 ¥7,800;B 云要登录才看得到包年价,先按公开价算。"
    "Next I will check the hourly prices and write the table. "
)
_LISTING = "\n".join(
    f"-rw-r--r-- 1 u u {1000 + n * 37:>6} Nov 28 10:{n % 60:02d} file_{n:03d}.csv" for n in range(40)
)
_CODE = 'def price(row):\n    """Parse one row."""\n    return float(row["price"].strip("¥$"))\n' * 12


def _step(rng: random.Random, n: int) -> dict[str, object]:
    roll = rng.random()
    if roll < 0.4:
        text = _PROSE * rng.randint(1, 3)
        return ActivityStep(
            "model",
            "deepseek-chat",
            text[:400],
            duration_ms=rng.randint(300, 4000),
            tokens_in=2400,
            tokens_out=310,
        ).to_json()
    if roll < 0.7:
        detail = _LISTING[: rng.randint(200, 2000)]
        if n % 97 == 0:
            detail += "\nOPENAI_API_KEY=sk-proj-Abc123Def456Ghi789Jkl012Mno345"
        return ActivityStep(
            "tool",
            f"bash: ls -l data/run_{n}",
            detail,
            ok=rng.random() > 0.05,
            duration_ms=rng.randint(5, 900),
        ).to_json()
    if roll < 0.9:
        return ActivityStep(
            "tool", f"read_file: src/prices_{n}.py", _CODE[: rng.randint(100, 2000)], duration_ms=3
        ).to_json()
    if roll < 0.95:
        return ActivityStep("job", f"job j{n}: python crawl.py --pages 20", "exit code 0").to_json()
    return ActivityStep("note", "Reminded to report with task_report").to_json()


def _report(rng: random.Random, state: str) -> str:
    return json.dumps(
        {
            "state": state,
            "summary": _PROSE * rng.randint(1, 4),
            "message": "GPU 价格调研好了:A100 包月最便宜的是 X 云,约 ¥7,800。",
            "question": None,
            "files": ["report.md", "data/prices.csv"],
            "would": "",
        },
        ensure_ascii=False,
    )


async def _timed(call: Callable[[], Awaitable[str]]) -> tuple[float, float, str]:
    """How long `call` took, and the longest a 1 ms ticker on the same loop waited past its time."""
    worst = 0.0
    running = True

    async def tick() -> None:
        nonlocal worst
        while running:
            started = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - started - 0.001)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)
    started = time.perf_counter()
    document = await call()
    took = time.perf_counter() - started
    running = False
    await ticker
    return took, worst, document


async def measure_task(host: Host, conversation_id: str, bot_id: str, tmp: str) -> None:
    rng = random.Random(7)
    task_id = new_id("t")
    now = time.time() - 3 * 86400

    def insert(s: Session) -> None:
        task_rows.insert_task(
            s,
            id=task_id,
            bot_id=bot_id,
            conversation_id=conversation_id,
            title="GPU 价格调研",
            brief="调研三家云的 A100 包月价和按小时价,写成对比表",
            session_id=f"task-{task_id}",
            folder=f"{tmp}/tasks/gpu-{task_id}",
            permission="workspace-write",
            budget_usd=5.0,
            now=now,
        )
        for r in range(TASK_RUNS):
            run_id = new_id("r")
            start = now + r * 3600
            run_rows.insert_run(
                s,
                id=run_id,
                bot_id=bot_id,
                session_id=f"task-{task_id}",
                cause="launch" if r == 0 else rng.choice(["followup", "answer", "retry", "continue"]),
                now=start,
                task_id=task_id,
            )
            run_rows.set_run_state(s, run_id, "running", now=start)
            steps = [_step(rng, r * STEPS_PER_RUN + n) for n in range(STEPS_PER_RUN)]
            run_rows.update_run(s, run_id, activity=steps, cost_usd=round(rng.uniform(0.01, 0.09), 4))
            outcome: run_rows.RunOutcome = rng.choice(["done", "done", "failed", "budget", "needs_you"])
            error = "X 云的价格页要登录,我进不去" if outcome == "failed" else ""
            report = _report(rng, {"budget": "progress", "needs_you": "needs_you"}.get(outcome, outcome))
            run_rows.end_run(s, run_id, outcome=outcome, now=start + 600, error=error, report=report)

    await host.db.write(insert)
    await _measure(
        f"task, {TASK_RUNS} runs x {STEPS_PER_RUN} steps",
        lambda: host.tasks.export_markdown(task_id, "zh"),
        render=lambda: _render_task(host, task_id),
    )


async def _render_task(host: Host, task_id: str) -> tuple[float, float, float]:
    from core.export.task_markdown import task_markdown

    started = time.perf_counter()
    detail = await host.tasks.detail(task_id, "zh")
    steps = {run.id: await host.tasks.run_activity(task_id, run.id) for run in detail.runs}
    read = time.perf_counter() - started
    return read, *_split_render(lambda: task_markdown(detail, steps, lang="zh", exported_at=time.time()))


async def measure_rule(host: Host, conversation_id: str, bot_id: str) -> None:
    rng = random.Random(11)
    rule_id = new_id("ru")
    now = time.time() - RULE_RUNS * 86400

    def insert(s: Session) -> None:
        rule_rows.insert_rule(
            s,
            id=rule_id,
            bot_id=bot_id,
            conversation_id=conversation_id,
            title="X 的价格",
            instruction="每天早上 8 点看看 X 的价格,降到 200 以下告诉我",
            schedule={"kind": "daily", "time": "08:00", "tz": "Asia/Shanghai"},
            tz="Asia/Shanghai",
            now=now,
            mode="observe",
            next_run_at=0.0,  # it never fires during the bench
        )
        for version in (1, 2, 3):
            rule_rows.insert_version(
                s, rule_id=rule_id, version=version, instruction=f"第 {version} 版:看看 X 的价格", now=now
            )
        for r in range(RULE_RUNS):
            run_id = new_id("r")
            start = now + r * 86400
            mode: run_rows.RunMode = "act" if r % 3 == 0 else "observe"
            run_rows.insert_run(
                s,
                id=run_id,
                bot_id=bot_id,
                session_id=f"rule-{rule_id}-{r + 1}",
                cause="schedule",
                now=start,
                rule_id=rule_id,
                rule_version=1 + r * 3 // RULE_RUNS,
                mode=mode,
            )
            if r % 10 == 9:
                run_rows.end_run(s, run_id, outcome="skipped", now=start, error="missed")
                continue
            run_rows.set_run_state(s, run_id, "running", now=start)
            steps = [_step(rng, r * STEPS_PER_RULE_RUN + n) for n in range(STEPS_PER_RULE_RUN)]
            would = "X 降价了,现在 ¥199(昨天 ¥259)" if mode == "observe" and r % 2 else ""
            run_rows.update_run(
                s, run_id, activity=steps, cost_usd=round(rng.uniform(0.005, 0.03), 4), would=would
            )
            ended: run_rows.RunOutcome = "failed" if r % 17 == 0 else "done"
            error = "页面打不开(已重试 3 次)" if ended == "failed" else ""
            run_rows.end_run(
                s, run_id, outcome=ended, now=start + 40, error=error, report=_report(rng, ended)
            )

    await host.db.write(insert)
    await _measure(
        f"rule, {RULE_RUNS} runs x {STEPS_PER_RULE_RUN} steps",
        lambda: host.rules.export_markdown(rule_id, "zh"),
        render=lambda: _render_rule(host, rule_id),
    )


async def _render_rule(host: Host, rule_id: str) -> tuple[float, float, float]:
    from core.export.rule_markdown import rule_markdown

    started = time.perf_counter()
    rule = await host.rules.get(rule_id, "zh")
    versions = await host.rules.versions(rule_id)
    log = await host.rules.runs(rule_id, lang="zh", limit=None)
    read = time.perf_counter() - started
    return read, *_split_render(
        lambda: rule_markdown(rule, versions, log, lang="zh", exported_at=time.time())
    )


def _split_render(render: Callable[[], str]) -> tuple[float, float]:
    """(render without the final redaction, the final redaction alone), by timing the whole render and a
    redaction of its output (redacting a redacted document costs the same scan)."""
    started = time.perf_counter()
    document = render()
    whole = time.perf_counter() - started
    started = time.perf_counter()
    redact(document)
    redaction = time.perf_counter() - started
    return whole - redaction, redaction


async def _measure(
    label: str,
    export: Callable[[], Awaitable[str]],
    *,
    render: Callable[[], Awaitable[tuple[float, float, float]]],
) -> None:
    took: list[float] = []
    stalls: list[float] = []
    document = ""
    for _ in range(ROUNDS):
        elapsed, stall, document = await _timed(export)
        took.append(elapsed)
        stalls.append(stall)
    line(f"{label}: export_markdown", summary_ms(took))
    line(f"{label}: longest loop stall meanwhile", summary_ms(stalls))
    size = len(document.encode("utf-8"))
    line(
        f"{label}: document",
        f"{size / 1_000_000:.2f} MB, {len(document):,} characters, {document.count(chr(10)):,} lines",
    )
    parts = [await render() for _ in range(3)]
    for name, index in (
        ("read (detail + steps)", 0),
        ("render, without redaction", 1),
        ("redact the document", 2),
    ):
        line(f"{label}: {name}", f"median {statistics.median(p[index] for p in parts) * 1000:7.2f} ms")
    assert "sk-proj-Abc123" not in document


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        host = Host(Path(tmp), secrets=MemorySecretStore())
        await host.start()
        try:
            bot = await host.bots.ensure_default()
            conversation_id = new_id("c")
            await host.db.write(
                lambda s: conv_rows.insert_conversation(
                    s, id=conversation_id, bot_id=bot.id, title="bench", now=time.time()
                )
            )
            await measure_task(host, conversation_id, bot.id, tmp)
            await measure_rule(host, conversation_id, bot.id)
        finally:
            await host.stop()


if __name__ == "__main__":
    asyncio.run(main())

"""Qt event-loop lag while background runs stream (issue 5). Run: .venv/bin/python -m bench.bench_ui_loop

The real host and the real window run on one qasync loop, offscreen; the model is a separate process
(bench/streaming_model.py) so it doesn't load the loop being measured. A precise 4 ms QTimer records how
late each tick fires: that lateness is the time the loop was busy with something else, which is what a
person feels as a stutter. Figures, each as p50 / p99 / max lag:

- idle: the window open, nothing running;
- tasks view: four tasks stepping through shell calls (each step re-reads the list) while it is shown;
- chat: the same four tasks plus a 400-delta reply streaming into the shown conversation.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import asyncio
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import qasync
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication

from bench.common import line, percentile
from core.agent.model_config import ModelConfig, RetryPolicy
from core.changes import TaskChanged
from core.host import Host
from core.tasks.views import TaskView
from tests.fakes.secrets import MemorySecretStore
from ui import theme
from ui.bridge import EventBridge
from ui.main_window import MainWindow

ROOT = Path(__file__).resolve().parents[1]
TICK_MS = 4
RUNS = 4


class LagProbe:
    """Records how late each tick of a precise timer fires."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._last = 0.0
        self._timer = QTimer()
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._tick)

    def start(self) -> None:
        self.lags.clear()
        self._last = time.perf_counter()
        self._timer.start()

    def stop(self) -> list[float]:
        self._timer.stop()
        return list(self.lags)

    def _tick(self) -> None:
        now = time.perf_counter()
        self.lags.append(max(0.0, now - self._last - TICK_MS / 1000))
        self._last = now


def _figure(lags: list[float]) -> str:
    ms = [v * 1000 for v in lags]
    return (
        f"p50 {statistics.median(ms):6.2f} ms   p99 {percentile(ms, 99):6.2f} ms   "
        f"max {max(ms):6.2f} ms   (ticks={len(ms)})"
    )


def _start_model(steps: int) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "bench.streaming_model", "--steps", str(steps)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


async def _bots(host: Host, url: str) -> list[str]:
    """Two bots, so four runs really run at once (each bot has two background slots)."""
    second = await host.bots.create("Bench 2", base_url=url, model="fake-model", api_key="sk-bench")
    return [await host.bots.default_id(), second.id]


async def _phase(
    host: Host, bots: list[str], probe: LagProbe, tag: str, seconds: float, chat_id: str | None
) -> list[float]:
    tasks: list[TaskView] = [
        await host.tasks.create(bot_id=bots[i % 2], words=f"bench work {tag} {i}", title=f"{tag}-{i}")
        for i in range(RUNS)
    ]
    probe.start()
    if chat_id is not None:
        await host.chat.say(chat_id, "tell me something long")
    ended = {"ready", "failed", "stopped"}

    async def all_ended() -> bool:
        views = await host.tasks.list_tasks()
        return all(v.stage in ended for v in views if v.id in {t.id for t in tasks})

    queue, unsubscribe = host.bus.queue(lambda e: isinstance(e, TaskChanged))

    async def until_all_ended() -> None:
        while not await all_ended():
            await queue.get()

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(until_all_ended(), seconds)
    unsubscribe()
    lags = probe.stop()
    steps = 0
    for task in tasks:
        detail = await host.tasks.detail(task.id)
        steps += sum(run.steps for run in detail.runs)
        if detail.task.stage not in ended:
            await host.tasks.stop_task(task.id)
    line(f"  ({tag}: {steps} steps across {RUNS} runs in {len(lags) * TICK_MS / 1000:.1f} s)", "")
    return lags


async def _expand_runs(window: MainWindow) -> None:
    detail = window.task_detail
    assert detail is not None
    for _ in range(50):  # the detail reads its runs asynchronously
        runs = detail.runs
        if runs:
            for section in runs:
                section.set_expanded(True)
            return
        await asyncio.sleep(0.02)


async def _follow(
    host: Host, probe: LagProbe, task_ids: list[str], seconds: float, window: MainWindow
) -> list[float]:
    probe.start()
    ended = {"ready", "failed", "stopped"}
    queue, unsubscribe = host.bus.queue(lambda e: isinstance(e, TaskChanged))

    async def until_all_ended() -> None:
        while True:
            views = {v.id: v for v in await host.tasks.list_tasks()}
            if all(views[t].stage in ended for t in task_ids if t in views):
                return
            await _expand_runs(window)
            await queue.get()

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(until_all_ended(), seconds)
    unsubscribe()
    return probe.stop()


async def run(app: QApplication, data_dir: Path) -> None:
    model, url = _start_model(steps=25)
    try:
        host = Host(
            data_dir,
            secrets=MemorySecretStore(),
            model_override=ModelConfig(url, "fake-model", "sk-bench"),
            chat_retry=RetryPolicy(delays_s=(0.05,)),
        )
        bridge = EventBridge(host.bus)
        window = MainWindow(
            host.chat, bridge, tasks=host.tasks, attention=host.attention, bots=host.desktop_bots
        )
        window.resize(1120, 820)
        window.show()
        await host.start()
        await window.refresh()
        probe = LagProbe()
        bots = await _bots(host, url)

        probe.start()
        await asyncio.sleep(3)
        line("idle window", _figure(probe.stop()))

        window.show_tasks()
        line(
            f"tasks view shown, {RUNS} runs stepping",
            _figure(await _phase(host, bots, probe, "list", 8, None)),
        )

        window.show_chat()
        chat_id = window.conversation_list.current_id
        assert chat_id
        line(
            f"chat shown and streaming, {RUNS} runs stepping",
            _figure(await _phase(host, bots, probe, "chat", 8, chat_id)),
        )
        first = (await host.tasks.create(bot_id=bots[0], words="warm-up", title="detail-0")).id
        window.open_task(first, back_to="list")
        others = [
            await host.tasks.create(bot_id=bots[i % 2], words=f"bench work detail {i}", title=f"detail-{i}")
            for i in range(1, RUNS)
        ]
        await _expand_runs(window)
        line(
            f"task detail shown, its steps live, {RUNS} runs stepping",
            _figure(await _follow(host, probe, [first, *(t.id for t in others)], 8, window)),
        )
        bridge.close()
        window.shutdown()
        await host.stop()
    finally:
        model.terminate()
        model.wait(10)


def main() -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    theme.apply_theme(app, "light")
    loop = qasync.QEventLoop(app)
    with tempfile.TemporaryDirectory() as tmp, loop:
        loop.run_until_complete(run(app, Path(tmp)))


if __name__ == "__main__":
    main()

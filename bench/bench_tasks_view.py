"""How long the tasks view takes with 1,000 tasks (issue 5). Run: .venv/bin/python -m bench.bench_tasks_view

Offscreen, against the fake task facade (so only the UI is measured): from asking the view to read its
tasks to the rows being shown, then one paint of the window; then a re-read after one task changed (what
every TaskChanged costs while the view is open); then a scroll to the end and its paint.

Then the same view over a real host (SQLite file, 1,000 tasks each with an ended run): the host's read of
the list (on the database thread) and the view's whole re-read, with the longest time the Qt loop was
kept busy meanwhile.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import asyncio
import tempfile
import time
from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication
from sqlalchemy.orm import Session

from bench.common import line, summary_ms
from tests.fakes.fake_tasks import FakeTaskFacade
from ui import i18n, theme
from ui.task_list import TaskListView

TASKS = 1_000
ROUNDS = 5
STAGES = ("working", "working/asking", "needs-you/answer", "failed", "ready", "stopped")


def fill(tasks: FakeTaskFacade) -> None:
    now = time.time()
    for n in range(TASKS):
        tasks.add_task(
            f"任务 {n}:调研三家云的 GPU 价格",
            stage=STAGES[n % len(STAGES)],
            latest_line="已比较 3 家,正在核对 B 云的包年价",
            updated_at=now - n * 600,
        )


async def measure(app: QApplication) -> None:
    builds: list[float] = []
    paints: list[float] = []
    rereads: list[float] = []
    scrolls: list[float] = []
    for _ in range(ROUNDS):
        tasks = FakeTaskFacade()
        fill(tasks)
        view = TaskListView(tasks)
        view.resize(900, 800)
        view.show()
        app.processEvents()
        started = time.perf_counter()
        await view.reload()
        app.processEvents()
        built = time.perf_counter()
        view.grab()
        painted = time.perf_counter()
        builds.append(built - started)
        paints.append(painted - built)

        first = view.shown_tasks()[0]
        tasks.update_task(first.id, latest_line="正在写对比表")
        started = time.perf_counter()
        await view.reload()
        view.grab()
        rereads.append(time.perf_counter() - started)

        started = time.perf_counter()
        view.list.scrollToBottom()
        view.grab()
        scrolls.append(time.perf_counter() - started)
        assert len(view.shown_tasks()) > 0
        view.shutdown()
        view.close()
        view.deleteLater()
    line(f"tasks view, {TASKS} tasks: read and build the rows", summary_ms(builds))
    line(f"tasks view, {TASKS} tasks: first paint", summary_ms(paints))
    line(f"tasks view, {TASKS} tasks: one task changed, re-read and paint", summary_ms(rereads))
    line(f"tasks view, {TASKS} tasks: scroll to the end and paint", summary_ms(scrolls))


async def measure_real_host() -> None:
    from core.host import Host
    from core.ids import new_id
    from core.store import conversations as conv_rows
    from core.store import runs as run_rows
    from core.store import tasks as task_rows
    from tests.fakes.secrets import MemorySecretStore

    with tempfile.TemporaryDirectory() as tmp:
        host = Host(Path(tmp), secrets=MemorySecretStore())
        await host.start()
        bot = await host.bots.ensure_default()
        now = time.time()

        def insert(s: Session) -> None:
            conv = conv_rows.insert_conversation(s, id=new_id("c"), bot_id=bot.id, title="bench", now=now)
            for n in range(TASKS):
                task_id = new_id("t")
                task_rows.insert_task(
                    s,
                    id=task_id,
                    bot_id=bot.id,
                    conversation_id=conv.id,
                    title=f"任务 {n}",
                    brief="调研三家云的 GPU 价格",
                    session_id=f"task-{task_id}",
                    folder=f"{tmp}/tasks/{task_id}",
                    permission="workspace-write",
                    budget_usd=1.0,
                    now=now - n * 600,
                )
                run = run_rows.insert_run(
                    s,
                    id=new_id("r"),
                    bot_id=bot.id,
                    session_id=f"task-{task_id}",
                    cause="launch",
                    now=now - n * 600,
                    task_id=task_id,
                )
                run_rows.end_run(s, run.id, outcome="done", now=now - n * 600 + 60)

        await host.db.write(insert)
        reads: list[float] = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            await host.tasks.list_tasks()
            reads.append(time.perf_counter() - started)
        line(f"real host, {TASKS} tasks: list_tasks (database thread)", summary_ms(reads))
        view = TaskListView(host.tasks)
        view.resize(900, 800)
        view.show()
        rereads: list[float] = []
        for _ in range(ROUNDS):
            started = time.perf_counter()
            await view.reload()
            view.grab()
            rereads.append(time.perf_counter() - started)
        line(f"real host, {TASKS} tasks: the view re-reads and paints", summary_ms(rereads))
        view.shutdown()
        await host.stop()


def main() -> None:
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    i18n.use_language("zh")
    theme.apply_theme(app, "light")
    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(app)) as runner:
        runner.run(measure(app))
        runner.run(measure_real_host())


if __name__ == "__main__":
    main()

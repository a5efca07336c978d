"""A task detail's run lines as they change (issue 17): a run that asked is no longer 「等你」 once
answered, a run waiting on the model says so with its elapsed time ticking, and a task on an unpriced
model says 「未定价」 from the start."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from pytestqt.qtbot import QtBot

from tests.fakes.fake_tasks import FakeTaskFacade, run
from tests.ui.conftest import wait_until
from ui import i18n
from ui.cost_words import task_budget_line
from ui.task_detail import TaskDetailBody
from ui.task_detail_sections import RunSection, money

MINUTE = 60


class Clock:
    """The detail's injected clock: a test moves it by hand."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock(time.time())


@pytest.fixture
def body(qtbot: QtBot, tasks: FakeTaskFacade, clock: Clock) -> Iterator[TaskDetailBody]:
    made = TaskDetailBody(tasks, now=clock)
    qtbot.addWidget(made)
    made.resize(640, 700)
    made.show()
    yield made
    made.shutdown()


def dot_of(section: RunSection) -> str:
    return section.dot.state


def changed(body: TaskDetailBody, tasks: FakeTaskFacade, task_id: str, **changes: object) -> None:
    """Change the task and tell the detail, as the window's bridge does on TaskChanged."""
    tasks.update_task(task_id, **changes)
    body.on_task_changed(task_id)


async def shown(body: TaskDetailBody, task_id: str) -> None:
    body.show_task(task_id)
    await wait_until(lambda: body.detail is not None and body.detail.task.id == task_id and bool(body.runs))


async def test_an_answered_question_no_longer_shows_its_run_waiting(
    body: TaskDetailBody, tasks: FakeTaskFacade, clock: Clock
) -> None:
    i18n.use_language("zh")
    asked = run("launch", "ended", "needs_you", 4, clock.now - 10 * MINUTE, clock.now - 8 * MINUTE)
    task = tasks.add_task("GPU 价格", stage="needs-you/answer", runs=[asked])
    await shown(body, task.id)
    (first,) = body.runs
    assert first.line().endswith("· 等你") and first.dot.state == "needs"  # it does wait for the person

    # The answer arrives: a second run takes it and the task is done.
    went_on = run("answer", "ended", "done", 2, clock.now - 7 * MINUTE, clock.now - 6 * MINUTE)
    changed(body, tasks, task.id, stage="ready", runs=[asked, went_on])
    await wait_until(lambda: len(body.runs) == 2)
    first, second = body.runs
    assert "等你" not in first.line()
    assert first.line() == "第 1 次 · 开始 · 4 步 · 2 分钟 · 已回答"
    assert first.dot.state == "idle" and second.dot.state == "idle"


async def test_a_run_the_task_no_longer_waits_on_drops_its_amber_dot_in_place(
    body: TaskDetailBody, tasks: FakeTaskFacade, clock: Clock
) -> None:
    asked = run("launch", "ended", "needs_you", 4, clock.now - 10 * MINUTE, clock.now - 8 * MINUTE)
    task = tasks.add_task("GPU prices", stage="needs-you/answer", runs=[asked])
    await shown(body, task.id)
    section = body.runs[0]
    assert section.dot.state == "needs"

    changed(body, tasks, task.id, stage="ready")  # the same run, the task itself went on
    await wait_until(lambda: body.detail is not None and body.detail.task.group == "ended")
    assert body.runs[0] is section  # kept, but re-read
    assert dot_of(section) == "idle" and "waiting for you" not in section.line()


async def test_a_run_waiting_on_the_model_says_so_and_its_time_ticks(
    body: TaskDetailBody, tasks: FakeTaskFacade, clock: Clock
) -> None:
    started = clock.now - 12
    task = tasks.add_task("GPU prices", runs=[run("launch", "running", steps=0, started_at=started)])
    await shown(body, task.id)
    section = body.runs[0]
    assert section.line() == "Run 1 · started · 0 steps · waiting for the model · 12 s"
    assert section.toggle.text() == section.line()

    clock.now = started + 75  # no re-read: the display tick alone moves it on
    await wait_until(lambda: "waiting for the model · 1 min 15 s" in section.toggle.text())

    # The model answered: a step came and the wait is gone.
    changed(body, tasks, task.id, runs=[run("launch", "running", steps=1, started_at=started)])
    await wait_until(lambda: body.runs[0].run.steps == 1)
    assert "waiting for the model" not in body.runs[0].line()
    assert body.runs[0].line().endswith("· working")


async def test_in_chinese_the_model_wait_reads_as_asked(
    body: TaskDetailBody, tasks: FakeTaskFacade, clock: Clock
) -> None:
    i18n.use_language("zh")
    task = tasks.add_task("GPU 价格", runs=[run("launch", "running", steps=0, started_at=clock.now - 12)])
    await shown(body, task.id)
    assert body.runs[0].line() == "第 1 次 · 开始 · 0 步 · 等模型回复 · 12 秒"


async def test_a_task_on_an_unpriced_model_says_unpriced_before_its_first_call_is_counted(
    tasks: FakeTaskFacade,
) -> None:
    i18n.use_language("zh")
    task = tasks.add_task("GPU 价格", spent_usd=0.0, budget_usd=1.0, model_priced=False)
    assert money(task) == "未定价 / $1.00"
    assert task_budget_line(task) == "未定价 / $1.00"


async def test_a_working_task_says_unpriced_from_the_start_and_a_priced_one_its_amount(
    body: TaskDetailBody, tasks: FakeTaskFacade, clock: Clock
) -> None:
    working = [run("launch", "running", steps=0, started_at=clock.now - 5)]
    unpriced = tasks.add_task("Local model", runs=working, model_priced=False)
    await shown(body, unpriced.id)
    assert "not priced / $1.00" in body.spent_label.text()
    assert "$0.00" not in body.spent_label.text()

    priced = tasks.add_task("Cloud model", spent_usd=0.004, runs=working, model_priced=True)
    await shown(body, priced.id)
    assert "under $0.01 / $1.00" in body.spent_label.text()


async def test_a_run_waiting_on_the_model_after_its_first_steps_says_so(
    body: TaskDetailBody, tasks: FakeTaskFacade, clock: Clock
) -> None:
    started = clock.now - 90
    stepped = run("launch", "running", steps=3, started_at=started)
    task = tasks.add_task("GPU prices", runs=[stepped])
    await shown(body, task.id)
    assert body.runs[0].line().endswith("· working")  # between calls: a tool ran, nothing waits

    # The next request went out: the core says since when it waits.
    waiting = run("launch", "running", steps=3, started_at=started, model_wait_since=clock.now - 15)
    changed(body, tasks, task.id, runs=[waiting])
    await wait_until(lambda: "waiting for the model · 15 s" in body.runs[0].toggle.text())
    assert body.runs[0].line() == "Run 1 · started · 3 steps · waiting for the model · 15 s"
    clock.now += 4  # the display tick alone moves it on
    await wait_until(lambda: "waiting for the model · 19 s" in body.runs[0].toggle.text())

    # The answer came: one more step and no more waiting.
    changed(body, tasks, task.id, runs=[run("launch", "running", steps=4, started_at=started)])
    await wait_until(lambda: body.runs[0].run.steps == 4)
    assert "waiting for the model" not in body.runs[0].line()

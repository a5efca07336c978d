"""The task detail's plan and goal wells (ui/task_plan.py): each subtask with its stage, spend, steps and
what it waits for; each criterion with its verdict and source; nothing for a task with neither."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pytestqt.qtbot import QtBot

from core.tasks.views import TaskDetail
from tests.fakes.fake_tasks import FakeTaskFacade
from ui.i18n import use_language
from ui.task_plan import TaskPlanSection

PLAN: dict[str, Any] = {
    "phase": "running",
    "subtasks": [
        {
            "id": "aws",
            "title": "查 AWS 价格",
            "dependsOn": [],
            "stage": "ready",
            "stageLabel": "已完成",
            "group": "done",
            "costUsd": 0.02,
            "steps": 6,
            "runs": 1,
        },
        {
            "id": "gcp",
            "title": "查 GCP 价格",
            "dependsOn": [],
            "stage": "working",
            "stageLabel": "进行中",
            "group": "working",
            "costUsd": 0.01,
            "steps": 2,
            "runs": 1,
        },
        {
            "id": "report",
            "title": "写对比",
            "dependsOn": ["aws", "gcp"],
            "stage": "",
            "stageLabel": "",
            "group": "",
            "costUsd": 0.0,
            "steps": 0,
            "runs": 0,
        },
    ],
}
GOAL: dict[str, Any] = {
    "round": 2,
    "maxRounds": 5,
    "met": False,
    "stopped": "",
    "criteria": [
        {
            "text": "测试通过",
            "verdict": {"passed": True, "source": "command", "detail": "`pytest -q` exited 0"},
        },
        {"text": "报告里有结论", "verdict": {"passed": False, "source": "model", "detail": "not met: none"}},
        {"text": "有 PDF", "verdict": None},
    ],
}


async def detail(**fields: Any) -> TaskDetail:
    tasks = FakeTaskFacade()
    task = tasks.add_task("GPU 价格对比")
    return replace(await tasks.detail(task.id), **fields)


async def test_a_planned_goal_task_shows_its_parts_and_its_criteria(qtbot: QtBot) -> None:
    use_language("zh")
    section = TaskPlanSection()
    qtbot.addWidget(section)
    section.show()
    section.set_detail(await detail(plan=PLAN, goal=GOAL))
    assert section.isVisible()
    assert section.plan.caption.text() == "计划 · 3 部分"
    lines = [(r.title.text(), r.meta.toolTip(), r.dot.state) for r in section.plan.rows]
    assert lines == [
        ("查 AWS 价格", "已完成 · $0.02 · 6 步", "idle"),
        ("查 GCP 价格", "进行中 · $0.01 · 2 步", "working"),
        ("写对比", "未开始 · 在「查 AWS 价格」和「查 GCP 价格」之后", "idle"),
    ]
    assert section.goal.caption.text() == "验收标准 · 第 2 轮，共 5 轮"
    marks = [(r.mark.text(), r.title.text(), r.meta.toolTip()) for r in section.goal.rows]
    assert marks == [
        ("✓", "测试通过", "命令 · `pytest -q` exited 0"),
        ("✗", "报告里有结论", "模型 · not met: none"),
        ("·", "有 PDF", "还没检查"),
    ]


async def test_english_words_and_a_plan_still_being_made(qtbot: QtBot) -> None:
    section = TaskPlanSection()
    qtbot.addWidget(section)
    section.show()
    section.set_detail(await detail(plan={"phase": "planning", "subtasks": []}))
    assert section.plan.isVisible() and not section.goal.isVisible()
    assert section.plan.rows[0].title.text() == "Planning the parts…"
    section.set_detail(await detail(plan=PLAN))
    assert section.plan.rows[2].meta.toolTip() == "Not started · after “查 AWS 价格” and “查 GCP 价格”"


async def test_a_plain_task_shows_neither(qtbot: QtBot) -> None:
    section = TaskPlanSection()
    qtbot.addWidget(section)
    section.show()
    section.set_detail(await detail(plan=PLAN, goal=GOAL))
    section.set_detail(await detail())
    assert not section.isVisible()

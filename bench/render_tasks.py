"""Render background tasks in the window to PNG files, in both schemes, to look at them.

    .venv/bin/python -m bench.render_tasks [OUT_DIR] [--lang zh|en]

Runs offscreen. For both schemes it writes into OUT_DIR (default /tmp/errand-shots):
tasks-chat-<scheme>-<lang>.png (a reply with its task chips, and a task's result),
tasks-list-<scheme>-<lang>.png, tasks-detail-<scheme>-<lang>.png (a working task: 约 $0.08 / $1.00 and
each run's cost), tasks-detail-budget-<scheme>-<lang>.png (改 opened, a refused amount said in place),
tasks-detail-cleanup-<scheme>-<lang>.png (an ended task: its folder's sizes and 「文件夹将于 … 清理」 with
保留, after 导出), tasks-detail-failed-<scheme>-<lang>.png and tasks-empty-<scheme>-<lang>.png.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import tempfile
import time
from pathlib import Path

from PySide6.QtWidgets import QApplication, QWidget

from bench.render_runner import render_main, settle
from core.activity_steps import ActivityStep
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade, run
from ui import i18n, theme
from ui.bridge import EventBridge
from ui.export_action import AskPath
from ui.main_window import MainWindow

DAY = 24 * 3600
MINUTE = 60

ACK = "好,后台开始调研三家云的 GPU 价格,好了告诉你,你可以继续聊别的。"
RESULT = (
    "GPU 价格调研好了:A100 包月最便宜的是 C 云,约 ¥7,800;B 云有包年折扣,但要预付。"
    "报告在任务文件夹里的 `report.md`。引用这条消息可以继续问。"
)
STEPS = (
    ActivityStep("model", "决定开一个后台任务", duration_ms=700, tokens_in=1100, tokens_out=120),
    ActivityStep("tool", "task_start GPU 价格调研", duration_ms=30),
    ActivityStep("model", "回复用户", duration_ms=600, tokens_in=1300, tokens_out=60),
)


def fill(chat: FakeChatFacade, tasks: FakeTaskFacade) -> tuple[str, str, str, str]:
    now = time.time()
    # Folders that exist, so the detail offers 打开.
    workspace = Path(tempfile.gettempdir()) / "errand-render/bots/tiantian/workspace/tasks"
    folder = workspace / "gpu-prices-3f2a1c9e0b7d"
    folder.mkdir(parents=True, exist_ok=True)
    downloads = workspace / "tidy-downloads-8b41d07c2e95"
    downloads.mkdir(parents=True, exist_ok=True)
    chat.add_conversation("整理下载目录", "已经按类型整理好了 214 个文件。", updated_at=now - 3 * DAY)
    cid = chat.add_conversation("GPU 价格调研").id
    gpu = tasks.add_task(
        "GPU 价格调研",
        stage="working",
        latest_line="已比较 3 家,正在核对 B 云的包年价",
        words="帮我调研一下三家云的 GPU 价格,A100 和 H100 都要,包月和按小时都比一比,好了告诉我。",
        folder=str(folder),
        conversation_id=cid,
        created_at=now - 12 * MINUTE,
        updated_at=now - MINUTE,
        spent_usd=0.08,
        folder_bytes=1_480_000,
        session_bytes=356_000,
        runs=[
            run(
                "launch",
                "ended",
                "needs_you",
                steps=21,
                started_at=now - 12 * MINUTE,
                ended_at=now - 9 * MINUTE,
                cost_usd=0.05,
            ),
            run("answer", "running", steps=13, started_at=now - 5 * MINUTE, cost_usd=0.03),
        ],
    )
    report = tasks.add_task(
        "竞品周报",
        stage="working/asking",
        latest_line="三家的更新日志都读完了,正在写对比表",
        conversation_id=cid,
        updated_at=now - 20 * MINUTE,
    )
    tasks.add_task(
        "季度报告 PPT",
        stage="needs-you/answer",
        latest_line="要用哪一版的品牌模板?公司盘里有 2024 和 2025 两版。",
        conversation_id=cid,
        updated_at=now - 40 * MINUTE,
    )
    failed = tasks.add_task(
        "清理旧构建",
        stage="failed",
        latest_line="build/ 目录在工作区外面,没有权限删除",
        words="把旧的构建产物清理掉",
        conversation_id=cid,
        updated_at=now - 2 * 3600,
        runs=[
            run(
                "launch",
                "ended",
                "failed",
                steps=6,
                started_at=now - 2 * 3600 - 40,
                ended_at=now - 2 * 3600,
                error="rm: cannot remove '/home/me/src/app/build': Permission denied",
            )
        ],
    )
    done = tasks.add_task(
        "整理下载目录",
        stage="ready",
        latest_line="按类型整理好了 214 个文件,重复的 12 个放进了「待删除」",
        words="帮我把下载目录按类型整理一下,重复的先别删。",
        folder=str(downloads),
        conversation_id=cid,
        created_at=now - 31 * DAY,
        updated_at=now - 21 * DAY,
        spent_usd=0.02,
        spent_other={"CNY": 0.12},
        unpriced_calls=1,
        folder_bytes=48_300_000,
        session_bytes=212_000,
        cleanup_at=now + 9 * DAY,
        runs=[
            run(
                "launch",
                "ended",
                "done",
                steps=17,
                started_at=now - 21 * DAY - 4 * MINUTE,
                ended_at=now - 21 * DAY,
                cost_usd=0.02,
                cost_other={"CNY": 0.12},
                unpriced_calls=1,
            )
        ],
    )
    tasks.add_task("翻译 README", stage="stopped", conversation_id=cid, updated_at=now - 4 * DAY)
    tasks.add_task("去年的旧任务", stage="ready", conversation_id=cid, updated_at=now - 90 * DAY)

    chat.add_message(cid, "user", "帮我调研一下三家云的 GPU 价格,A100 和 H100 都要,包月和按小时都比一比。")
    chat.add_message(
        cid,
        "assistant",
        ACK,
        steps=STEPS,
        duration_ms=1400,
        task_chips=[t for t in (tasks.chip(gpu.id), tasks.chip(report.id)) if t is not None],
    )
    chat.add_message(cid, "user", "顺便把下载目录也整理一下")
    chat.add_message(
        cid,
        "assistant",
        "好,这个也放到后台做。",
        task_chips=[t for t in (tasks.chip(done.id),) if t is not None],
    )
    chat.add_message(cid, "assistant", RESULT, task_id=gpu.id)
    chat.add_message(
        cid,
        "error",
        "「清理旧构建」没做完:build/ 目录在工作区外面,我没有权限删除。把它移进工作区,或者回复「停止」。",
        task_id="t_failed",
    )
    return cid, gpu.id, failed.id, done.id


def save_to(path: Path) -> AskPath:
    """Answers the save dialog with `path`, as if the person had chosen it."""

    async def ask(_parent: QWidget, _suggested: Path) -> Path | None:
        return path

    return ask


async def render(app: QApplication, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language) -> list[Path]:
    i18n.use_language(lang)
    theme.apply_theme(app, scheme)
    chat = FakeChatFacade(bot_name="天天")
    tasks = FakeTaskFacade(chat)
    tasks.chip_lang = lang
    bridge = EventBridge(chat.bus)
    window = MainWindow(chat, bridge, tasks=tasks)
    window.resize(1120, 820)
    window.show()
    _cid, gpu, failed, done = fill(chat, tasks)
    await window.refresh()
    window.chat_view.composer.set_text("")
    await settle()
    paths = []

    def grab(name: str) -> None:
        path = out_dir / f"tasks-{name}-{scheme}-{lang}.png"
        window.grab().save(str(path))
        paths.append(path)

    grab("chat")
    window.show_tasks()
    await settle()
    grab("list")
    window.open_task(gpu, back_to="list")
    await settle()
    grab("detail")
    detail = window.task_detail
    if detail is not None:
        detail.budget.open_editor()
        detail.budget.input.setText("0.05")  # below what is spent: refused, said in place
        detail.budget.save()
        await settle()
        grab("detail-budget")
        detail.budget.close_editor()
        detail.export.ask = save_to(out_dir / f"tasks-export-{scheme}-{lang}.md")
    window.open_task(done, back_to="list")
    await settle()
    if detail is not None:
        detail.export.start()
        await settle()
    grab("detail-cleanup")
    window.open_task(failed, back_to="list")
    await settle()
    grab("detail-failed")

    for task in await tasks.list_tasks():
        tasks.remove_task(task.id)
    window.show_tasks()
    await settle()
    grab("empty")

    window.shutdown()
    bridge.close()
    window.close()
    window.deleteLater()
    return paths


def main() -> None:
    render_main(__doc__, render)


if __name__ == "__main__":
    main()

"""Render the whole window (sidebar with bots, chat, bot info panel, task detail) to PNG files, to look at.

    .venv/bin/python -m bench.render_window [OUT_DIR] [--lang zh|en]

Runs offscreen. For both schemes it writes into OUT_DIR (default /tmp/errand-shots) window-<scene>-<scheme>-
<lang>.png for these scenes: empty (first start: one bot, one empty conversation, nothing drawn when
healthy), chatting (two bots, a reply streaming), working (a task works: the bot's ring is green), needs
(a question waits: amber ring, 「需要你 1」), detail (a task's detail in the main pane, a run unfolded),
panel (the bot's info panel beside the chat: channel, approval, tasks with 已结束 unfolded) and
panel-detail (a task opened in place in the panel).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import tempfile
import time
from pathlib import Path

from PySide6.QtWidgets import QApplication

from bench.render_runner import render_main, settle
from core.activity_steps import ActivityStep
from core.bots.views import BotActivity
from core.sidebar_state import BotActivityReader
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade, run
from ui import i18n, theme
from ui.bridge import EventBridge
from ui.main_window import MainWindow

MINUTE = 60
DAY = 24 * 3600
STEPS = [
    ActivityStep(
        "model", "deepseek-chat", "先列出三家云的价格页", duration_ms=2100, tokens_in=1800, tokens_out=240
    ),
    ActivityStep(
        "tool", "web_fetch: https://cloud-a.example/pricing/gpu", "A100 80G 包月 ¥8,400", duration_ms=900
    ),
    ActivityStep("tool", "web_fetch: https://cloud-b.example/gpu", "A100 包年 ¥86,000", duration_ms=1200),
    ActivityStep(
        "model", "deepseek-chat", "B 云的包年价要换算成月价", duration_ms=1700, tokens_in=2600, tokens_out=180
    ),
]


class LiveBots(FakeBotFacade):
    def __init__(self, chat: FakeChatFacade, tasks: FakeTaskFacade, attention: FakeAttentionFacade) -> None:
        super().__init__(chat.bus)
        self._reader = BotActivityReader(tasks, attention, chat, self)

    async def names(self) -> dict[str, str]:
        return {bot.id: bot.name for bot in await self.list()}

    async def activity(self, lang: str = "zh") -> list[BotActivity]:
        return await self._reader.read(lang)


async def render(app: QApplication, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language) -> list[Path]:
    i18n.use_language(lang)
    theme.apply_theme(app, scheme)
    chat = FakeChatFacade(bot_name="天天")
    tasks = FakeTaskFacade(chat)
    tasks.chip_lang = lang
    attention = FakeAttentionFacade(chat)
    bots = LiveBots(chat, tasks, attention)
    bots.add("天天", bot_id="bot-1", avatar="teal")
    bridge = EventBridge(chat.bus)
    window = MainWindow(chat, bridge, tasks=tasks, attention=attention, bots=bots)
    window.resize(1280, 820)
    window.show()
    paths: list[Path] = []

    def grab(name: str) -> None:
        path = out_dir / f"window-{name}-{scheme}-{lang}.png"
        window.grab().save(str(path))
        paths.append(path)

    await window.refresh()
    await settle()
    grab("empty")

    now = time.time()
    bots.add("哒哒", bot_id="bot-2", avatar="violet")
    gpu_chat = chat.add_conversation("GPU 价格调研", bot_id="bot-1")
    chat.add_conversation("整理下载目录", "已经按类型整理好了 214 个文件。", updated_at=now - 3 * DAY)
    weekly = chat.add_conversation(
        "竞品周报", "三家的更新日志都读完了。", bot_id="bot-2", updated_at=now - DAY
    )
    chat.add_message(
        gpu_chat.id, "user", "帮我调研一下三家云的 GPU 价格,A100 和 H100 都要,包月和按小时都比一比。"
    )
    chat.start_live_reply(gpu_chat.id)
    chat.stream(gpu_chat.id, "好,我先看一下三家云的价格页")
    window.conversation_list.select(gpu_chat.id)
    await settle()
    grab("chatting")

    folder = (
        Path(tempfile.gettempdir()) / "errand-render/bots/tiantian/workspace/tasks/gpu-prices-3f2a1c9e0b7d"
    )
    folder.mkdir(parents=True, exist_ok=True)
    chat.finish_reply(gpu_chat.id, "好,后台开始调研三家云的 GPU 价格,好了告诉你,你可以继续聊别的。")
    running = run("answer", "running", steps=4, started_at=now - 5 * MINUTE)
    gpu = tasks.add_task(
        "GPU 价格调研",
        latest_line="已比较 3 家,正在核对 B 云的包年价",
        words="帮我调研一下三家云的 GPU 价格,A100 和 H100 都要,包月和按小时都比一比。",
        folder=str(folder),
        folder_bytes=2_480_000,
        conversation_id=gpu_chat.id,
        created_at=now - 12 * MINUTE,
        spent_usd=0.08,
        runs=[run("launch", "ended", "needs_you", 21, now - 12 * MINUTE, now - 9 * MINUTE), running],
    )
    tasks.set_run_steps(gpu.id, running.id, STEPS)
    tasks.add_task("竞品周报", stage="working", bot_id="bot-2", conversation_id=weekly.id)
    deck = tasks.add_task(
        "季度报告 PPT", stage="working/asking", conversation_id=gpu_chat.id, updated_at=now - 20 * MINUTE
    )
    await settle()
    grab("working")

    attention.add_question(
        "季度报告 PPT",
        "要用哪一版的品牌模板?" if lang == "zh" else "Which brand template?",
        ["2024", "2025"],
        "2025",
        since=now - 2 * MINUTE,
        task_id=deck.id,
        conversation_id=gpu_chat.id,
        lang=lang,
    )
    await settle()
    grab("needs")

    window.open_task(gpu.id, back_to="chat")
    await settle()
    detail = window.task_detail
    if detail is not None and len(detail.runs) > 1:
        detail.runs[1].set_expanded(True)
    await settle()
    grab("detail")

    tasks.add_task("整理下载目录", stage="ready", conversation_id=gpu_chat.id, updated_at=now - DAY)
    tasks.add_task("翻译 README", stage="stopped", conversation_id=gpu_chat.id, updated_at=now - 4 * DAY)
    clean = tasks.add_task("清理旧构建", stage="needs-you/answer", conversation_id=gpu_chat.id)
    attention.add_approval("rm -rf build/", "清理旧构建", task_id=clean.id, lang=lang)
    window.show_chat()
    window.show_bot_panel("bot-1")
    await settle()
    panel = window.bot_panel
    if panel is not None and panel.ended_toggle is not None:
        panel.ended_toggle.setChecked(True)
    await settle()
    grab("panel")
    if panel is not None:
        panel.open_task(gpu.id)
    await settle()
    grab("panel-detail")

    window.shutdown()
    bridge.close()
    window.close()
    window.deleteLater()
    return paths


def main() -> None:
    render_main(__doc__, render)


if __name__ == "__main__":
    main()

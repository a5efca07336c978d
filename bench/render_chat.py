"""Render the chat window with a realistic conversation to PNG files, in both schemes, to look at it.

    .venv/bin/python -m bench.render_chat [OUT_DIR] [--lang zh|en]

Runs offscreen. For both schemes it writes chat-<scheme>-<lang>.png (scrolled to the end, as opened),
chat-<scheme>-<lang>-top.png and chat-files-<scheme>-<lang>.png (a message sent with files, and a pasted
picture and a file waiting in the composer, one refused as too large) into OUT_DIR (default
/tmp/errand-shots).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import asyncio
import tempfile
import time
from pathlib import Path

from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QApplication

from bench.render_runner import render_main
from core.activity_steps import ActivityStep
from core.chat.attachment import MAX_FILE_BYTES
from tests.fakes.fake_chat import FakeChatFacade
from ui import i18n, theme
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.message_widgets import AssistantMessage

DAY = 24 * 3600

REPLY = """已经查好了，按需实例的小时价（美元）：

| 云 | A100 80G | H100 80G |
|---|---:|---:|
| A 云 | 3.67 | 6.98 |
| B 云 | 4.10 | 7.35 |
| C 云 | 3.22 | — |

**C 云的 A100 最便宜**，但它暂时没有 H100。需要的话，我可以每天早上 8 点再查一次，降价时告诉你。"""

STEPS = (
    ActivityStep("model", "决定先查三家的价格页", duration_ms=900, tokens_in=1240, tokens_out=210),
    ActivityStep(
        "tool",
        "web_fetch https://cloud-a.example.com/pricing/gpu",
        detail="200 OK · 48 KB\n<table class='pricing'><tr><td>A100 80GB</td><td>$3.67/hr</td></tr>…",
        duration_ms=1100,
    ),
    ActivityStep(
        "tool",
        "read_file notes/prices.md",
        detail="FileNotFoundError: [Errno 2] No such file or directory: '/home/me/work/notes/prices.md'",
        ok=False,
        duration_ms=40,
    ),
    ActivityStep("model", "整理成表格并回答", duration_ms=1160, tokens_in=2410, tokens_out=380),
)

ERROR = (
    "模型服务 https://api.deepseek.com/v1 拒绝了请求（401 Unauthorized）：API 密钥无效或已过期。"
    "请在 设置 › 模型 里更新密钥，然后再试一次。"
)


def fill(facade: FakeChatFacade) -> str:
    now = time.time()
    facade.add_conversation("整理下载目录", "已经按类型整理好了 214 个文件。", updated_at=now - 3 * DAY)
    facade.add_conversation(
        "Weekly report draft", "The draft is ready: three sections, about 1,200 words.", updated_at=now - DAY
    )
    facade.add_conversation(
        "Translate the README", "Done. I kept the code blocks as they were.", updated_at=now - 2 * DAY
    )
    gpu = facade.add_conversation("GPU 价格调研").id
    facade.add_message(gpu, "user", "帮我比较一下三家云的 GPU 按小时价格，A100 和 H100 都要。")
    facade.add_message(gpu, "assistant", REPLY, steps=STEPS, duration_ms=3200)
    facade.add_message(gpu, "user", "Also check whether B cloud has a monthly plan, please.")
    facade.add_message(gpu, "error", ERROR)
    facade.add_message(gpu, "notice", "已切换到模型 deepseek-chat")
    facade.add_message(gpu, "user", "好了，再试一次")
    facade.start_live_reply(gpu)
    facade.add_step(
        gpu, ActivityStep("model", "打算先看 B 云的价格页", duration_ms=700, tokens_in=3100, tokens_out=96)
    )
    facade.add_step(gpu, ActivityStep("tool", "web_fetch https://cloud-b.example.com/pricing", duration_ms=0))
    facade.stream(gpu, "好的，正在重新查 B 云的包月方案。目前看到 B 云有**包月价**，A100 80G 每月约 ")
    facade.stream(gpu, "$2,150，折合每小时 2.95 美元，比按需便宜")
    return gpu


async def render(app: QApplication, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language) -> Path:
    i18n.use_language(lang)
    theme.apply_theme(app, scheme)
    facade = FakeChatFacade(bot_name="天天")
    bridge = EventBridge(facade.bus)
    window = MainWindow(facade, bridge)
    window.resize(1120, 860)
    window.show()
    fill(facade)
    await window.refresh()
    for widget in window.chat_view.message_widgets():
        if isinstance(widget, AssistantMessage) and widget.view.steps:
            widget.activity.set_expanded(True)
    window.chat_view.composer.set_text("")
    # Let the bridge's coalescing timer fire and layouts settle before grabbing.
    for _ in range(20):
        await asyncio.sleep(0.02)
    path = out_dir / f"chat-{scheme}-{lang}.png"
    window.grab().save(str(path))
    window.chat_view.scroll_to_top()
    await asyncio.sleep(0.05)
    window.grab().save(str(out_dir / f"chat-{scheme}-{lang}-top.png"))
    await render_files(window, facade, out_dir, scheme, lang)
    window.shutdown()
    bridge.close()
    window.close()
    window.deleteLater()
    return path


async def render_files(
    window: MainWindow, facade: FakeChatFacade, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language
) -> None:
    conversation = window.chat_view.conversation_id
    assert conversation is not None
    facade.add_message(
        conversation,
        "user",
        "帮我看看这张截图和这份报告\n[image: inbox/c_1/pasted-9f86d081884c.png]\n"
        "[file: inbox/c_1/季度报告.pdf]",
    )
    composer = window.chat_view.composer
    image = QImage(320, 200, QImage.Format.Format_RGB32)
    image.fill(QColor("#2f6bd8"))
    composer.add_image(image)
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "GPU 价格对比 2026-12.xlsx"
        report.write_bytes(b"x" * 183_000)
        huge = Path(folder) / "录屏.mp4"
        huge.touch()
        os.truncate(huge, MAX_FILE_BYTES + 5 * 1024 * 1024)
        composer.add_paths([report, huge])
    composer.set_text("对比一下")
    for _ in range(20):
        await asyncio.sleep(0.02)
    window.chat_view.scroll_to_bottom()
    await asyncio.sleep(0.05)
    window.grab().save(str(out_dir / f"chat-files-{scheme}-{lang}.png"))


async def render_one(
    app: QApplication, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language
) -> list[Path]:
    return [await render(app, out_dir, scheme, lang)]


def main() -> None:
    render_main(__doc__, render_one)


if __name__ == "__main__":
    main()

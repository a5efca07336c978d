"""Render the needs-you page (and the sidebar's 「需要你 N」) to PNG files, in both schemes, to look at it.

    .venv/bin/python -m bench.render_needs_you [OUT_DIR] [--lang zh|en]

Runs offscreen. For both schemes it writes into OUT_DIR (default /tmp/errand-shots):
needs-you-<scheme>-<lang>.png (a question with options and a default, an approval, a failed task),
needs-you-acting-<scheme>-<lang>.png (the reply box open on the question, a refused answer under the
approval) and needs-you-empty-<scheme>-<lang>.png (nothing waits: no sidebar row, the quiet page).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import argparse
import asyncio
import time
from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication

from core.errors import UnprocessableError
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from ui import i18n, theme
from ui.bridge import EventBridge
from ui.main_window import MainWindow

MINUTE = 60


def fill(chat: FakeChatFacade, attention: FakeAttentionFacade, lang: str) -> None:
    now = time.time()
    cid = chat.add_conversation("GPU 价格调研", "好\uff0c后台开始调研三家云的 GPU 价格。").id
    chat.add_conversation("整理下载目录", "已经按类型整理好了 214 个文件。", updated_at=now - 3600)
    if lang == "zh":
        attention.add_question(
            "GPU 价格调研",
            "比较包月价还是按小时价\uff1f",
            ["包月价", "按小时价"],
            "包月价",
            since=now - 2 * MINUTE,
            conversation_id=cid,
            lang=lang,
        )
        attention.add_approval(
            "rm -rf build/", "清理旧构建", since=now - 5 * MINUTE, conversation_id=cid, lang=lang
        )
        attention.add_failed_task(
            "季度报告 PPT",
            "公司盘里的品牌模板打不开\uff1a权限不够\uff08已重试 3 次\uff09",
            since=now - 3 * 3600,
            conversation_id=cid,
            lang=lang,
        )
    else:
        attention.add_question(
            "GPU prices",
            "Compare monthly or hourly prices?",
            ["Monthly", "Hourly"],
            "Monthly",
            since=now - 2 * MINUTE,
            conversation_id=cid,
            lang=lang,
        )
        attention.add_approval(
            "rm -rf build/", "Clean old builds", since=now - 5 * MINUTE, conversation_id=cid, lang=lang
        )
        attention.add_failed_task(
            "Quarterly deck",
            "The brand template on the shared drive can't be opened: no permission (tried 3 times)",
            since=now - 3 * 3600,
            conversation_id=cid,
            lang=lang,
        )


async def settle() -> None:
    # Let the bridge's coalescing timers fire and layouts settle before grabbing.
    for _ in range(20):
        await asyncio.sleep(0.02)


async def render(app: QApplication, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language) -> list[Path]:
    i18n.use_language(lang)
    theme.apply_theme(app, scheme)
    chat = FakeChatFacade(bot_name="天天")
    tasks = FakeTaskFacade(chat)
    attention = FakeAttentionFacade(chat)
    bridge = EventBridge(chat.bus)
    window = MainWindow(chat, bridge, tasks=tasks, attention=attention)
    window.resize(1120, 760)
    window.show()
    fill(chat, attention, lang)
    await window.refresh()
    await settle()
    paths = []

    def grab(name: str) -> None:
        path = out_dir / f"{name}-{scheme}-{lang}.png"
        window.grab().save(str(path))
        paths.append(path)

    window.show_needs_you()
    await settle()
    grab("needs-you")

    page = window.needs_you
    assert page is not None
    question, approval = page.rows[0], page.rows[1]
    assert question.reply_button is not None
    question.reply_button.click()
    question.reply_input.setText("包月价\uff0c但 H100 按小时" if lang == "zh" else "Monthly, but H100 hourly")
    attention.act_error = UnprocessableError("approval", "这个批准已经过期了" if lang == "zh" else "expired")
    approval.buttons[0].click()
    await settle()
    grab("needs-you-acting")
    attention.act_error = None

    attention.clear()
    await settle()
    grab("needs-you-empty")

    window.shutdown()
    bridge.close()
    window.close()
    window.deleteLater()
    return paths


async def render_all(app: QApplication, out_dir: Path, lang: i18n.Language) -> list[Path]:
    paths = []
    for scheme in ("light", "dark"):
        paths.extend(await render(app, out_dir, scheme, lang))
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out_dir", nargs="?", default="/tmp/errand-shots", type=Path)
    parser.add_argument("--lang", choices=["zh", "en"], default="zh")
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    lang: i18n.Language = "zh" if args.lang == "zh" else "en"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(app)) as runner:
        for path in runner.run(render_all(app, args.out_dir, lang)):
            print(path)


if __name__ == "__main__":
    main()

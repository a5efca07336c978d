"""Render the bot's 记忆 ledger to PNG files, in both schemes and both languages, to look at it.

    .venv/bin/python -m bench.render_memory [OUT_DIR] [--lang zh|en]

Runs offscreen (or under Xvfb with QT_QPA_PLATFORM=xcb) over the real MemoryService on a SQLite file in a
temporary folder. For each scheme and language (both languages unless --lang names one) it writes into
OUT_DIR (default /tmp/errand-shots):
memory-row-<scheme>-<lang>.png (the bot panel's overview with its 「记忆 · N 条 · 已满」 row),
memory-ledger-<scheme>-<lang>.png (the ledger: a note from a conversation, a task, a rule, one whose task is
gone, the person's own and an edited one, the full notice and the undo line after a delete) and
memory-editor-<scheme>-<lang>.png (a note being edited in place) and memory-add-refused-<scheme>-<lang>.png
(添加… refused for a note over the limit).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import qasync
from PySide6.QtWidgets import QApplication

from bench.render_runner import SCHEMES, settle
from core.clock import FakeClock
from core.memory import notebook
from core.memory.service import MemoryService
from core.store.database import Database
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from tests.memory_sources import BOT, CONVERSATION, RULE, TASK, Titles, seed_sources
from ui import i18n, theme
from ui.bridge import EventBridge
from ui.main_window import MainWindow

DAY = 24 * 3600


async def seed(db: Database, folder: Path, now: float, zh: bool) -> None:
    titles = (
        Titles("周报", "GPU 价格调研", "看 X 价格")
        if zh
        else Titles("Weekly report", "GPU prices", "Watch the price of X")
    )
    await db.write(lambda s: seed_sources(s, folder / "w", now, titles, tz="Asia/Shanghai"))


async def notes(memory: MemoryService, clock: FakeClock, zh: bool) -> str:
    """A few notes of each kind, days apart; returns the id of the one the render deletes."""
    said = [
        (
            f"chat-{CONVERSATION}",
            "用户希望回复用中文，简短，不要客套。" if zh else "The user wants short replies.",
        ),
        (
            f"task-{TASK}",
            "三家云里 Lambda 的 H100 包月价最低，约 $1.99/小时，按小时价会贵 30% 左右；每月初会变。"
            if zh
            else "Lambda's monthly H100 price was the lowest, about $1.99/h; hourly costs some 30% more. "
            "It changes at the start of each month.",
        ),
        (
            f"rule-{RULE}-4",
            "X 的价格一般在周一早上调整。" if zh else "X's price usually changes on Monday mornings.",
        ),
        (
            "task-t_000000000000",
            "发票每周五发给财务群。" if zh else "Invoices go to the finance group on Fridays.",
        ),
    ]
    for session_id, text in said:
        await memory.remember(BOT, session_id, text)
        clock.advance(3 * DAY)
    await memory.add(
        BOT,
        "项目的服务器是 build-2，部署前先问我。" if zh else "The server is build-2; ask me before a deploy.",
    )
    clock.advance(DAY)
    await memory.remember(BOT, f"chat-{CONVERSATION}", "周报周一交。" if zh else "Reports are due on Monday.")
    entry_id = (await memory.entries(BOT))[-1].id
    await memory.edit(BOT, entry_id, "周报周二上午交。" if zh else "Reports are due on Tuesday morning.")
    clock.advance(DAY)
    gone = await memory.add(BOT, "这条会被删掉。" if zh else "This one gets deleted.")
    return gone.id


async def refuse_one(memory: MemoryService, zh: bool) -> None:
    """A note refused for want of room. The limit is lowered for this one call, so the header keeps the
    real one; any later change in the ledger would make room and put the notice away."""
    limit = notebook.MAX_ENTRIES
    notebook.MAX_ENTRIES = len(await memory.entries(BOT))
    try:
        await memory.remember(BOT, f"chat-{CONVERSATION}", "还有一件事。" if zh else "One more thing.")
    except ValueError:
        pass
    finally:
        notebook.MAX_ENTRIES = limit


async def render(app: QApplication, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language) -> list[Path]:
    i18n.use_language(lang)
    theme.apply_theme(app, scheme)
    zh = lang == "zh"
    paths: list[Path] = []
    with tempfile.TemporaryDirectory() as folder:
        clock = FakeClock(start=time.time() - 20 * DAY)
        db = Database.for_data_dir(Path(folder) / "data", clock=clock)
        await db.open()
        await seed(db, Path(folder), clock.time(), zh)
        chat = FakeChatFacade(bot_name="天天")
        bots = FakeBotFacade(chat.bus)
        bots.add("天天", bot_id=BOT, avatar="teal")
        memory = MemoryService(db, clock, chat.bus, require_bot=bots.get)
        gone = await notes(memory, clock, zh)
        chat.add_conversation("周报" if zh else "Weekly report")
        tasks = FakeTaskFacade(chat)
        tasks.add_task("GPU 价格调研" if zh else "GPU prices", stage="working")
        bridge = EventBridge(chat.bus)
        window = MainWindow(
            chat, bridge, tasks=tasks, attention=FakeAttentionFacade(chat), bots=bots, memory=memory
        )
        window.resize(1180, 760)
        window.show()

        def save(name: str) -> None:
            path = out_dir / f"memory-{name}-{scheme}-{lang}.png"
            window.grab().save(str(path))
            paths.append(path)

        await refuse_one(memory, zh)
        await window.refresh()
        window.show_bot_panel(BOT)
        await settle()
        save("row")

        panel = window.bot_panel
        assert panel is not None and panel.memory_ledger is not None
        ledger = panel.memory_ledger
        shown = window.open_memory(BOT)
        if shown is not None:
            await shown
        ledger.delete(gone)
        await settle()
        await refuse_one(
            memory, zh
        )  # the delete made room: full again, to show the notice with the undo line
        await settle()
        save("ledger")

        editing = ledger.rows[2]
        editor = ledger.start_edit(editing.entry.id)
        assert editor is not None
        editor.input.setPlainText(editing.entry.text + (" 周一早上八点。" if zh else " At 8 on Monday."))
        await settle()
        save("editor")

        adding = ledger.start_add()
        adding.input.setPlainText(("太长了。" if zh else "Far too long. ") * (130 if zh else 40))
        adding.saved.emit(adding.text())
        await settle()
        save("add-refused")

        window.shutdown()
        bridge.close()
        window.close()
        window.deleteLater()
        await db.close()
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out_dir", nargs="?", default="/tmp/errand-shots", type=Path)
    parser.add_argument("--lang", choices=["zh", "en"], default=None, help="one language (default: both)")
    args = parser.parse_args()
    app = QApplication.instance() or QApplication([])
    assert isinstance(app, QApplication)
    app.setQuitOnLastWindowClosed(False)
    langs: list[i18n.Language] = [args.lang] if args.lang else ["zh", "en"]
    out_dir: Path = args.out_dir
    out_dir.mkdir(parents=True, exist_ok=True)

    async def render_all() -> list[Path]:
        return [
            path for lang in langs for scheme in SCHEMES for path in await render(app, out_dir, scheme, lang)
        ]

    with asyncio.Runner(loop_factory=lambda: qasync.QEventLoop(app)) as runner:
        for path in runner.run(render_all()):
            print(path)


if __name__ == "__main__":
    main()

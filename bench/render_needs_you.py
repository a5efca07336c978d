"""Render the needs-you page (and the sidebar's 「需要你 N」) to PNG files, in both schemes, to look at it.

    .venv/bin/python -m bench.render_needs_you [OUT_DIR] [--lang zh|en]

Runs offscreen. For both schemes it writes into OUT_DIR (default /tmp/errand-shots):
needs-you-<scheme>-<lang>.png (a question with options and a default, an approval, a failed task),
needs-you-acting-<scheme>-<lang>.png (the reply box open on the question, a refused answer under the
approval) and needs-you-empty-<scheme>-<lang>.png (nothing waits: no sidebar row, the quiet page).
The same asks in the conversation, as question cards: question-cards-<scheme>-<lang>.png (closed cards
with their grey lines, then an open question with a default and an open approval) and
question-cards-acting-<scheme>-<lang>.png (the reply box open, a refused approval, then both answered).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import time
from pathlib import Path

from PySide6.QtWidgets import QApplication

from bench.render_runner import render_main, settle
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


def fill_chat(chat: FakeChatFacade, attention: FakeAttentionFacade, lang: str) -> None:
    zh = lang == "zh"
    cid = chat.add_conversation("GPU 价格调研" if zh else "GPU prices").id
    _, old = attention.push_question(
        cid,
        "季度报告 PPT" if zh else "Quarterly deck",
        "用哪个模板?" if zh else "Which template should I use?",
        ["品牌模板 2024", "去年的模板"] if zh else ["Brand 2024", "Last year's"],
        task_id="t_deck",
    )
    assert old.question is not None
    chat.set_question(old.question.question_id, "answered", "品牌模板 2024" if zh else "Brand 2024")
    chat.add_message(
        cid,
        "assistant",
        "季度报告做好了,用的品牌模板 2024,已发给你。" if zh else "The quarterly deck is ready (Brand 2024).",
        task_id="t_deck",
    )
    _, withdrawn = attention.push_question(
        cid,
        "整理下载目录" if zh else "Tidy downloads",
        "安装包也要归档吗?" if zh else "Archive the installers too?",
        ["归档", "留着"] if zh else ["Archive", "Keep"],
        "留着" if zh else "Keep",
        task_id="t_tidy",
    )
    assert withdrawn.question is not None
    chat.set_question(withdrawn.question.question_id, "withdrawn")
    chat.add_message(
        cid,
        "user",
        "帮我调研三家云的 GPU 价格,顺便清理一下旧构建" if zh else "Compare GPU prices, and clean old builds",
    )
    chat.add_message(
        cid,
        "assistant",
        "好,后台开始调研三家云的 GPU 价格,好了告诉你,你可以继续聊别的。"
        if zh
        else "OK, I'm comparing GPU prices across three clouds in the background; I'll tell you when done.",
    )
    attention.push_question(
        cid,
        "GPU 价格调研" if zh else "GPU prices",
        "比较包月价还是按小时价?" if zh else "Compare monthly or hourly prices?",
        ["包月价", "按小时价"] if zh else ["Monthly", "Hourly"],
        "包月价" if zh else "Monthly",
        task_id="t_gpu",
    )
    attention.push_approval(
        cid,
        "recursive delete",
        "rm -rf build/",
        "清理旧构建" if zh else "Clean old builds",
        task_id="t_build",
    )


async def render_cards(
    app: QApplication, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language
) -> list[Path]:
    i18n.use_language(lang)
    theme.apply_theme(app, scheme)
    chat = FakeChatFacade(bot_name="天天")
    tasks = FakeTaskFacade(chat)
    attention = FakeAttentionFacade(chat)
    bridge = EventBridge(chat.bus)
    window = MainWindow(chat, bridge, tasks=tasks, attention=attention)
    window.resize(1120, 760)
    window.show()
    fill_chat(chat, attention, lang)
    await window.refresh()
    await settle()
    paths = []

    def grab(name: str) -> None:
        path = out_dir / f"{name}-{scheme}-{lang}.png"
        window.grab().save(str(path))
        paths.append(path)

    grab("question-cards")
    question, approval = [card for card in window.chat_view.question_cards() if card.is_open]
    assert question.bar.reply_button is not None
    question.bar.reply_button.click()
    question.bar.reply_input.setText("包月价,但 H100 按小时" if lang == "zh" else "Monthly, but H100 hourly")
    attention.act_error = UnprocessableError("approval", "这个批准已经过期了" if lang == "zh" else "expired")
    approval.bar.buttons[0].click()
    await settle()
    grab("question-cards-acting")
    attention.act_error = None
    attention.resolves = True
    question.bar.send_button.click()
    await settle()
    approval.bar.buttons[1].click()
    await settle()
    grab("question-cards-answered")

    window.shutdown()
    bridge.close()
    window.close()
    window.deleteLater()
    return paths


def main() -> None:
    render_main(__doc__, render, render_cards)


if __name__ == "__main__":
    main()

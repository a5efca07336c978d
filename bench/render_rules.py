"""Render rules in the window to PNG files, in both schemes, to look at them.

    .venv/bin/python -m bench.render_rules [OUT_DIR] [--lang zh|en]

Runs offscreen. For both schemes it writes into OUT_DIR (default /tmp/errand-shots):
rules-panel-<scheme>-<lang>.png (the bot panel's 任务 group: a task, then an observing, an acting, a
paused and a budget-paused rule with this month's cost, then 已结束), rules-detail-<scheme>-<lang>.png (a
rule opened in place, with 本月 约 $0.41 / $3.00 and its run log with each run's cost),
rules-detail-budget-<scheme>-<lang>.png (a rule paused at its monthly budget, after 导出),
rules-editor-<scheme>-<lang>.png (a new rule, with the preview) and rules-editor-error-<scheme>-<lang>.png
(an interval under 15 minutes, refused at its field).
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import time
from pathlib import Path

from PySide6.QtWidgets import QApplication, QWidget

from bench.render_runner import render_main, settle
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_rules import FakeRuleFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from ui import i18n, theme
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.rule_editor import RuleEditor

DAY = 24 * 3600
HOUR = 3600


async def render(app: QApplication, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language) -> list[Path]:
    i18n.use_language(lang)
    theme.apply_theme(app, scheme)
    zh = lang == "zh"
    chat = FakeChatFacade(bot_name="天天")
    tasks = FakeTaskFacade(chat)
    rules = FakeRuleFacade(chat.bus)
    bots = FakeBotFacade(chat.bus)
    bots.add("天天", bot_id="bot-1", avatar="teal")
    bridge = EventBridge(chat.bus)
    window = MainWindow(
        chat, bridge, tasks=tasks, attention=FakeAttentionFacade(chat), bots=bots, rules=rules
    )
    window.resize(1180, 760)
    window.show()
    paths: list[Path] = []

    def save(widget_name: str, pixmap_owner: MainWindow | RuleEditor) -> None:
        path = out_dir / f"rules-{widget_name}-{scheme}-{lang}.png"
        pixmap_owner.grab().save(str(path))
        paths.append(path)

    now = time.time()
    cid = chat.add_conversation("GPU 价格调研" if zh else "GPU prices").id
    tasks.add_task("GPU 价格调研" if zh else "GPU prices", stage="working", conversation_id=cid)
    tasks.add_task(
        "整理下载目录" if zh else "Tidy downloads", stage="ready", conversation_id=cid, updated_at=now - DAY
    )
    paused = rules.add_rule(
        "每日 issue 巡检" if zh else "Daily issue sweep",
        "每天早上看看仓库里新开的 issue,有要紧的告诉我" if zh else "Every morning, look at new issues",
        {"kind": "daily", "time": "07:30", "days": [0, 1, 2, 3, 4]},
        paused_reason="failures",
    )
    rules.add_rule(
        "issue 周报" if zh else "Issue digest",
        "每周一早上把上周的 issue 整理成周报发我" if zh else "Every Monday, sum up last week's issues",
        {"kind": "weekly", "time": "09:00", "days": [0]},
        month_cost_usd=1.2,
    )
    stock = rules.add_rule(
        "看 Y 库存" if zh else "Watch Y's stock",
        "每小时看看 Y 有没有货,有了就告诉我" if zh else "Every hour, see if Y is in stock",
        {"kind": "every", "minutes": 60},
        paused_reason="budget",
        month_cost_usd=3.02,
    )
    watch = rules.add_rule(
        "看 X 价格" if zh else "Watch the price of X",
        "每天早上看看 X 的价格,降到 200 以下告诉我"
        if zh
        else "Every morning, check the price of X and tell me when it drops under 200",
        {"kind": "daily", "time": "08:00"},
        mode="observe",
        version=2,
        month_cost_usd=0.41,
    )
    del paused
    rules.add_run(
        watch.id, now - 3 * DAY, outcome="skipped", reason="电脑没开" if zh else "the computer was off"
    )
    rules.add_run(
        watch.id,
        now - 2 * DAY,
        outcome="failed",
        reason="页面打不开(已重试 3 次)" if zh else "the page didn't load (tried 3 times)",
        cost_usd=0.01,
    )
    rules.add_run(watch.id, now - DAY, cost_usd=0.02)
    rules.add_run(watch.id, now - DAY - HOUR, outcome="done", cost_usd=0.003)
    rules.add_run(stock.id, now - HOUR, mode="act", cost_usd=0.09)
    rules.add_run(
        watch.id,
        now - HOUR,
        would="X 降价了,现在 ¥199(昨天 ¥259)" if zh else "X dropped to ¥199 (¥259 yesterday)",
        cost_usd=0.03,
    )

    await window.refresh()
    window.show_bot_panel("bot-1")
    await settle()
    panel = window.bot_panel
    if panel is not None and panel.ended_toggle is not None:
        panel.ended_toggle.setChecked(True)
    await settle()
    save("panel", window)

    if panel is not None:
        await panel.open_rule(watch.id)
    await settle()
    save("detail", window)

    if panel is not None and panel.rule_detail is not None:
        exported = out_dir / f"rules-export-{scheme}-{lang}.md"

        async def ask(_parent: QWidget, _suggested: Path) -> Path | None:
            return exported

        panel.rule_detail.export.ask = ask
        await panel.open_rule(stock.id)
        await settle()
        panel.rule_detail.export.start()
    await settle()
    save("detail-budget", window)

    editor = RuleEditor(rules, bot_id="bot-1", parent=window)
    editor.title_input.setText("看 Y 的库存" if zh else "Watch Y's stock")
    editor.words_input.setPlainText(
        "工作日早上看看 Y 有没有货,有了就告诉我" if zh else "On weekday mornings, see if Y is in stock"
    )
    editor.workdays.setChecked(True)
    editor.show()
    await settle()
    save("editor", editor)

    editor.set_kind("every")
    editor.minutes_input.setText("5")
    editor.submit()
    await settle()
    save("editor-error", editor)
    editor.reject()

    window.shutdown()
    bridge.close()
    window.close()
    window.deleteLater()
    return paths


def main() -> None:
    render_main(__doc__, render)


if __name__ == "__main__":
    main()

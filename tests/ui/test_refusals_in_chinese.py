"""With the UI in Chinese, a refused cron in the rule editor is said in Chinese, field name included (issue
17: English core refusals in the Chinese UI). The API keeps its English message."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_rules import FakeRuleFacade
from tests.ui.conftest import wait_until
from ui import i18n
from ui.rule_editor import RuleEditor


def has_chinese(words: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in words)


async def test_a_refused_cron_is_said_in_chinese_in_the_rule_editor(
    qtbot: QtBot, facade: FakeChatFacade
) -> None:
    i18n.use_language("zh")
    editor = RuleEditor(FakeRuleFacade(facade.bus), bot_id="bot-1")
    qtbot.addWidget(editor)
    editor.show()
    editor.title_input.setText("检查构建")
    editor.words_input.setPlainText("看看夜间构建有没有坏")
    editor.set_kind("cron")
    editor.cron_input.setText("61 * * * *")
    # The live preview under the field says it at once.
    await wait_until(lambda: "分钟" in editor.preview_label.text())
    assert "minute" not in editor.preview_label.text()

    editor.submit()
    await wait_until(lambda: bool(editor.field_error("schedule.cron")))
    said = editor.field_error("schedule.cron")
    assert said == "这个 cron 表达式无法使用：第 1 段（分钟）要在 0-59 之间，现在是 61。"
    assert "must be" not in said

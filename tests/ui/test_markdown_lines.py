"""A reply's line breaks stay line breaks (as in any chat app), except inside fenced code, which keeps its
own; Markdown structure (lists, tables, headings) still renders."""

from __future__ import annotations

from PySide6.QtGui import QFont
from pytestqt.qtbot import QtBot

from ui import markdown, theme


def shown(text: str) -> str:
    return markdown.render(text, QFont(), theme.colors()).toPlainText()


def test_two_lines_of_a_question_are_not_run_together(qtbot: QtBot) -> None:
    assert shown("Options: monthly / hourly\nNo answer means monthly") == (
        "Options: monthly / hourly\nNo answer means monthly"
    )


def test_fenced_code_lists_and_tables_keep_their_shape(qtbot: QtBot) -> None:
    assert markdown.hard_breaks("```\nx\ny\n```\nafter") == "```\nx\ny\n```\nafter"
    assert shown("- a\n- b") == "a\nb"
    assert shown("| a | b |\n|---|---|\n| 1 | 2 |").split() == ["a", "b", "1", "2"]

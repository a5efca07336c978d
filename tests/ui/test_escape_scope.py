"""Escape closes the reply box it was pressed in, and only that one.

Two questions with their reply boxes open at once (the needs-you list shows several) used to make Escape
ambiguous, so it closed neither: each box's Escape was live across the whole window."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QVBoxLayout, QWidget
from pytestqt.qtbot import QtBot

from tests.ui.conftest import wait_until
from ui.answer_bar import AnswerBar


async def test_escape_closes_only_the_reply_box_it_was_pressed_in(qtbot: QtBot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    layout = QVBoxLayout(window)
    first, second = AnswerBar(("Yes", "No"), "Reply…"), AnswerBar(("A", "B"), "Reply…")
    layout.addWidget(first)
    layout.addWidget(second)
    window.show()
    window.activateWindow()
    await wait_until(window.isActiveWindow)
    for bar in (first, second):
        assert bar.reply_button is not None
        QTest.mouseClick(bar.reply_button, Qt.MouseButton.LeftButton)
    assert first.reply_box.isVisible() and second.reply_box.isVisible()

    await wait_until(second.reply_input.hasFocus)
    QTest.keyClick(second.reply_input, Qt.Key.Key_Escape)

    await wait_until(lambda: not second.reply_box.isVisible())
    assert first.reply_box.isVisible()

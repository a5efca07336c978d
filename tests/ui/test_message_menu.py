"""A message's right-click menu offers only what applies (复制, 复制所选 while text is selected, 打开任务 on a
background task's message) and its hover says when it was said."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtGui import QGuiApplication
from pytestqt.qtbot import QtBot

from core.chat.views import MessageRole, MessageView
from ui.message_widgets import message_widget

SAID_AT = datetime(2026, 12, 3, 14, 5).timestamp()


def view(
    role: MessageRole = "assistant", text: str = "The **price** is 180.", task_id: str = ""
) -> MessageView:
    return MessageView(
        id=1, conversation_id="c1", role=role, text=text, state="done", created_at=SAID_AT, task_id=task_id
    )


def entries(widget: object) -> list[str]:
    menu = widget.menu()  # type: ignore[attr-defined]
    return [action.text() for action in menu.actions()]


def test_copy_puts_the_message_as_written_on_the_clipboard(qtbot: QtBot) -> None:
    widget = message_widget(view())
    qtbot.addWidget(widget)
    assert entries(widget) == ["Copy"]  # a plain reply: no task to open, nothing selected
    menu = widget.menu()
    menu.actions()[0].trigger()
    assert QGuiApplication.clipboard().text() == "The **price** is 180."
    assert widget.toolTip() == "2026-12-03 14:05"


def test_a_background_tasks_message_also_opens_its_task(qtbot: QtBot) -> None:
    widget = message_widget(view(task_id="t_0123456789ab"))
    qtbot.addWidget(widget)
    assert entries(widget) == ["Copy", "Open the task"]
    with qtbot.waitSignal(widget.taskOpened, timeout=1000) as opened:
        widget.menu().actions()[1].trigger()
    assert opened.args == ["t_0123456789ab"]


def test_a_selection_can_be_copied_on_its_own(qtbot: QtBot) -> None:
    widget = message_widget(view(role="user", text="check the GPU prices"))
    qtbot.addWidget(widget)
    widget.text_label.setSelection(6, 3)
    assert entries(widget) == ["Copy selection", "Copy"]
    widget.menu().actions()[0].trigger()
    assert QGuiApplication.clipboard().text() == "the"

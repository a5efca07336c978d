"""The rule editor after a refused save (docs/desktop.md#rule-editor): the error sits at the field it names,
wraps instead of being cut off, leaves every input its size, takes the cursor to that field and goes away as
soon as the field is edited."""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from core.errors import InvalidInputError
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_rules import FakeRuleFacade
from tests.ui.conftest import wait_until
from ui.rule_editor import RuleEditor, as_sentence, error_row


def made_editor(qtbot: QtBot, facade: FakeChatFacade) -> RuleEditor:
    editor = RuleEditor(FakeRuleFacade(facade.bus), bot_id="bot-1")
    qtbot.addWidget(editor)
    editor.show()
    editor.title_input.setText("Check the build")
    editor.words_input.setPlainText("Look at the nightly build and tell me if it broke")
    editor.set_kind("cron")
    return editor


def sizes(editor: RuleEditor) -> dict[str, QSize]:
    return {
        "cron": editor.cron_input.size(),
        "title": editor.title_input.size(),
        "words": editor.words_input.size(),
        "preview": editor.preview_label.size(),
    }


async def test_a_refused_cron_shows_at_its_field_keeps_sizes_takes_focus_and_clears_when_fixed(
    qtbot: QtBot, facade: FakeChatFacade
) -> None:
    editor = made_editor(qtbot, facade)
    editor.cron_input.setText("61 * * *")
    # Laid out: the form fits the dialog without a scroll bar.
    await wait_until(lambda: not editor.form_scroll.verticalScrollBar().isVisible())
    before = sizes(editor)

    editor.submit()
    await wait_until(lambda: bool(editor.field_error("schedule.cron")))
    row = editor.rows["schedule.cron"]
    assert row.error.isVisible()
    assert row.isAncestorOf(row.error)  # under the cron field, not at the foot of the dialog
    assert not editor.error.isVisible()
    assert editor.field_error("schedule.cron").startswith("This cron expression does not work")
    assert QApplication.focusWidget() is editor.cron_input
    assert editor.title_input.selectedText() == ""

    await wait_until(lambda: row.error.height() >= row.error.heightForWidth(row.error.width()))
    assert sizes(editor) == before  # no input was squeezed to make room for the error
    # Wrapped, never cut: the whole error is shown in the width it has.
    assert row.error.height() >= row.error.heightForWidth(row.error.width()) > 0
    assert row.error.geometry().right() <= row.width()

    editor.cron_input.setText("0 8 * * 1-5")
    assert editor.field_error("schedule.cron") == ""
    assert not row.error.isVisible()
    await wait_until(lambda: sizes(editor) == before)


async def test_a_refused_title_takes_the_cursor_to_the_title_and_clears_when_typed(
    qtbot: QtBot, facade: FakeChatFacade
) -> None:
    editor = made_editor(qtbot, facade)
    editor.cron_input.setText("0 8 * * *")
    editor.title_input.setText("")
    editor.cron_input.setFocus()
    editor.submit()
    await wait_until(lambda: bool(editor.field_error("title")))
    assert QApplication.focusWidget() is editor.title_input
    editor.title_input.setText("Stretch")
    assert editor.field_error("title") == ""


def test_an_error_about_the_whole_schedule_goes_to_the_field_the_kind_shows() -> None:
    assert error_row("schedule", "cron") == "schedule.cron"
    assert error_row("schedule", "every") == "schedule.minutes"
    assert error_row("schedule", "weekly") == "schedule"
    assert error_row("schedule.kind", "cron") == "schedule"


def test_the_cores_fragment_reads_as_a_sentence() -> None:
    assert as_sentence("needs five fields, got 4") == "Needs five fields, got 4."
    exc = InvalidInputError("schedule.cron", "needs five fields")
    assert exc.field == "schedule.cron"

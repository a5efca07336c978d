"""The 记忆 ledger in the bot panel, over the real MemoryService on a SQLite file (docs/memory.md#the-ledger):
the panel's 「记忆 · N 条」 row, every note with where it came from, adding a note of one's own in place, a
refused note saying the limit and changing nothing, editing and deleting with 撤销, the full notice, the
list following a note the bot kept, and needs-you's 「记忆已满」 opening the ledger."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QPushButton
from pytestqt.qtbot import QtBot

from core.attention.items import memory_full_item
from core.clock import FakeClock
from core.memory.service import MemoryService
from core.store.database import Database
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade
from tests.memory_sources import BOT, CONVERSATION, RULE, TASK, seed_sources
from tests.ui.conftest import wait_until
from ui.bot_panel import BotPanel
from ui.bridge import EventBridge
from ui.main_window import MainWindow
from ui.memory_ledger import MemoryLedger
from ui.memory_note import NoteEditor, NoteRow


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=time.time())


@pytest.fixture
async def db(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Database]:
    database = Database.for_data_dir(tmp_path / "data", clock=clock)
    await database.open()
    now = clock.time()
    await database.write(lambda s: seed_sources(s, tmp_path / "w", now))
    yield database
    await database.close()


@pytest.fixture
def memory(db: Database, clock: FakeClock, facade: FakeChatFacade, bots: FakeBotFacade) -> MemoryService:
    # On the fake chat's bus: the window's bridge hears its MemoryChanged, as it hears the host's.
    return MemoryService(db, clock, facade.bus, require_bot=bots.get)


@pytest.fixture
def attention(facade: FakeChatFacade) -> FakeAttentionFacade:
    return FakeAttentionFacade(facade)


@pytest.fixture
def memory_window(
    qtbot: QtBot,
    facade: FakeChatFacade,
    bridge: EventBridge,
    tasks: FakeTaskFacade,
    attention: FakeAttentionFacade,
    bots: FakeBotFacade,
    memory: MemoryService,
) -> Iterator[MainWindow]:
    made = MainWindow(facade, bridge, tasks=tasks, attention=attention, bots=bots, memory=memory)
    qtbot.addWidget(made)
    made.resize(1180, 760)
    made.show()
    yield made
    made.shutdown()


async def open_panel(window: MainWindow) -> BotPanel:
    if window.bot_panel is not None and window.bot_panel.isVisible():
        return window.bot_panel
    await window.refresh()
    await wait_until(lambda: window.bot_view(BOT) is not None)
    assert window.panel_button is not None
    QTest.mouseClick(window.panel_button, Qt.MouseButton.LeftButton)
    panel = window.bot_panel
    assert panel is not None
    await wait_until(panel.isVisible)
    return panel


async def open_ledger(window: MainWindow) -> tuple[BotPanel, MemoryLedger]:
    panel = await open_panel(window)
    await wait_until(lambda: panel.memory_line() is not None)
    QTest.mouseClick(panel.memory_row, Qt.MouseButton.LeftButton)
    ledger = panel.memory_ledger
    assert ledger is not None
    await wait_until(lambda: panel.showing_memory() and ledger.usage_label.isVisible())
    return panel, ledger


async def click(button: QPushButton) -> None:
    """A person's click: once the button is on screen, laid out and enabled."""
    await wait_until(lambda: button.isVisible() and button.isEnabled() and not button.rect().isEmpty())
    QTest.mouseClick(button, Qt.MouseButton.LeftButton)


def row(ledger: MemoryLedger, text: str) -> NoteRow:
    return next(r for r in ledger.rows if r.entry.text == text)


def editor_of(note: NoteRow) -> NoteEditor:
    assert note.editor is not None and note.editing
    return note.editor


async def test_every_note_is_listed_oldest_first_with_where_it_came_from(
    memory_window: MainWindow, memory: MemoryService, clock: FakeClock
) -> None:
    await memory.remember(BOT, f"chat-{CONVERSATION}", "The user wants replies in English.")
    clock.advance(1)
    await memory.remember(BOT, f"task-{TASK}", "The build server is build-2.")
    clock.advance(1)
    await memory.remember(BOT, f"rule-{RULE}-3", "X was 259 on Monday.")
    clock.advance(1)
    await memory.remember(BOT, "task-t_000000000000", "Invoices go out on Fridays.")  # a task since deleted
    clock.advance(1)
    await memory.add(BOT, "My name is Lin.")

    panel = await open_panel(memory_window)
    await wait_until(lambda: panel.memory_line() == "Memory · 5 notes")
    _, ledger = await open_ledger(memory_window)

    assert ledger.note_texts() == [
        "The user wants replies in English.",
        "The build server is build-2.",
        "X was 259 on Monday.",
        "Invoices go out on Fridays.",
        "My name is Lin.",
    ]
    sources = [line.split(" · ", 1)[1] for line in ledger.meta_lines()]
    assert sources == [
        "from the conversation “Weekly report”",
        "from the task “GPU prices”",
        "from the rule “Watch X”",
        "from a deleted task",
        "written by you",
    ]
    assert all(line.startswith("Today ") for line in ledger.meta_lines())
    chars = sum(len(text) for text in ledger.note_texts())
    assert ledger.usage_label.text() == f"5 notes · {chars} of 6,000 characters used"
    assert not ledger.full_box.isVisible() and not ledger.undo_box.isVisible()
    assert (
        memory_window.bot_panel is not None and memory_window.bot_panel.memory_back_button.text() == "‹ 天天"
    )


async def test_an_empty_notebook_says_what_it_is_for_and_a_note_is_added_in_place(
    memory_window: MainWindow, memory: MemoryService
) -> None:
    panel = await open_panel(memory_window)
    await wait_until(lambda: panel.memory_line() == "Memory · nothing yet")
    _, ledger = await open_ledger(memory_window)
    assert ledger.empty_label.isVisible() and "天天 writes down here" in ledger.empty_label.text()

    await click(ledger.add_button)
    editor = ledger.add_editor
    assert editor is not None and editor.isVisible() and not ledger.add_button.isVisible()
    assert editor.count_label.text() == "0/500"
    QTest.keyClicks(editor.input, "Reports go to the finance group")
    assert editor.count_label.text() == "31/500"
    await click(editor.save_button)

    await wait_until(lambda: ledger.note_texts() == ["Reports go to the finance group"])
    [entry] = await memory.entries(BOT)
    assert (entry.text, entry.source_kind, entry.edited_by) == (
        "Reports go to the finance group",
        "person",
        "person",
    )
    assert ledger.meta_lines()[0].endswith(" · written by you")
    assert not editor.isVisible() and ledger.add_button.isVisible() and not ledger.empty_label.isVisible()
    await wait_until(lambda: panel.memory_line() == "Memory · 1 note")

    # The same words again keep the one note, and the editor says so.
    await click(ledger.add_button)
    QTest.keyClicks(editor.input, "Reports go to the finance group")
    QTest.keyClick(editor.input, Qt.Key.Key_Return)  # Enter saves, as 保存 does
    await wait_until(editor.error.isVisible)
    assert editor.error.text() == "That is already in memory."
    assert len(await memory.entries(BOT)) == 1


async def test_a_note_over_the_limit_shows_the_limit_and_changes_nothing(
    memory_window: MainWindow, memory: MemoryService
) -> None:
    kept = await memory.add(BOT, "Short and true.")
    _, ledger = await open_ledger(memory_window)

    await click(ledger.add_button)
    editor = ledger.add_editor
    assert editor is not None
    editor.input.setPlainText("x" * 501)
    assert editor.count_label.text() == "501/500" and editor.count_label.property("role") == "danger"
    await click(editor.save_button)
    await wait_until(editor.error.isVisible)
    assert editor.error.text() == (
        "A note holds at most 500 characters; this one has 501. Keep one short fact per note."
    )
    assert editor.text() == "x" * 501 and editor.isVisible()  # the words stay, to shorten
    QTest.keyClicks(editor.input, "y")
    assert not editor.error.isVisible()  # an old refusal goes once the words change

    note = row(ledger, "Short and true.")
    await click(note.edit_button)
    edit = editor_of(note)
    edit.input.setPlainText("   ")
    await click(edit.save_button)
    await wait_until(edit.error.isVisible)
    assert edit.error.text() == "Write something first."

    assert [(e.id, e.text) for e in await memory.entries(BOT)] == [(kept.id, "Short and true.")]
    assert ledger.note_texts() == ["Short and true."] and not ledger.undo_box.isVisible()


async def test_an_edit_reaches_the_store_and_undo_gives_the_note_its_words_back(
    memory_window: MainWindow, memory: MemoryService
) -> None:
    await memory.remember(BOT, f"chat-{CONVERSATION}", "The server is build-2.")
    _, ledger = await open_ledger(memory_window)

    note = row(ledger, "The server is build-2.")
    await click(note.edit_button)
    editor = editor_of(note)
    assert editor.text() == "The server is build-2." and not note.text_label.isVisible()
    editor.input.setPlainText("The server is build-3.")
    await click(editor.save_button)

    await wait_until(lambda: ledger.note_texts() == ["The server is build-3."])
    [entry] = await memory.entries(BOT)
    assert (entry.text, entry.edited_by) == ("The server is build-3.", "person")
    assert ledger.meta_lines()[0].endswith(" · from the conversation “Weekly report” · edited by you")
    assert not note.editing and note.text_label.isVisible()
    assert ledger.undo_box.isVisible() and ledger.undo_label.text() == "A note was changed"

    await click(ledger.undo_button)
    await wait_until(lambda: ledger.note_texts() == ["The server is build-2."])
    assert [e.text for e in await memory.entries(BOT)] == ["The server is build-2."]
    await wait_until(lambda: not ledger.undo_box.isVisible())


async def test_undo_brings_a_deleted_note_back_with_the_same_id(
    memory_window: MainWindow, memory: MemoryService, clock: FakeClock
) -> None:
    first = await memory.add(BOT, "First.")
    clock.advance(1)
    gone = await memory.add(BOT, "Second.")
    clock.advance(1)
    await memory.add(BOT, "Third.")
    panel, ledger = await open_ledger(memory_window)

    await click(row(ledger, "Second.").delete_button)
    await wait_until(lambda: ledger.note_texts() == ["First.", "Third."])
    assert [e.text for e in await memory.entries(BOT)] == ["First.", "Third."]
    assert ledger.undo_label.text() == "A note was deleted" and ledger.undo_box.isVisible()
    await wait_until(lambda: panel.memory_line() == "Memory · 2 notes")

    await click(ledger.undo_button)
    await wait_until(lambda: ledger.note_texts() == ["First.", "Second.", "Third."])
    back = [e for e in await memory.entries(BOT) if e.text == "Second."]
    assert [(e.id, e.created_at) for e in back] == [(gone.id, gone.created_at)]
    assert ledger.rows[0].entry.id == first.id
    await wait_until(lambda: not ledger.undo_box.isVisible())


async def test_the_full_notice_appears_when_a_note_was_refused_and_goes_with_got_it(
    memory_window: MainWindow, memory: MemoryService, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    monkeypatch.setattr("core.memory.notebook.MAX_ENTRIES", 2)
    await memory.add(BOT, "One.")
    clock.advance(1)  # notes of the same second are listed in the order of their random ids
    await memory.add(BOT, "Two.")
    panel, ledger = await open_ledger(memory_window)
    assert not ledger.full_box.isVisible()
    assert ledger.usage_label.text() == "2 of 2 notes · 8 of 6,000 characters used"

    with pytest.raises(ValueError, match="memory is full"):
        await memory.remember(BOT, f"chat-{CONVERSATION}", "Three.")
    await wait_until(ledger.full_box.isVisible)
    assert ledger.full_title.text() == "Memory is full · just now"
    assert ledger.full_line.text().startswith("天天 couldn't keep a new note")
    await wait_until(lambda: panel.memory_line() == "Memory · 2 of 2 notes · full")

    # Adding by hand is refused in the core's words, and nothing changes.
    await click(ledger.add_button)
    editor = ledger.add_editor
    assert editor is not None
    QTest.keyClicks(editor.input, "Four.")
    await click(editor.save_button)
    await wait_until(editor.error.isVisible)
    assert editor.error.text().startswith("The memory is full (2 of ")
    assert [e.text for e in await memory.entries(BOT)] == ["One.", "Two."]

    await click(ledger.dismiss_button)
    await wait_until(lambda: not ledger.full_box.isVisible())
    assert await memory.full_bots() == {}
    await wait_until(lambda: panel.memory_line() == "Memory · 2 of 2 notes")


async def test_the_ledger_follows_a_note_the_bot_kept(
    qtbot: QtBot, memory_window: MainWindow, memory: MemoryService, bridge: EventBridge, clock: FakeClock
) -> None:
    await memory.add(BOT, "Mine.")
    clock.advance(1)
    panel, ledger = await open_ledger(memory_window)
    await click(row(ledger, "Mine.").edit_button)
    editor = editor_of(row(ledger, "Mine."))
    QTest.keyClicks(editor.input, " Half-typed")

    with qtbot.waitSignal(bridge.memoryChanged, timeout=3000) as changed:
        await memory.remember(BOT, f"task-{TASK}", "The deck is due Thursday.")
    assert changed.args == [BOT]
    await wait_until(lambda: ledger.note_texts() == ["Mine.", "The deck is due Thursday."])
    assert ledger.meta_lines()[1].endswith(" · from the task “GPU prices”")
    # The edit under way kept its words through the re-read.
    assert row(ledger, "Mine.").editing and editor.text() == "Mine. Half-typed"

    panel.show_overview()
    await memory.remember(BOT, f"chat-{CONVERSATION}", "Lunch is at noon.")
    await wait_until(lambda: panel.memory_line() == "Memory · 3 notes")

    # A row kept through that re-read, opened for editing, gets the room its editor needs.
    await panel.open_memory()
    deck = row(ledger, "The deck is due Thursday.")
    await click(deck.edit_button)
    opened = editor_of(deck)
    await wait_until(
        lambda: opened.height() >= opened.sizeHint().height() and deck.height() > opened.height()
    )
    assert not row(ledger, "Mine.").editing  # one note at a time


async def test_escape_in_the_editor_cancels_the_edit_and_leaves_the_panel_open(
    memory_window: MainWindow, memory: MemoryService
) -> None:
    await memory.add(BOT, "Mine.")
    panel, ledger = await open_ledger(memory_window)
    note = row(ledger, "Mine.")
    await click(note.edit_button)
    editor = editor_of(note)
    QTest.keyClicks(editor.input, " changed")
    QTest.keyClick(editor.input, Qt.Key.Key_Escape)

    assert not note.editing and note.text_label.text() == "Mine."
    assert panel.isVisible() and panel.showing_memory()
    assert [e.text for e in await memory.entries(BOT)] == ["Mine."]


async def test_open_on_memory_full_in_needs_you_opens_the_ledger(
    memory_window: MainWindow, memory: MemoryService, attention: FakeAttentionFacade
) -> None:
    await memory.add(BOT, "One.")
    attention.add(memory_full_item(BOT, "天天", time.time(), lang="en"))
    await memory_window.refresh()
    memory_window.show_needs_you()
    needs = memory_window.needs_you
    assert needs is not None
    await wait_until(lambda: len(needs.rows) == 1 and needs.rows[0].isVisible())
    needs_row = needs.rows[0]
    assert needs_row.button_texts() == ["Open memory", "Dismiss"]

    await click(needs_row.button("Open memory"))

    panel = memory_window.bot_panel
    assert panel is not None
    await wait_until(lambda: panel.isVisible() and panel.showing_memory())
    ledger = panel.memory_ledger
    assert ledger is not None
    await wait_until(lambda: ledger.note_texts() == ["One."])
    assert memory_window.shown_pane() is memory_window.chat_view
    assert attention.acted == []  # opening only shows

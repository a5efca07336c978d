"""Full-text search in the store (migration 14 and core.store.search) on a real SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, update
from sqlalchemy.orm import Session

from core.store import bots, conversations, messages, rules, tasks
from core.store.database import create_store_engine
from core.store.migrations import MIGRATIONS, SEARCH_TABLES, run_migrations
from core.store.models import MessageRow, TaskRow
from core.store.search import StoredHit, has_index, query_words, search


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = create_store_engine(f"sqlite:///{tmp_path / 'errand.db'}")
    yield engine
    engine.dispose()


@pytest.fixture
def migrated(engine: Engine) -> Engine:
    run_migrations(engine, now=1.0)
    with Session(engine) as s, s.begin():
        bots.insert_bot(s, id="b_1", name="Bot", workspace="/ws", now=1.0)
        conversations.insert_conversation(s, id="c_1", bot_id="b_1", title="Trip", now=1.0)
        conversations.insert_conversation(s, id="c_2", bot_id="b_1", title="Other", now=1.0)
    return engine


def say(engine: Engine, text: str, *, conversation_id: str = "c_1", now: float = 10.0) -> int:
    with Session(engine) as s, s.begin():
        record = messages.insert_message(
            s, conversation_id=conversation_id, role="user", text=text, state="answered", now=now
        )
        return record.id


def find(engine: Engine, query: str, limit: int = 20) -> list[StoredHit]:
    with Session(engine) as s:
        return search(s, query, limit=limit, indexed=has_index(s))


def test_this_sqlite_has_trigram_so_the_index_is_built(migrated: Engine) -> None:
    # 3.34 brought the trigram tokenizer; the machine's SQLite is newer, so the index exists here.
    assert tuple(int(p) for p in sqlite3.sqlite_version.split(".")) >= (3, 34)
    with Session(migrated) as s:
        assert has_index(s)


def test_a_word_inside_an_old_message_is_found(migrated: Engine) -> None:
    wanted = say(migrated, "Please book the hotel near the Louvre museum", now=5.0)
    say(migrated, "something else entirely", now=6.0)
    hits = find(migrated, "louvre")
    assert [(h.kind, h.message_id, h.conversation_id, h.title) for h in hits] == [
        ("message", wanted, "c_1", "Trip")
    ]


def test_a_chinese_substring_is_found(migrated: Engine) -> None:
    wanted = say(migrated, "帮我查一下去成都的机票")
    assert [h.message_id for h in find(migrated, "成都的机票")] == [wanted]
    assert [h.message_id for h in find(migrated, "成都")] == [wanted]  # 2 characters: below trigrams


def test_one_and_two_character_queries_find_matches(migrated: Engine) -> None:
    wanted = say(migrated, "ok, go to 7")
    assert [h.message_id for h in find(migrated, "7")] == [wanted]
    assert [h.message_id for h in find(migrated, "go")] == [wanted]


def test_every_word_must_be_in_one_item(migrated: Engine) -> None:
    both = say(migrated, "flight to Chengdu on Friday")
    say(migrated, "flight to Beijing")
    assert [h.message_id for h in find(migrated, "flight friday")] == [both]
    assert [h.message_id for h in find(migrated, "flight 成都")] == []


def test_a_deleted_message_is_no_longer_found(migrated: Engine) -> None:
    gone = say(migrated, "a secret pineapple plan")
    with Session(migrated) as s, s.begin():
        s.delete(s.get(MessageRow, gone))
    assert find(migrated, "pineapple") == []


def test_an_edited_message_is_found_by_its_new_text(migrated: Engine) -> None:
    edited = say(migrated, "old wording here")
    with Session(migrated) as s, s.begin():
        s.execute(update(MessageRow).where(MessageRow.id == edited).values(text="brand new wording"))
    assert find(migrated, "old wording") == []
    assert [h.message_id for h in find(migrated, "brand new")] == [edited]


def test_tasks_and_rules_are_found_by_title_and_body(migrated: Engine, tmp_path: Path) -> None:
    with Session(migrated) as s, s.begin():
        tasks.insert_task(
            s,
            id="t_1",
            bot_id="b_1",
            conversation_id="c_1",
            title="Research laptops",
            brief="Compare ThinkPad and MacBook battery life",
            session_id="task-t_1",
            folder=str(tmp_path / "t_1"),
            permission="workspace-write",
            budget_usd=1.0,
            now=20.0,
        )
        rules.insert_rule(
            s,
            id="ru_1",
            bot_id="b_1",
            conversation_id="c_2",
            title="机票价格",
            instruction="每天早上8点看看去成都的机票，低于800告诉我",
            schedule={"kind": "daily", "at": "08:00"},
            tz="Asia/Shanghai",
            now=30.0,
        )
    assert [(h.kind, h.task_id, h.title) for h in find(migrated, "battery")] == [
        ("task", "t_1", "Research laptops")
    ]
    assert [(h.kind, h.task_id) for h in find(migrated, "laptops")] == [("task", "t_1")]
    assert [(h.kind, h.rule_id, h.conversation_id) for h in find(migrated, "成都")] == [
        ("rule", "ru_1", "c_2")
    ]
    with Session(migrated) as s, s.begin():
        s.execute(update(TaskRow).where(TaskRow.id == "t_1").values(brief="Compare screens"))
        rules.delete_rule(s, "ru_1")
    assert find(migrated, "battery") == []
    assert find(migrated, "成都的机票") == []


def test_newest_first_and_limited(migrated: Engine) -> None:
    ids = [say(migrated, f"report number {n}", now=float(n)) for n in range(1, 6)]
    hits = find(migrated, "report", limit=3)
    assert [h.message_id for h in hits] == list(reversed(ids))[:3]


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '""',
        'say "hi',
        "*",
        "foo*",
        "AND",
        "a AND b OR",
        "NOT",
        "(",
        ")",
        "NEAR(a b)",
        "col:x",
        "^",
        "%",
        "_",
        "\\",
        "'",
        "';--",
        "NEAR(abc def)",
        '"abc" OR "def"',
        "abc*",
        "-abc",
        "{abc}",
    ],
)
def test_query_syntax_characters_never_raise_and_are_plain_text(migrated: Engine, query: str) -> None:
    find(migrated, query)  # no error is the point: bad input is a result (perhaps none), never a crash


def test_special_characters_are_matched_literally(migrated: Engine) -> None:
    quoted = say(migrated, 'he said "hello" * 100% done_now')
    say(migrated, "plain words only")
    assert [h.message_id for h in find(migrated, '"hello"')] == [quoted]
    assert [h.message_id for h in find(migrated, "100%")] == [quoted]
    assert [h.message_id for h in find(migrated, "*")] == [quoted]
    assert [h.message_id for h in find(migrated, "e_n")] == [quoted]
    assert find(migrated, "%%") == []


def test_without_the_index_like_finds_the_same(migrated: Engine) -> None:
    wanted = say(migrated, "帮我查一下去成都的机票 tomorrow")
    with Session(migrated) as s:
        assert [h.message_id for h in search(s, "成都的 TOMORROW", limit=5, indexed=False)] == [wanted]


def test_migration_14_over_a_version_13_database_indexes_the_old_rows(engine: Engine) -> None:
    assert run_migrations(engine, now=1.0, migrations=MIGRATIONS[:13])[-1] == 13
    with engine.begin() as conn:
        # Migration 1 builds from today's models, but search is no model: nothing of it is there yet.
        names = {row[0] for row in conn.exec_driver_sql("SELECT name FROM sqlite_master")}
        assert not names & set(SEARCH_TABLES)
    with Session(engine) as s, s.begin():
        bots.insert_bot(s, id="b_1", name="Old", workspace="/ws", now=1.0)
        conversations.insert_conversation(s, id="c_1", bot_id="b_1", title="C", now=1.0)
        old = messages.insert_message(
            s, conversation_id="c_1", role="assistant", text="去成都的机票 is 780", state="done", now=5.0
        ).id

    assert run_migrations(engine, now=2.0, migrations=MIGRATIONS[:14]) == [14]

    assert [h.message_id for h in find(engine, "成都的机票")] == [old]
    later = say(engine, "成都的机票 dropped again", now=6.0)  # and the triggers keep it in step from now on
    assert [h.message_id for h in find(engine, "成都的机票")] == [later, old]


def test_a_control_character_is_no_word_and_matches_nothing_by_itself() -> None:
    assert query_words("\x00") == []
    assert query_words("gpu\x00price") == ["gpu", "price"]

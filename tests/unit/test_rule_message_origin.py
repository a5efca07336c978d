"""The message a push becomes names the rule it came from only when every delivery in it came from that one
rule (docs/desktop.md#chat-view): a digest of two rules' messages names neither."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from core.clock import FakeClock
from core.delivery.outbox import pushed_message, sole_rule
from core.store import bots, conversations, deliveries, messages
from core.store.database import Database
from core.store.deliveries import DeliveryRecord


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database.for_data_dir(tmp_path / "data", clock=FakeClock())
    await database.open()
    yield database
    await database.close()


def _queued(s: Session, id: str, rule_id: str) -> DeliveryRecord:
    record, _ = deliveries.insert_delivery(
        s,
        id=id,
        bot_id="b_1",
        conversation_id="c_1",
        purpose="rule",
        text=f"said by {id}",
        now=1.0,
        rule_id=rule_id,
    )
    return record


async def _stored_rule_ids(db: Database, groups: list[list[str]]) -> list[str]:
    def push(s: Session) -> list[str]:
        bots.insert_bot(s, id="b_1", name="Bot", workspace="/ws", now=1.0)
        conversations.insert_conversation(s, id="c_1", bot_id="b_1", title="", now=1.0)
        found: list[str] = []
        for n, group in enumerate(groups):
            live = [_queued(s, f"d{n}-{i}", rule) for i, rule in enumerate(group)]
            message = messages.get_message(s, pushed_message(s, live, "text", 2.0))
            assert message is not None
            found.append(message.rule_id)
        return found

    return await db.write(push)


async def test_a_lone_rule_delivery_and_a_digest_of_one_rules_deliveries_name_that_rule(db: Database) -> None:
    assert await _stored_rule_ids(db, [["ru_a"], ["ru_a", "ru_a"]]) == ["ru_a", "ru_a"]


async def test_a_digest_of_several_sources_names_no_rule(db: Database) -> None:
    assert await _stored_rule_ids(db, [["ru_a", "ru_b"], ["ru_a", ""]]) == ["", ""]


def test_sole_rule_of_nothing_is_no_rule() -> None:
    assert sole_rule([]) == ""

"""The user's price overrides (issue 7 item 1) against a real SQLite file: set, list, remove, every refusal
naming its field and changing nothing, persistence across a new PriceBook, and stored values that can't be
read skipped instead of crashing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from core.bus import EventBus
from core.changes import PricesChanged
from core.clock import FakeClock
from core.cost.price_book import MAX_OVERRIDES, OVERRIDES_KEY, PriceBook
from core.cost.price_facade import PriceOverrideView
from core.cost.prices import PriceOverride, Usage, price
from core.errors import ConflictError, InvalidInputError, NotFoundError
from core.store.database import Database

DEEPSEEK = {"input": 0.27, "output": "1.10", "cacheRead": "0.07", "cacheWrite": 0.27, "currency": "usd"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
async def db(data_dir: Path, clock: FakeClock) -> AsyncIterator[Database]:
    database = Database.for_data_dir(data_dir, clock=clock)
    await database.open()
    yield database
    await database.close()


@pytest.fixture
async def book(db: Database, clock: FakeClock) -> PriceBook:
    made = PriceBook(db, clock)
    await made.load()
    return made


async def stored(db: Database) -> str | None:
    def read(s: Any) -> str | None:
        row = s.execute(text("SELECT value FROM settings WHERE key = :k"), {"k": OVERRIDES_KEY}).first()
        return None if row is None else str(row[0])

    return await db.read(read)


async def store_raw(db: Database, value: str) -> None:
    def write(s: Any) -> None:
        s.execute(
            text("INSERT OR REPLACE INTO settings (key, value, updated_at) VALUES (:k, :v, 1.0)"),
            {"k": OVERRIDES_KEY, "v": value},
        )

    await db.write(write)


async def test_set_lists_and_prices_from_memory(book: PriceBook) -> None:
    view = await book.set("  deepseek-chat ", DEEPSEEK)

    assert view == PriceOverrideView("deepseek-chat", "0.27", "1.1", "0.07", "0.27", "USD")
    assert view.to_json() == {
        "model": "deepseek-chat",
        "input": "0.27",
        "output": "1.1",
        "cacheRead": "0.07",
        "cacheWrite": "0.27",
        "currency": "USD",
    }
    assert await book.list() == [view]
    assert book.overrides() == {
        "deepseek-chat": PriceOverride(
            Decimal("0.27"), Decimal("1.10"), Decimal("0.07"), Decimal("0.27"), "USD"
        )
    }
    cost = price(
        "deepseek-chat",
        "https://example.test/v1",
        Usage(1_000_000, 1_000_000),
        FakeClock().now(),
        book.overrides(),
    )
    assert cost is not None
    assert (cost.amount, cost.currency) == (Decimal("1.37"), "USD")


async def test_list_is_sorted_and_set_replaces(book: PriceBook) -> None:
    await book.set("qwen-max", {**DEEPSEEK, "currency": "CNY", "input": "2.4", "output": "9.6"})
    await book.set("deepseek-chat", DEEPSEEK)
    await book.set("deepseek-chat", {**DEEPSEEK, "output": "1500.00", "input": "1E+1"})

    listed = await book.list()
    assert [v.model for v in listed] == ["deepseek-chat", "qwen-max"]
    assert (listed[0].input, listed[0].output) == ("10", "1500")
    assert listed[1].currency == "CNY"
    assert set(book.overrides()) == {"deepseek-chat", "qwen-max"}


async def test_remove_and_an_unknown_model(book: PriceBook) -> None:
    await book.set("deepseek-chat", DEEPSEEK)
    await book.set("gpt-4o-mini", DEEPSEEK)
    held = book.overrides()

    await book.remove("deepseek-chat")
    assert [v.model for v in await book.list()] == ["gpt-4o-mini"]
    assert set(book.overrides()) == {"gpt-4o-mini"}
    assert set(held) == {"deepseek-chat", "gpt-4o-mini"}  # a mapping already handed out stays as it was

    with pytest.raises(NotFoundError):
        await book.remove("deepseek-chat")
    assert [v.model for v in await book.list()] == ["gpt-4o-mini"]


@pytest.mark.parametrize(
    ("model", "body", "field"),
    [
        ("deepseek-chat", {k: v for k, v in DEEPSEEK.items() if k != "output"}, "output"),
        ("deepseek-chat", {k: v for k, v in DEEPSEEK.items() if k != "currency"}, "currency"),
        ("deepseek-chat", {**DEEPSEEK, "cacheRead": None}, "cacheRead"),
        ("deepseek-chat", {**DEEPSEEK, "input": -0.01}, "input"),
        ("deepseek-chat", {**DEEPSEEK, "cacheWrite": "-1"}, "cacheWrite"),
        ("deepseek-chat", {**DEEPSEEK, "output": "a lot"}, "output"),
        ("deepseek-chat", {**DEEPSEEK, "output": "NaN"}, "output"),
        ("deepseek-chat", {**DEEPSEEK, "input": True}, "input"),
        ("deepseek-chat", {**DEEPSEEK, "input": "1e30"}, "input"),
        ("deepseek-chat", {**DEEPSEEK, "input": "0.000000000001"}, "input"),
        ("deepseek-chat", {**DEEPSEEK, "currency": "BTC"}, "currency"),
        ("deepseek-chat", {**DEEPSEEK, "currency": 840}, "currency"),
        ("deepseek-chat", {**DEEPSEEK, "inputPrice": 1}, "inputPrice"),
        ("deepseek-chat", {**DEEPSEEK, "zeta": 1, "alpha": 2}, "alpha"),
        ("deepseek-chat", ["not", "an", "object"], "price"),
        ("", DEEPSEEK, "model"),
        ("   ", DEEPSEEK, "model"),
        ("x" * 201, DEEPSEEK, "model"),
        ("deepseek\nchat", DEEPSEEK, "model"),
        ("deepseek\u200bchat", DEEPSEEK, "model"),
    ],
)
async def test_bad_input_is_refused_naming_the_field_and_changes_nothing(
    book: PriceBook, db: Database, model: str, body: object, field: str
) -> None:
    await book.set("qwen-max", {**DEEPSEEK, "currency": "CNY"})
    before_list, before_row, before_cache = await book.list(), await stored(db), dict(book.overrides())

    with pytest.raises(InvalidInputError) as refused:
        await book.set(model, body)

    assert refused.value.field == field
    assert refused.value.message.startswith(f"{field}: ")
    assert await book.list() == before_list
    assert await stored(db) == before_row
    assert dict(book.overrides()) == before_cache


async def test_missing_and_unknown_fields_say_so(book: PriceBook) -> None:
    with pytest.raises(InvalidInputError) as missing:
        await book.set("m", {k: v for k, v in DEEPSEEK.items() if k != "cacheWrite"})
    assert missing.value.message == "cacheWrite: is required: a price per million tokens"
    with pytest.raises(InvalidInputError) as unknown:
        await book.set("m", {**DEEPSEEK, "zeta": 1, "alpha": 2})
    assert "alpha" in unknown.value.message and "zeta" in unknown.value.message
    with pytest.raises(InvalidInputError) as negative:
        await book.set("m", {**DEEPSEEK, "output": -3})
    assert negative.value.message == "output: must be a number, zero or more"


async def test_a_model_name_may_hold_slashes_colons_and_chinese(book: PriceBook) -> None:
    for name in ("openai/gpt-4o-mini", "qwen2.5:7b", "通义千问-max", "x" * 200):
        await book.set(name, DEEPSEEK)
    assert len(await book.list()) == 4


async def test_the_number_of_overrides_is_bounded(book: PriceBook, db: Database) -> None:
    await store_raw(db, json.dumps({f"m{i}": {**DEEPSEEK, "currency": "USD"} for i in range(MAX_OVERRIDES)}))
    with pytest.raises(ConflictError):
        await book.set("one-more", DEEPSEEK)
    await book.set("m7", {**DEEPSEEK, "input": 3})  # replacing one is fine
    assert len(await book.list()) == MAX_OVERRIDES


async def test_persisted_across_a_new_price_book_on_the_same_dir(
    book: PriceBook, db: Database, data_dir: Path, clock: FakeClock
) -> None:
    await book.set("deepseek-chat", DEEPSEEK)
    await book.set("qwen-max", {**DEEPSEEK, "currency": "CNY"})
    await book.remove("qwen-max")
    await db.close()

    again = Database.for_data_dir(data_dir, clock=clock)
    await again.open()
    try:
        reopened = PriceBook(again, clock)
        assert reopened.overrides() == {}  # nothing until loaded
        await reopened.load()
        assert set(reopened.overrides()) == {"deepseek-chat"}
        assert await reopened.list() == [
            PriceOverrideView("deepseek-chat", "0.27", "1.1", "0.07", "0.27", "USD")
        ]
    finally:
        await again.close()


async def test_a_stored_entry_that_cant_be_read_is_skipped_and_kept(
    db: Database, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    good = {"input": "1", "output": "2", "cacheRead": "0.5", "cacheWrite": "1", "currency": "EUR"}
    await store_raw(
        db,
        json.dumps(
            {
                "good": good,
                "negative": {**good, "input": "-1"},
                "missing": {"input": "1"},
                "not-an-object": 3,
                " padded ": good,
            }
        ),
    )
    book = PriceBook(db, clock)
    await book.load()

    assert set(book.overrides()) == {"good"}
    assert [v.model for v in await book.list()] == ["good"]
    assert "negative" in caplog.text

    await book.set("new", DEEPSEEK)
    await book.remove("missing")  # an unreadable entry can still be cleared
    kept = json.loads(await stored(db) or "{}")
    assert set(kept) == {"good", "negative", "not-an-object", " padded ", "new"}


@pytest.mark.parametrize("value", ["{not json", "[1, 2]", '"text"', "null"])
async def test_a_corrupt_stored_value_reads_as_no_overrides(
    db: Database, clock: FakeClock, value: str
) -> None:
    await store_raw(db, value)
    book = PriceBook(db, clock)
    await book.load()
    assert book.overrides() == {}
    assert await book.list() == []
    with pytest.raises(NotFoundError):
        await book.remove("anything")

    await book.set("deepseek-chat", DEEPSEEK)  # and it can be written over
    assert [v.model for v in await book.list()] == ["deepseek-chat"]


async def test_changes_are_announced(db: Database, clock: FakeClock) -> None:
    bus = EventBus()
    seen: list[object] = []
    bus.subscribe(seen.append)
    book = PriceBook(db, clock, bus)
    await book.set("deepseek-chat", DEEPSEEK)
    with pytest.raises(InvalidInputError):
        await book.set("deepseek-chat", {})
    await book.remove("deepseek-chat")
    assert seen == [PricesChanged("deepseek-chat"), PricesChanged("deepseek-chat")]

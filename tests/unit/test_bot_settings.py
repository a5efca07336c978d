"""Bot settings without a running host: validation (a bad field changes nothing), the key in the secret
store, the stored settings reaching the slots and the outbox's decisions, preferences, and how a connection
test explains each failure."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Unpack

import httpx
import pytest
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.orm import Session

from core.bots.connection_test import check_connection
from core.bots.service import BackgroundSettingsChanged, BotService
from core.bots.settings_changes import settings_changes
from core.bots.views import BotActivity, BotUpdate, BotView
from core.bots.with_activity import BotsWithActivity
from core.bus import EventBus
from core.changes import BotsChanged
from core.clock import FakeClock
from core.delivery.outbox import conversation_facts
from core.delivery.policy import Pending, QuietHours, decide
from core.errors import InvalidInputError, NotFoundError, UnavailableError
from core.preferences import Preferences, PreferencesUpdate, stored_preferences
from core.preferences_service import PreferencesService
from core.store import bots as bot_rows
from core.store import conversations as conv_rows
from core.store import settings as setting_rows
from core.store.bots import BotChanges
from core.store.database import Database
from core.store.migrations import run_migrations
from core.tasks.slots import Priority, SlotPolicy, Slots
from tests.fakes.secrets import MemorySecretStore

# 2026-01-15 23:30 in Shanghai: inside the default quiet hours (22:00-08:00).
LATE_EVENING = 1_768_491_000.0
SH = "Asia/Shanghai"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=LATE_EVENING)


@pytest.fixture
async def db(tmp_path: Path, clock: FakeClock) -> AsyncIterator[Database]:
    database = Database.for_data_dir(tmp_path / "data", clock=clock)
    await database.open()
    yield database
    await database.close()


@pytest.fixture
def secrets() -> MemorySecretStore:
    return MemorySecretStore()


class HeldPushes:
    """The outbox's side a bot's settings reach: counts how often held pushes were let go."""

    def __init__(self) -> None:
        self.flushes = 0

    async def flush(self) -> int:
        self.flushes += 1
        return 0


@pytest.fixture
def bus() -> EventBus:
    return EventBus()


@pytest.fixture
def service(
    db: Database, bus: EventBus, clock: FakeClock, tmp_path: Path, secrets: MemorySecretStore
) -> BotService:
    return BotService(db, bus, clock, tmp_path / "data", secrets, held_pushes=HeldPushes())


@pytest.fixture
async def bot(service: BotService) -> BotView:
    return await service.create("Helper", base_url="https://api.example.com/v1", model="m1", api_key="sk-old")


# ---- validation: one bad field, nothing changes -------------------------------------------------------


BAD_UPDATES = [
    (BotUpdate(name="   "), "name"),
    (BotUpdate(name="x" * 61), "name"),
    (BotUpdate(avatar="pink"), "avatar"),
    (BotUpdate(model_provider="anthropic"), "provider"),
    (BotUpdate(model_base_url="ftp://files.example.com"), "baseUrl"),
    (BotUpdate(model_base_url="api.deepseek.com"), "baseUrl"),
    (BotUpdate(model_name="deep seek"), "model"),
    (BotUpdate(api_key="sk-a b"), "apiKey"),
    (BotUpdate(api_key="sk-\u00e9"), "apiKey"),  # it goes in an HTTP header: ASCII only
    (BotUpdate(api_key="sk-\ud800"), "apiKey"),
    (BotUpdate(api_key="sk-\x7f"), "apiKey"),
    (BotUpdate(api_key="sk-" + "a" * 2000), "apiKey"),
    (BotUpdate(model_base_url="https://api.deepseek.com/v1\x00"), "baseUrl"),
    (BotUpdate(model_base_url="https://api.deepseek.com/v1\r\nX-Evil: 1"), "baseUrl"),
    (BotUpdate(model_base_url="https://api.deepseek.com/" + "v" * 200_000), "baseUrl"),
    (BotUpdate(model_base_url="http://[::1/v1"), "baseUrl"),
    (BotUpdate(model_base_url="http://localhost:99999/v1"), "baseUrl"),
    (BotUpdate(model_name="deepseek-chat\u200f"), "model"),
    (BotUpdate(model_name="m" * 201), "model"),
    (BotUpdate(preset="god-mode"), "preset"),
    (BotUpdate(task_slots=0), "taskSlots"),
    (BotUpdate(task_slots=5), "taskSlots"),
    (BotUpdate(task_slots=True), "taskSlots"),
    (BotUpdate(quiet_start="24:00"), "quietHours.start"),
    (BotUpdate(quiet_start="7pm"), "quietHours.start"),
    (BotUpdate(quiet_end="08:60"), "quietHours.end"),
    (BotUpdate(quiet_end=""), "quietHours.end"),
]


@pytest.mark.parametrize(("bad", "field"), BAD_UPDATES)
async def test_a_bad_field_is_named_and_nothing_changes(
    service: BotService, bot: BotView, secrets: MemorySecretStore, bus: EventBus, bad: BotUpdate, field: str
) -> None:
    # Good changes ride along with the bad one: none of them may land.
    update = replace(
        bad,
        name="Renamed" if bad.name is None else bad.name,
        api_key="sk-new" if bad.api_key is None else bad.api_key,
        paused=True,
    )
    keys_before = dict(secrets.values)
    events, unsubscribe = bus.queue(lambda e: isinstance(e, BotsChanged))
    with pytest.raises(InvalidInputError) as caught:
        await service.update(bot.id, update)
    unsubscribe()
    assert caught.value.field == field
    assert field in str(caught.value)
    assert await service.get(bot.id) == bot
    assert secrets.values == keys_before
    assert events.empty()


def test_every_message_says_what_to_do() -> None:
    for bad, _field in BAD_UPDATES:
        with pytest.raises(InvalidInputError) as caught:
            settings_changes(bad)
        # A rule or an example, not just "invalid".
        assert any(
            word in caught.value.message for word in ("must", "use", "e.g.", "paste", "give", "shorten")
        )


async def test_an_unknown_bot_is_not_found(service: BotService) -> None:
    with pytest.raises(NotFoundError):
        await service.update("b_missing", BotUpdate(name="X"))


# ---- good updates -------------------------------------------------------------------------------------


async def test_every_setting_is_stored_and_shown(service: BotService, bot: BotView, bus: EventBus) -> None:
    events, unsubscribe = bus.queue(lambda e: isinstance(e, BotsChanged))
    updated = await service.update(
        bot.id,
        BotUpdate(
            name="  Scout ",
            avatar="violet",
            model_provider="openai",
            model_base_url="https://api.deepseek.com/v1/",
            model_name="deepseek-chat",
            preset="read-only",
            task_slots=1,
            quiet_start="7:30",
            quiet_end="23:00",
            paused=True,
        ),
    )
    unsubscribe()
    assert not events.empty()
    assert (updated.name, updated.avatar, updated.preset) == ("Scout", "violet", "read-only")
    assert (updated.model_base_url, updated.model_name) == ("https://api.deepseek.com/v1", "deepseek-chat")
    assert (updated.task_slots, updated.quiet_start, updated.quiet_end, updated.paused) == (
        1,
        "07:30",
        "23:00",
        True,
    )
    assert updated.has_api_key and updated.configured
    assert await service.get(bot.id) == updated
    shown = updated.to_json()
    assert shown["taskSlots"] == 1 and shown["quietHours"] == {"start": "07:30", "end": "23:00"}
    assert shown["paused"] is True and shown["avatar"] == "violet" and shown["configured"] is True
    # Fields left out stay as they were.
    again = await service.update(bot.id, BotUpdate(avatar=""))
    assert again.name == "Scout" and again.task_slots == 1 and again.avatar == ""


async def test_the_key_goes_to_the_secret_store_and_an_empty_key_removes_it(
    service: BotService, bot: BotView, secrets: MemorySecretStore, db: Database
) -> None:
    await service.update(bot.id, BotUpdate(api_key="  sk-new  "))
    assert list(secrets.values.values()) == ["sk-new"]
    assert (await service.model_config(bot.id)).api_key == "sk-new"
    record = await db.read(lambda s: bot_rows.get_bot(s, bot.id))
    assert record is not None and "sk-new" not in repr(record)
    removed = await service.update(bot.id, BotUpdate(api_key=""))
    assert not removed.has_api_key and secrets.values == {}


async def test_without_a_keyring_a_key_is_refused_plainly_and_nothing_changes(
    db: Database, bus: EventBus, clock: FakeClock, tmp_path: Path
) -> None:
    service = BotService(
        db, bus, clock, tmp_path / "data", MemorySecretStore(available=False), held_pushes=HeldPushes()
    )
    bot = await service.create("NoKeyring")
    with pytest.raises(UnavailableError) as caught:
        await service.update(bot.id, BotUpdate(name="Changed", api_key="sk-x"))
    assert "keyring" in caught.value.message
    assert await service.get(bot.id) == bot


async def test_background_settings_tell_the_listeners_and_other_settings_do_not(
    service: BotService, bot: BotView, bus: EventBus
) -> None:
    told: list[str] = []

    def listener(event: object) -> None:
        if isinstance(event, BackgroundSettingsChanged):
            told.append(event.bot_id)

    bus.subscribe(listener)
    await service.update(bot.id, BotUpdate(name="Quiet"))
    assert told == []
    for change in (BotUpdate(paused=True), BotUpdate(task_slots=3), BotUpdate(quiet_end="07:00")):
        await service.update(bot.id, change)
    assert told == [bot.id] * 3


async def test_the_desktops_bots_read_activity_from_their_reader(service: BotService, bot: BotView) -> None:
    class Reader:
        async def read(self, lang: str = "zh") -> list[BotActivity]:
            line = "正在工作…" if lang == "zh" else "Working…"
            return [BotActivity(bot.id, "working", line, working_count=1)]

    bots = BotsWithActivity(service, Reader())
    assert (await bots.activity("en"))[0].line == "Working…"
    assert await bots.get(bot.id) == await service.get(bot.id)


# ---- settings reach slots and the outbox --------------------------------------------------------------


def test_a_bots_own_slot_count_replaces_the_default_and_the_overall_cap_stays() -> None:
    slots = Slots(SlotPolicy(per_bot=2, overall=4))
    slots.set_per_bot({"a": 1, "b": 4})
    slots.take("a1", "a", Priority.LAUNCH)
    assert not slots.can_take("a", Priority.LAUNCH)
    assert slots.can_take("a", Priority.PERSON_WAKE)  # the reserved person slot is still there
    for n in range(3):
        slots.take(f"b{n}", "b", Priority.LAUNCH)
    assert slots.total == 4 and not slots.can_take("b", Priority.LAUNCH)  # 4 overall, not 1 + 4
    assert slots.copy().per_bot("a") == 1 and slots.per_bot("other") == 2
    with pytest.raises(ValueError):
        slots.set_per_bot({"a": 0})


async def _conversation_of_bot(db: Database, **settings: Unpack[BotChanges]) -> str:
    def add(s: Session) -> str:
        bot_rows.insert_bot(s, id="b_facts", name="Facts", workspace="/ws", now=1.0)
        bot_rows.update_bot(s, "b_facts", now=1.0, **settings)
        return conv_rows.insert_conversation(s, id="c_facts", bot_id="b_facts", title="t", now=1.0).id

    return await db.write(add)


async def test_the_bots_quiet_hours_and_pause_reach_the_outbox_decision(db: Database) -> None:
    cid = await _conversation_of_bot(db, quiet_start="09:00", quiet_end="17:00")
    facts = await db.read(lambda s: conversation_facts(s, {cid}, SH))
    assert facts[cid].quiet == QuietHours("09:00", "17:00") and not facts[cid].paused
    # 23:30 is quiet by the default hours, not by this bot's 09:00-17:00: a rule hit goes (and rings).
    pending = [Pending("d1", cid, "rule", "X dropped to 199", LATE_EVENING - 300, LATE_EVENING - 300)]
    [decision] = decide(LATE_EVENING, pending, facts, QuietHours())
    assert decision.kind == "send" and decision.ring

    await db.write(lambda s: bot_rows.update_bot(s, "b_facts", now=2.0, paused=True))
    facts = await db.read(lambda s: conversation_facts(s, {cid}, SH))
    assert facts[cid].paused
    [held] = decide(LATE_EVENING, pending, facts, QuietHours())
    assert (held.kind, held.held_reason, held.not_before) == ("hold", "paused", 0.0)


async def test_equal_quiet_start_and_end_mean_no_quiet_hours(db: Database) -> None:
    cid = await _conversation_of_bot(db, quiet_start="22:00", quiet_end="22:00")
    facts = await db.read(lambda s: conversation_facts(s, {cid}, SH))
    quiet = facts[cid].quiet
    assert quiet is not None and not quiet.contains(LATE_EVENING, SH)


async def test_default_quiet_hours_hold_the_ring_at_night(db: Database) -> None:
    cid = await _conversation_of_bot(db)
    facts = await db.read(lambda s: conversation_facts(s, {cid}, SH))
    pending = [Pending("d1", cid, "rule", "X dropped", LATE_EVENING - 300, LATE_EVENING - 300)]
    [decision] = decide(LATE_EVENING, pending, facts, QuietHours(enabled=False))
    assert decision.kind == "send" and not decision.ring  # desktop: stored, but silent at 23:30


# ---- the schema ---------------------------------------------------------------------------------------


def test_migration_5_adds_the_settings_to_existing_bots(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    with engine.begin() as conn:
        # The bots table as migration 1 made it before these settings existed.
        conn.execute(
            text(
                "CREATE TABLE bots (id TEXT PRIMARY KEY, name TEXT NOT NULL, workspace TEXT NOT NULL,"
                " model_provider TEXT NOT NULL DEFAULT 'openai', model_base_url TEXT NOT NULL DEFAULT '',"
                " model_name TEXT NOT NULL DEFAULT '', api_key_ref TEXT NOT NULL DEFAULT '',"
                " preset TEXT NOT NULL DEFAULT 'workspace-write', is_default BOOLEAN NOT NULL DEFAULT 0,"
                " created_at FLOAT NOT NULL, updated_at FLOAT NOT NULL)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO bots (id, name, workspace, created_at, updated_at) VALUES ('b1','Old','/ws',1,1)"
            )
        )
    assert 5 in run_migrations(engine, now=2.0)
    columns = {c["name"] for c in inspect(engine).get_columns("bots")}
    assert {"avatar", "task_slots", "quiet_start", "quiet_end", "paused"} <= columns
    with Session(engine) as s:
        record = bot_rows.get_bot(s, "b1")
    engine.dispose()
    assert record is not None
    assert (record.avatar, record.task_slots, record.quiet_start, record.quiet_end, record.paused) == (
        "",
        2,
        "22:00",
        "08:00",
        False,
    )


# ---- preferences --------------------------------------------------------------------------------------


async def test_preferences_default_store_and_read_back(db: Database, clock: FakeClock) -> None:
    prefs = PreferencesService(db, clock)
    assert await prefs.preferences() == Preferences()
    changed = await prefs.update_preferences(PreferencesUpdate(language="en", start_at_login=True))
    assert changed == Preferences(language="en", theme="auto", start_at_login=True)
    assert await PreferencesService(db, clock).preferences() == changed


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (PreferencesUpdate(theme="dark", language="fr"), "language"),
        (PreferencesUpdate(language="zh", theme="sepia"), "theme"),
        (PreferencesUpdate(theme="dark", start_at_login="yes"), "startAtLogin"),  # type: ignore[arg-type]
    ],
)
async def test_a_bad_preference_is_named_and_nothing_changes(
    db: Database, clock: FakeClock, bad: PreferencesUpdate, field: str
) -> None:
    prefs = PreferencesService(db, clock)
    with pytest.raises(InvalidInputError) as caught:
        await prefs.update_preferences(bad)
    assert caught.value.field == field
    assert await prefs.preferences() == Preferences()


# ---- what a connection test says ----------------------------------------------------------------------


def _answering(status: int, body: bytes, content_type: str = "application/json") -> httpx.MockTransport:
    return httpx.MockTransport(
        lambda _r: httpx.Response(status, content=body, headers={"content-type": content_type})
    )


def _raising(error: Exception) -> httpx.MockTransport:
    def handler(_request: httpx.Request) -> httpx.Response:
        raise error

    return httpx.MockTransport(handler)


@pytest.mark.parametrize(
    ("transport", "zh", "en"),
    [
        (_answering(403, b'{"error": {"message": "no access"}}'), "API Key", "API key"),
        (_answering(429, b'{"error": {"message": "slow down"}}'), "稍后再试", "try again later"),
        (_answering(502, b"<html>bad gateway</html>", "text/html"), "HTTP 502", "HTTP 502"),
        (_answering(400, b'{"error": {"message": "Model Not Exist"}}'), "Model Not Exist", "Model Not Exist"),
        (_answering(200, b"<html>welcome</html>", "text/html"), "/v1", "/v1"),
        (_answering(200, b'{"status": "ok"}'), "/v1", "/v1"),
        (_raising(httpx.ReadTimeout("slow")), "15 秒", "15 seconds"),
        (_raising(httpx.ConnectError("Name or service not known")), "Base URL", "base URL"),
    ],
)
async def test_each_failure_says_what_to_do(
    clock: FakeClock, transport: httpx.MockTransport, zh: str, en: str
) -> None:
    for lang, expected in (("zh", zh), ("en", en)):
        check = await check_connection(
            "https://api.example.com/v1", "m1", "sk", clock=clock, lang=lang, transport=transport
        )
        assert not check.ok
        assert expected in check.message, check.message


async def test_a_ping_is_one_tiny_request_with_the_key(clock: FakeClock) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": "p"}}]})

    check = await check_connection(
        "https://api.example.com/v1/",
        "m1",
        "sk-1",
        clock=clock,
        lang="en",
        transport=httpx.MockTransport(handler),
    )
    assert check.ok and "m1" in check.message
    [request] = seen
    assert str(request.url) == "https://api.example.com/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-1"
    assert json.loads(request.content) == {
        "model": "m1",
        "messages": [{"role": "user", "content": "ping"}],
        "max_tokens": 1,
        "stream": False,
    }


async def test_a_connection_test_checks_its_url_and_model_first(service: BotService) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await service.test_connection("not a url", "m1")
    assert caught.value.field == "baseUrl"
    with pytest.raises(InvalidInputError) as caught:
        await service.test_connection("https://api.example.com/v1", " ")
    assert caught.value.field == "model"


async def test_a_connection_test_refuses_a_key_no_header_can_carry(service: BotService) -> None:
    with pytest.raises(InvalidInputError) as caught:
        await service.test_connection("https://api.example.com/v1", "m1", api_key="sk-\u00e9")
    assert caught.value.message == "apiKey: must be plain ASCII characters; paste the key again"


async def test_a_host_name_no_request_can_be_built_for_is_a_failed_check(clock: FakeClock) -> None:
    for url in ("http://xn--a/v1", "http://\u0661.com/v1"):  # both fail before any network
        check = await check_connection(url, "m1", "", clock=clock, lang="en")
        assert not check.ok and "check the base URL" in check.message


async def test_a_bot_that_is_not_made_leaves_no_folder_and_no_key(
    service: BotService,
    db: Database,
    secrets: MemorySecretStore,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bots = tmp_path / "data" / "bots"
    with pytest.raises(InvalidInputError):
        await service.create("Scout", api_key="sk-\u00e9")

    async def broken(*_: object) -> None:
        raise RuntimeError("disk full")

    monkeypatch.setattr(db, "write", broken)
    with pytest.raises(RuntimeError):
        await service.create("Scout", api_key="sk-good")
    assert not bots.exists() or list(bots.iterdir()) == []
    assert secrets.values == {}


async def test_stored_preferences_are_read_before_the_host_starts(tmp_path: Path, clock: FakeClock) -> None:
    data = tmp_path / "prefs"
    assert stored_preferences(data / "errand.db") == Preferences()  # no database yet: the defaults
    database = Database.for_data_dir(data, clock=clock)
    await database.open()
    await PreferencesService(database, clock).update_preferences(
        PreferencesUpdate(language="en", theme="dark", start_at_login=True)
    )
    await database.write(lambda s: setting_rows.set_setting(s, "preferences.theme", "sepia", now=1.0))
    await database.close()

    # Read without the host, as the app does before it builds the window; a bad value reads as default.
    assert stored_preferences(data / "errand.db") == Preferences(
        language="en", theme="auto", start_at_login=True
    )

"""Rules over the real API (docs/architecture.md#the-local-api): create, list, read, edit, versions, delete
and preview, with the host on a fake clock so "now" stays put. No rule fires here; that is the scheduler's
part."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from core.changes import RuleChanged
from core.clock import FakeClock
from core.delivery.outbox import local_zone
from core.host import Host
from tests.integration.rule_api import DAILY_8, NOW

SHANGHAI = ZoneInfo("Asia/Shanghai")
# Monday 2026-09-21 22:13:20 in Shanghai.
WORDS = "每天早上 8 点看看 X 的价格,低于 200 告诉我"


def at(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=SHANGHAI).timestamp()


async def create(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    r = await client.post(
        "/api/rules", json={"title": "X price", "instruction": WORDS, "schedule": DAILY_8, **body}
    )
    assert r.status_code == 201, r.text
    return dict(r.json())


async def rules(client: httpx.AsyncClient, **params: str) -> list[dict[str, Any]]:
    r = await client.get("/api/rules", params=params)
    assert r.status_code == 200, r.text
    return list(r.json()["rules"])


def error_field(r: httpx.Response) -> str:
    # Errors say `<field>: <what to fix>`.
    return str(r.json()["error"]["message"]).split(":", 1)[0]


# -- create, list, get, update, delete -------------------------------------------------------------


async def test_a_rule_is_created_in_act_at_version_1_with_its_next_run_and_words(
    client: httpx.AsyncClient, rules_host: Host
) -> None:
    changed, unsubscribe = rules_host.bus.queue(lambda e: isinstance(e, RuleChanged))
    try:
        rule = await create(client)
    finally:
        unsubscribe()

    assert rule["id"].startswith("ru_") and len(rule["id"]) == 15
    assert (rule["kind"], rule["mode"], rule["version"]) == ("check", "act", 1)
    assert rule["instruction"] == WORDS and rule["title"] == "X price"
    assert rule["schedule"] == DAILY_8 and rule["tz"] == "Asia/Shanghai"
    assert rule["nextRunAt"] == at("2026-09-22T08:00")
    assert rule["nextRunIso"] == "2026-09-22T08:00:00+08:00"
    assert "08:00" in rule["scheduleWords"] and "Asia/Shanghai" in rule["scheduleWords"]
    assert (rule["pausedReason"], rule["createdAt"], rule["updatedAt"]) == ("", NOW, NOW)
    assert changed.get_nowait() == RuleChanged(rule["id"])

    # Results go to the bot's conversation, made for it since it had none.
    default_bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
    assert rule["botId"] == default_bot
    conversations = (await client.get("/api/conversations")).json()["conversations"]
    assert [c["id"] for c in conversations] == [rule["conversationId"]]

    assert await rules(client) == [rule]
    assert await rules(client, bot=default_bot) == [rule]
    r = await client.get(f"/api/rules/{rule['id']}")
    assert r.status_code == 200 and r.json() == rule
    en = (await client.get(f"/api/rules/{rule['id']}", params={"lang": "en"})).json()
    assert en["scheduleWords"] != rule["scheduleWords"]
    versions = (await client.get(f"/api/rules/{rule['id']}/versions")).json()["versions"]
    assert versions == [{"version": 1, "instruction": WORDS, "createdAt": NOW}]


async def test_a_rule_goes_to_the_given_conversation_and_observe_only_when_asked(
    client: httpx.AsyncClient, clock: FakeClock
) -> None:
    first = (await client.post("/api/conversations", json={"title": "One"})).json()["id"]
    clock.advance(1)  # so "Two" is the most recent, not tied with "One"
    await client.post("/api/conversations", json={"title": "Two"})
    rule = await create(client, conversationId=first, mode="observe")
    assert (rule["conversationId"], rule["mode"]) == (first, "observe")

    clock.advance(1)
    remind = await create(client, title="Stand up", instruction="站起来走走", kind="remind")
    assert (remind["kind"], remind["mode"]) == ("remind", "act")
    # Without a conversation it takes the bot's most recent one: "Two", made last.
    conversations = (await client.get("/api/conversations")).json()["conversations"]
    assert remind["conversationId"] == conversations[0]["id"] != first
    assert [r["id"] for r in await rules(client)] == [remind["id"], rule["id"]]


async def test_new_words_are_a_new_version_and_keep_the_mode(
    client: httpx.AsyncClient, clock: FakeClock
) -> None:
    rule = await create(client, mode="observe")
    clock.advance(60)
    r = await client.put(
        f"/api/rules/{rule['id']}", json={"instruction": "低于 180 才告诉我", "title": "X under 180"}
    )
    assert r.status_code == 200, r.text
    edited = r.json()
    assert (edited["version"], edited["mode"], edited["title"]) == (2, "observe", "X under 180")
    assert edited["instruction"] == "低于 180 才告诉我"
    assert edited["nextRunAt"] == rule["nextRunAt"]  # the schedule did not change
    assert edited["updatedAt"] == NOW + 60

    # The same words again are not a new version; a mode change alone is not either.
    again = (await client.put(f"/api/rules/{rule['id']}", json={"instruction": "低于 180 才告诉我"})).json()
    assert again["version"] == 2
    act = (await client.put(f"/api/rules/{rule['id']}", json={"mode": "act"})).json()
    assert (act["version"], act["mode"]) == (2, "act")

    versions = (await client.get(f"/api/rules/{rule['id']}/versions")).json()["versions"]
    assert [(v["version"], v["instruction"], v["createdAt"]) for v in versions] == [
        (1, WORDS, NOW),
        (2, "低于 180 才告诉我", NOW + 60),
    ]


async def test_a_schedule_edit_counts_the_next_run_from_now(
    client: httpx.AsyncClient, clock: FakeClock
) -> None:
    rule = await create(client)
    clock.advance(12 * 3600)  # Tuesday 10:13 in Shanghai: today's 08:00 has passed
    weekly = {"kind": "weekly", "days": [1, 3], "time": "09:30", "tz": "Asia/Shanghai"}
    r = await client.put(f"/api/rules/{rule['id']}", json={"schedule": weekly})
    assert r.status_code == 200, r.text
    edited = r.json()
    assert edited["schedule"] == weekly
    assert edited["nextRunAt"] == at("2026-09-24T09:30")  # Thursday: Tuesday 09:30 has passed too
    assert (edited["version"], edited["instruction"]) == (1, WORDS)

    # A schedule without a zone keeps the rule's own.
    edited = (
        await client.put(f"/api/rules/{rule['id']}", json={"schedule": {"kind": "daily", "time": "11:00"}})
    ).json()
    assert (edited["tz"], edited["nextRunAt"]) == ("Asia/Shanghai", at("2026-09-22T11:00"))


async def test_turning_an_off_rule_back_on_counts_from_now(
    client: httpx.AsyncClient, clock: FakeClock
) -> None:
    rule = await create(client)
    off = (await client.put(f"/api/rules/{rule['id']}", json={"mode": "off"})).json()
    assert off["mode"] == "off"
    clock.advance(2 * 86400)  # two 08:00s pass while it is off
    on = (await client.put(f"/api/rules/{rule['id']}", json={"mode": "act"})).json()
    assert (on["mode"], on["nextRunAt"]) == ("act", at("2026-09-24T08:00"))


async def test_a_deleted_rule_is_gone_with_its_versions(client: httpx.AsyncClient) -> None:
    rule = await create(client)
    kept = await create(client, title="Kept")
    r = await client.delete(f"/api/rules/{rule['id']}")
    assert r.status_code == 204 and r.content == b""
    for method, path in [
        ("GET", f"/api/rules/{rule['id']}"),
        ("GET", f"/api/rules/{rule['id']}/versions"),
        ("PUT", f"/api/rules/{rule['id']}"),
        ("DELETE", f"/api/rules/{rule['id']}"),
    ]:
        r = await client.request(method, path, json={"title": "x"} if method == "PUT" else None)
        assert r.status_code == 404, (method, path, r.text)
        assert r.json()["error"]["code"] == "not_found"
    assert [r["id"] for r in await rules(client)] == [kept["id"]]


async def test_unknown_ids_and_bots_are_404(client: httpx.AsyncClient) -> None:
    assert (await client.get("/api/rules/ru_000000000000")).status_code == 404
    assert (await client.get("/api/rules", params={"bot": "b_nope"})).status_code == 404
    r = await client.post(
        "/api/rules", json={"botId": "b_nope", "title": "T", "instruction": "w", "schedule": DAILY_8}
    )
    assert r.status_code == 404
    r = await client.post(
        "/api/rules", json={"conversationId": "c_nope", "title": "T", "instruction": "w", "schedule": DAILY_8}
    )
    assert r.status_code == 404
    assert await rules(client) == []


# -- bad input changes nothing ---------------------------------------------------------------------

BAD_CREATES: list[tuple[str, dict[str, Any], str]] = [
    (
        "cron field out of range",
        {"schedule": {"kind": "cron", "cron": "0 25 * * *", "tz": "UTC"}},
        "schedule.cron",
    ),
    ("every under 15 minutes", {"schedule": {"kind": "every", "minutes": 10}}, "schedule.minutes"),
    ("unknown time zone", {"schedule": {**DAILY_8, "tz": "Mars/Olympus"}}, "schedule.tz"),
    (
        "once in the past",
        {"schedule": {"kind": "once", "at": "2026-09-21T08:00", "tz": "Asia/Shanghai"}},
        "schedule.at",
    ),
    ("unknown schedule kind", {"schedule": {"kind": "hourly"}}, "schedule.kind"),
    ("schedule not an object", {"schedule": "every morning"}, "schedule"),
    ("missing schedule", {"schedule": None}, "schedule"),
    ("unknown kind", {"kind": "watch"}, "kind"),
    ("unknown mode", {"mode": "sometimes"}, "mode"),
    ("created off", {"mode": "off"}, "mode"),
    ("a reminder that observes", {"kind": "remind", "mode": "observe"}, "mode"),
    ("empty title", {"title": "  "}, "title"),
    ("title too long", {"title": "x" * 81}, "title"),
    ("empty instruction", {"instruction": " \n"}, "instruction"),
    ("instruction too long", {"instruction": "x" * 4001}, "instruction"),
    ("title not a string", {"title": 5}, "title"),
    ("unknown field", {"colour": "red"}, "colour"),
]


@pytest.mark.parametrize(("case", "change", "field"), BAD_CREATES, ids=[c[0] for c in BAD_CREATES])
async def test_bad_input_to_create_names_the_field_and_creates_nothing(
    client: httpx.AsyncClient, case: str, change: dict[str, Any], field: str
) -> None:
    body = {"title": "X price", "instruction": WORDS, "schedule": DAILY_8, **change}
    r = await client.post("/api/rules", json=body)
    assert r.status_code in (400, 422), r.text
    assert error_field(r) == field, r.text
    assert await rules(client) == []
    # Nothing else either: no conversation was made for a rule that does not exist.
    assert (await client.get("/api/conversations")).json()["conversations"] == []


async def test_unacceptable_values_are_422_and_malformed_ones_400(client: httpx.AsyncClient) -> None:
    base = {"title": "T", "instruction": "w", "schedule": DAILY_8}
    r = await client.post("/api/rules", json={**base, "kind": "remind", "mode": "observe"})
    assert (r.status_code, r.json()["error"]["code"]) == (422, "unprocessable")
    r = await client.post("/api/rules", json={**base, "kind": "watch"})
    assert (r.status_code, r.json()["error"]["code"]) == (400, "invalid_input")


BAD_UPDATES: list[tuple[str, dict[str, Any], str]] = [
    ("cron field out of range", {"schedule": {"kind": "cron", "cron": "60 * * * *"}}, "schedule.cron"),
    ("every under 15 minutes", {"schedule": {"kind": "every", "minutes": 5}}, "schedule.minutes"),
    ("unknown time zone", {"schedule": {**DAILY_8, "tz": "Nowhere/City"}}, "schedule.tz"),
    ("once in the past", {"schedule": {"kind": "once", "at": "2020-01-01T08:00"}}, "schedule.at"),
    ("unknown mode", {"mode": "loud"}, "mode"),
    ("empty instruction", {"instruction": "", "title": "New"}, "instruction"),
    ("kind cannot change", {"kind": "remind"}, "kind"),
    ("unknown field", {"botId": "b_other"}, "botId"),
]


@pytest.mark.parametrize(("case", "change", "field"), BAD_UPDATES, ids=[c[0] for c in BAD_UPDATES])
async def test_bad_input_to_update_names_the_field_and_changes_nothing(
    client: httpx.AsyncClient, clock: FakeClock, case: str, change: dict[str, Any], field: str
) -> None:
    rule = await create(client)
    clock.advance(60)
    r = await client.put(f"/api/rules/{rule['id']}", json=change)
    assert r.status_code in (400, 422), r.text
    assert error_field(r) == field, r.text
    assert await rules(client) == [rule]
    versions = (await client.get(f"/api/rules/{rule['id']}/versions")).json()["versions"]
    assert len(versions) == 1


async def test_a_reminder_cannot_be_switched_to_observe(client: httpx.AsyncClient) -> None:
    remind = await create(client, kind="remind")
    r = await client.put(f"/api/rules/{remind['id']}", json={"mode": "observe"})
    assert (r.status_code, error_field(r)) == (422, "mode")
    assert (await client.get(f"/api/rules/{remind['id']}")).json() == remind


async def test_a_schedule_without_a_zone_takes_the_systems(client: httpx.AsyncClient) -> None:
    rule = await create(client, schedule={"kind": "every", "minutes": 30})
    assert rule["tz"] == local_zone() == rule["schedule"]["tz"]
    # `every` is aligned to the epoch: the next multiple of 30 minutes after now.
    assert rule["nextRunAt"] == (NOW // 1800 + 1) * 1800


# -- preview ---------------------------------------------------------------------------------------


async def test_preview_gives_words_and_count_times_strictly_after_from(client: httpx.AsyncClient) -> None:
    start = "2026-09-22T08:00:00+08:00"  # exactly a fire time: it must not be listed
    r = await client.post("/api/rules/preview", json={"schedule": DAILY_8, "from": start, "count": 3})
    assert r.status_code == 200, r.text
    shown = r.json()
    assert shown["next"] == [
        "2026-09-23T08:00:00+08:00",
        "2026-09-24T08:00:00+08:00",
        "2026-09-25T08:00:00+08:00",
    ]
    assert shown["words"] == (await create(client))["scheduleWords"]
    assert all(datetime.fromisoformat(t).timestamp() > at("2026-09-22T08:00") for t in shown["next"])

    # `from` as epoch seconds; the default count is 5 and the default start is now.
    by_epoch = (
        await client.post("/api/rules/preview", json={"schedule": DAILY_8, "from": at("2026-09-22T08:00")})
    ).json()
    assert by_epoch["next"][:3] == shown["next"] and len(by_epoch["next"]) == 5
    from_now = (await client.post("/api/rules/preview", json={"schedule": DAILY_8, "lang": "en"})).json()
    assert from_now["next"][0] == "2026-09-22T08:00:00+08:00" and len(from_now["next"]) == 5
    assert from_now["words"] != shown["words"]
    assert len(await rules(client)) == 1  # only the rule made above: previews store nothing


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"schedule": DAILY_8, "from": "tomorrow"}, "from"),
        ({"schedule": DAILY_8, "from": True}, "from"),
        ({"schedule": DAILY_8, "count": 0}, "count"),
        ({"schedule": DAILY_8, "count": "5"}, "count"),
        ({"schedule": DAILY_8, "count": 51}, "count"),
        ({"schedule": DAILY_8, "lang": "fr"}, "lang"),
        ({"schedule": {"kind": "every", "minutes": 1}}, "schedule.minutes"),
        ({"from": "2026-09-22T08:00:00+08:00"}, "schedule"),
        ({"schedule": DAILY_8, "until": "x"}, "until"),
    ],
)
async def test_bad_preview_input_names_the_field(
    client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    r = await client.post("/api/rules/preview", json=body)
    assert r.status_code in (400, 422), r.text
    assert error_field(r) == field, r.text

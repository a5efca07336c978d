"""Rule schedules (docs/runs.md#schedules): parsing and its errors, next fires per kind and zone, DST, cron
against croniter, words, preview and the missed-run grace."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from croniter import croniter  # type: ignore[import-untyped]

from core.errors import InvalidInputError
from core.rules.cron import parse_cron
from core.rules.schedule import (
    MIN_EVERY_MINUTES,
    Schedule,
    fire_times,
    grace_s,
    interval_s,
    iso_local,
    next_fire,
    parse_schedule,
    preview,
    words,
)

SH = "Asia/Shanghai"
NY = "America/New_York"
BERLIN = "Europe/Berlin"


def at(local: str, tz: str) -> float:
    """Epoch seconds of a local wall time (fold=0)."""
    return datetime.fromisoformat(local).replace(tzinfo=ZoneInfo(tz)).timestamp()


def sched(tz: str = "UTC", **fields: object) -> Schedule:
    return parse_schedule(fields, default_tz=tz)


def isos(schedule: Schedule, after: float, count: int) -> list[str]:
    return [iso_local(ts, schedule.tz) for ts in fire_times(schedule, after, count)]


def bad(data: object, *, now: float | None = None, tz: str = "UTC") -> InvalidInputError:
    with pytest.raises(InvalidInputError) as caught:
        parse_schedule(data, default_tz=tz, now=now)
    return caught.value


# --- parsing ---------------------------------------------------------------------------------------------


def test_parses_each_kind_and_round_trips_through_json() -> None:
    cases: list[tuple[dict[str, object], Schedule]] = [
        ({"kind": "once", "at": "2026-12-01T09:00"}, Schedule("once", SH, at="2026-12-01T09:00")),
        ({"kind": "daily", "time": "8:00"}, Schedule("daily", SH, time="08:00")),
        (
            {"kind": "daily", "time": "08:00", "days": [4, 0, 2, 0]},
            Schedule("daily", SH, "", "08:00", (0, 2, 4)),
        ),
        ({"kind": "daily", "time": "08:00", "days": list(range(7))}, Schedule("daily", SH, time="08:00")),
        ({"kind": "weekly", "time": "09:30", "days": [2]}, Schedule("weekly", SH, time="09:30", days=(2,))),
        ({"kind": "every", "minutes": 15}, Schedule("every", SH, minutes=15)),
        ({"kind": "cron", "cron": "  0 8  * * 1-5 "}, Schedule("cron", SH, cron="0 8 * * 1-5")),
        ({"kind": "daily", "time": "07:00", "tz": NY}, Schedule("daily", NY, time="07:00")),
    ]
    for data, expected in cases:
        schedule = parse_schedule(data, default_tz=SH)
        assert schedule == expected
        assert parse_schedule(schedule.to_json(), default_tz="UTC") == schedule


def test_to_json_holds_only_the_fields_of_its_kind() -> None:
    assert sched(kind="every", minutes=30).to_json() == {"kind": "every", "tz": "UTC", "minutes": 30}
    assert sched(kind="daily", time="08:00").to_json() == {"kind": "daily", "tz": "UTC", "time": "08:00"}
    assert sched(kind="weekly", time="08:00", days=[0]).to_json() == {
        "kind": "weekly",
        "tz": "UTC",
        "time": "08:00",
        "days": [0],
    }
    assert sched(kind="cron", cron="0 8 * * *").to_json() == {
        "kind": "cron",
        "tz": "UTC",
        "cron": "0 8 * * *",
    }
    assert sched(kind="once", at="2026-12-01 09:00").to_json() == {
        "kind": "once",
        "tz": "UTC",
        "at": "2026-12-01T09:00",
    }


def test_empty_placeholders_of_other_kinds_are_accepted() -> None:
    data = {"kind": "daily", "time": "08:00", "minutes": 0, "cron": "", "at": None, "tz": ""}
    assert parse_schedule(data, default_tz=SH) == Schedule("daily", SH, time="08:00")


@pytest.mark.parametrize(
    ("data", "field", "needle"),
    [
        ("daily at 8", "schedule", "must be an object"),
        ({"kind": "daily", "time": "08:00", "when": 1}, "schedule", "unknown field 'when'"),
        ({"kind": "hourly"}, "schedule.kind", "must be one of once, daily, weekly, every, cron"),
        ({}, "schedule.kind", "must be one of"),
        (
            {"kind": "daily", "time": "08:00", "tz": "Mars/Base"},
            "schedule.tz",
            "unknown time zone 'Mars/Base'",
        ),
        ({"kind": "daily", "time": "08:00", "tz": "../etc/passwd"}, "schedule.tz", "unknown time zone"),
        ({"kind": "daily", "time": "08:00", "tz": 8}, "schedule.tz", "IANA"),
        ({"kind": "daily", "time": "24:00"}, "schedule.time", "HH:MM"),
        ({"kind": "daily", "time": "08:60"}, "schedule.time", "HH:MM"),
        ({"kind": "daily", "time": "8am"}, "schedule.time", "HH:MM"),
        ({"kind": "daily"}, "schedule.time", "HH:MM"),
        ({"kind": "daily", "time": "08:00", "days": [7]}, "schedule.days", "0=Monday .. 6=Sunday"),
        ({"kind": "daily", "time": "08:00", "days": "mon"}, "schedule.days", "list of weekday numbers"),
        ({"kind": "daily", "time": "08:00", "days": [True]}, "schedule.days", "list of weekday numbers"),
        ({"kind": "weekly", "time": "08:00"}, "schedule.days", "at least one day"),
        ({"kind": "weekly", "time": "08:00", "days": []}, "schedule.days", "at least one day"),
        ({"kind": "daily", "time": "08:00", "minutes": 30}, "schedule.minutes", "not used by a daily"),
        ({"kind": "every", "minutes": 10}, "schedule.minutes", "every must be at least 15 minutes"),
        ({"kind": "every", "minutes": 14}, "schedule.minutes", "at least 15"),
        ({"kind": "every", "minutes": 30.5}, "schedule.minutes", "whole number"),
        ({"kind": "every", "minutes": "30"}, "schedule.minutes", "whole number"),
        ({"kind": "every"}, "schedule.minutes", "whole number"),
        ({"kind": "every", "minutes": 10**6}, "schedule.minutes", "at most"),
        ({"kind": "once", "at": "2026-12-01"}, "schedule.at", "YYYY-MM-DDTHH:MM"),
        ({"kind": "once", "at": "2026-12-01T09:00+08:00"}, "schedule.at", "without an offset"),
        ({"kind": "once", "at": "2026-02-30T09:00"}, "schedule.at", "not a real date"),
        ({"kind": "cron", "cron": "0 25 * * *"}, "schedule.cron", "cron field 2 (hour) must be 0-23, got 25"),
        (
            {"kind": "cron", "cron": "60 * * * *"},
            "schedule.cron",
            "cron field 1 (minute) must be 0-59, got 60",
        ),
        (
            {"kind": "cron", "cron": "0 0 0 * *"},
            "schedule.cron",
            "field 3 (day of month) must be 1-31, got 0",
        ),
        ({"kind": "cron", "cron": "0 0 * 13 *"}, "schedule.cron", "field 4 (month) must be 1-12, got 13"),
        ({"kind": "cron", "cron": "0 0 * * 8"}, "schedule.cron", "field 5 (day of week) must be 0-7, got 8"),
        ({"kind": "cron", "cron": "0 0 * * xyz"}, "schedule.cron", "field 5 (day of week) has 'xyz'"),
        ({"kind": "cron", "cron": "0 8 * *"}, "schedule.cron", "needs five fields"),
        ({"kind": "cron", "cron": "0 8 * * * *"}, "schedule.cron", "got 6"),
        ({"kind": "cron", "cron": ""}, "schedule.cron", "is empty"),
        ({"kind": "cron", "cron": "*/0 * * * *"}, "schedule.cron", "step must be a positive number"),
        ({"kind": "cron", "cron": "5/15 * * * *"}, "schedule.cron", "*/n or a-b/n"),
        ({"kind": "cron", "cron": "0 9-5 * * *"}, "schedule.cron", "goes backwards"),
        ({"kind": "cron", "cron": "0,,5 * * * *"}, "schedule.cron", "empty list item"),
        ({"kind": "cron", "cron": "0 0 30 2 *"}, "schedule.cron", "never fires"),
        ({"kind": "cron", "cron": "@reboot"}, "schedule.cron", "unknown shorthand"),
        ({"kind": "cron", "cron": 5}, "schedule.cron", "five fields"),
    ],
)
def test_bad_input_names_its_field_and_says_what_to_do(data: object, field: str, needle: str) -> None:
    error = bad(data)
    assert error.field == field
    assert needle in error.message


def test_once_at_or_before_now_is_in_the_past() -> None:
    data = {"kind": "once", "at": "2026-12-01T09:00", "tz": SH}
    due = at("2026-12-01T09:00", SH)
    for now in (due, due + 60):
        error = bad(data, now=now)
        assert (error.field, "is in the past" in error.message) == ("schedule.at", True)
    assert parse_schedule(data, default_tz="UTC", now=due - 1).at == "2026-12-01T09:00"
    # Without `now` (reading a stored rule back) a past once is still a valid schedule.
    assert parse_schedule(data, default_tz="UTC").kind == "once"


def test_an_unknown_default_zone_is_refused_too() -> None:
    assert bad({"kind": "every", "minutes": 30}, tz="Nowhere/Atlantis").field == "schedule.tz"


def test_a_schedule_instance_is_accepted_as_input() -> None:
    schedule = sched(kind="weekly", time="09:00", days=[1, 3])
    assert parse_schedule(schedule, default_tz=SH) == schedule


# --- next fires per kind and zone ------------------------------------------------------------------------


def test_daily_fires_every_day_at_local_time_in_each_zone() -> None:
    assert isos(sched(SH, kind="daily", time="08:00"), at("2026-06-10T08:00", SH), 3) == [
        "2026-06-11T08:00:00+08:00",
        "2026-06-12T08:00:00+08:00",
        "2026-06-13T08:00:00+08:00",
    ]
    assert isos(sched(NY, kind="daily", time="08:00"), at("2026-06-10T07:59", NY), 2) == [
        "2026-06-10T08:00:00-04:00",
        "2026-06-11T08:00:00-04:00",
    ]
    assert isos(sched(BERLIN, kind="daily", time="23:59"), at("2026-01-10T12:00", BERLIN), 2) == [
        "2026-01-10T23:59:00+01:00",
        "2026-01-11T23:59:00+01:00",
    ]
    assert isos(sched(kind="daily", time="00:00"), at("2026-12-31T23:59", "UTC"), 1) == [
        "2027-01-01T00:00:00+00:00"
    ]


def test_daily_with_weekdays_skips_the_weekend() -> None:
    schedule = sched(SH, kind="daily", time="08:00", days=[0, 1, 2, 3, 4])
    # 2026-06-12 is a Friday.
    assert isos(schedule, at("2026-06-12T09:00", SH), 2) == [
        "2026-06-15T08:00:00+08:00",
        "2026-06-16T08:00:00+08:00",
    ]


def test_weekly_fires_on_its_days() -> None:
    schedule = sched(NY, kind="weekly", time="09:00", days=[0, 2])
    # 2026-06-10 is a Wednesday.
    assert isos(schedule, at("2026-06-10T09:00", NY), 3) == [
        "2026-06-15T09:00:00-04:00",
        "2026-06-17T09:00:00-04:00",
        "2026-06-22T09:00:00-04:00",
    ]
    sunday = sched(BERLIN, kind="weekly", time="18:00", days=[6])
    assert isos(sunday, at("2026-06-14T17:00", BERLIN), 2) == [
        "2026-06-14T18:00:00+02:00",
        "2026-06-21T18:00:00+02:00",
    ]


def test_once_fires_once_then_never() -> None:
    schedule = sched(SH, kind="once", at="2026-12-01T09:00")
    due = at("2026-12-01T09:00", SH)
    assert next_fire(schedule, due - 3600) == due
    assert next_fire(schedule, due) is None
    assert fire_times(schedule, due - 3600, 5) == [due]


def test_every_is_aligned_to_the_epoch_so_restarts_keep_the_rhythm() -> None:
    schedule = sched(SH, kind="every", minutes=30)
    assert next_fire(schedule, 0) == 1800
    assert next_fire(schedule, 1799.5) == 1800
    assert next_fire(schedule, 1800) == 3600
    after = at("2026-06-10T08:07:13", SH)
    assert isos(schedule, after, 3) == [
        "2026-06-10T08:30:00+08:00",
        "2026-06-10T09:00:00+08:00",
        "2026-06-10T09:30:00+08:00",
    ]


def test_every_is_absolute_time_across_dst() -> None:
    schedule = sched(NY, kind="every", minutes=60)
    fires = fire_times(schedule, at("2026-03-08T00:30", NY), 4)
    assert [b - a for a, b in itertools.pairwise(fires)] == [3600.0] * 3
    assert [iso_local(t, NY) for t in fires] == [
        "2026-03-08T01:00:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-08T04:00:00-04:00",
        "2026-03-08T05:00:00-04:00",
    ]


def test_cron_next_fires_in_zones() -> None:
    assert isos(sched(SH, kind="cron", cron="0 8 * * 1-5"), at("2026-06-12T08:00", SH), 2) == [
        "2026-06-15T08:00:00+08:00",
        "2026-06-16T08:00:00+08:00",
    ]
    assert isos(sched(NY, kind="cron", cron="*/20 9 * * *"), at("2026-06-10T09:15", NY), 3) == [
        "2026-06-10T09:20:00-04:00",
        "2026-06-10T09:40:00-04:00",
        "2026-06-11T09:00:00-04:00",
    ]
    assert isos(sched(BERLIN, kind="cron", cron="30 12 1 JAN,Jul *"), at("2026-02-01T00:00", BERLIN), 2) == [
        "2026-07-01T12:30:00+02:00",
        "2027-01-01T12:30:00+01:00",
    ]
    assert isos(sched(kind="cron", cron="@hourly"), at("2026-06-10T09:00", "UTC"), 2) == [
        "2026-06-10T10:00:00+00:00",
        "2026-06-10T11:00:00+00:00",
    ]


def test_cron_leap_day_is_found_years_ahead() -> None:
    schedule = sched(kind="cron", cron="0 0 29 2 *")
    assert isos(schedule, at("2026-03-01T00:00", "UTC"), 2) == [
        "2028-02-29T00:00:00+00:00",
        "2032-02-29T00:00:00+00:00",
    ]


def test_cron_dom_and_dow_match_either_when_both_are_restricted() -> None:
    # The 13th or any Friday.
    schedule = sched(kind="cron", cron="0 0 13 * fri")
    assert isos(schedule, at("2026-02-01T00:00", "UTC"), 4) == [
        "2026-02-06T00:00:00+00:00",
        "2026-02-13T00:00:00+00:00",
        "2026-02-20T00:00:00+00:00",
        "2026-02-27T00:00:00+00:00",
    ]
    assert isos(schedule, at("2026-03-07T00:00", "UTC"), 2) == [
        "2026-03-13T00:00:00+00:00",
        "2026-03-20T00:00:00+00:00",
    ]


def test_cron_day_field_starting_with_a_star_is_unrestricted_as_in_vixie_cron() -> None:
    # Vixie/Debian: "*/2" in day-of-month counts as a star, so the days must be odd AND Mondays.
    # (croniter ORs these instead, which is why the reference comparison leaves such expressions out.)
    schedule = sched(kind="cron", cron="0 0 */2 * 1")
    fires = fire_times(schedule, at("2026-01-01T00:00", "UTC"), 4)
    for fire in fires:
        day = datetime.fromtimestamp(fire, UTC)
        assert day.weekday() == 0 and day.day % 2 == 1


def test_cron_sunday_is_0_or_7_and_names_are_case_insensitive() -> None:
    assert parse_cron("0 0 * * 7").dows == parse_cron("0 0 * * 0").dows == parse_cron("0 0 * * SUN").dows
    assert parse_cron("0 0 * * 5-7").dows == frozenset({5, 6, 0})
    assert parse_cron("0 0 * * Mon-Fri").dows == frozenset({1, 2, 3, 4, 5})
    assert parse_cron("0 0 * jan-mar/2 *").months == frozenset({1, 3})
    assert parse_cron("1-10/3,30 * * * *").minutes == (1, 4, 7, 10, 30)


# --- DST -------------------------------------------------------------------------------------------------


def test_new_york_spring_forward_fires_a_skipped_time_when_the_gap_ends() -> None:
    daily = sched(NY, kind="daily", time="02:30")
    assert isos(daily, at("2026-03-07T12:00", NY), 3) == [
        "2026-03-08T03:00:00-04:00",
        "2026-03-09T02:30:00-04:00",
        "2026-03-10T02:30:00-04:00",
    ]
    once = sched(NY, kind="once", at="2026-03-08T02:15")
    assert isos(once, at("2026-03-08T00:00", NY), 1) == ["2026-03-08T03:00:00-04:00"]
    cron = sched(NY, kind="cron", cron="30 2 * * *")
    assert isos(cron, at("2026-03-07T12:00", NY), 2) == [
        "2026-03-08T03:00:00-04:00",
        "2026-03-09T02:30:00-04:00",
    ]


def test_new_york_fall_back_fires_a_repeated_time_once_at_its_first_occurrence() -> None:
    daily = sched(NY, kind="daily", time="01:30")
    assert isos(daily, at("2026-10-31T12:00", NY), 2) == [
        "2026-11-01T01:30:00-04:00",
        "2026-11-02T01:30:00-05:00",
    ]
    first = at("2026-11-01T01:30", NY)
    # After the first 01:30 (EDT) the second 01:30 (EST, an hour later) does not fire.
    assert isos(daily, first, 1) == ["2026-11-02T01:30:00-05:00"]
    assert isos(daily, first + 3600, 1) == ["2026-11-02T01:30:00-05:00"]
    weekly = sched(NY, kind="weekly", time="01:00", days=[6])
    assert isos(weekly, at("2026-10-31T00:00", NY), 2) == [
        "2026-11-01T01:00:00-04:00",
        "2026-11-08T01:00:00-05:00",
    ]


def test_berlin_dst_changes() -> None:
    spring = sched(BERLIN, kind="daily", time="02:30")
    assert isos(spring, at("2026-03-28T12:00", BERLIN), 2) == [
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T02:30:00+02:00",
    ]
    autumn = sched(BERLIN, kind="weekly", time="02:30", days=[6])
    assert isos(autumn, at("2026-10-24T12:00", BERLIN), 2) == [
        "2026-10-25T02:30:00+02:00",
        "2026-11-01T02:30:00+01:00",
    ]
    assert isos(autumn, at("2026-10-25T02:30", BERLIN), 1) == ["2026-11-01T02:30:00+01:00"]


def test_frequent_cron_follows_the_wall_clock_through_dst_as_debian_cron_does() -> None:
    hourly = sched(NY, kind="cron", cron="0 * * * *")
    assert isos(hourly, at("2026-03-08T00:30", NY), 3) == [
        "2026-03-08T01:00:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-08T04:00:00-04:00",
    ]
    half_hours = sched(NY, kind="cron", cron="*/30 1 * * *")
    assert isos(half_hours, at("2026-11-01T00:00", NY), 5) == [
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T01:30:00-05:00",
        "2026-11-02T01:00:00-05:00",
    ]


def test_fire_times_are_strictly_increasing_across_a_year_of_dst() -> None:
    for schedule in (
        sched(NY, kind="daily", time="02:30"),
        sched(BERLIN, kind="cron", cron="*/45 1-3 * * *"),
        sched(NY, kind="cron", cron="15 1,2 * * *"),
    ):
        fires = fire_times(schedule, at("2026-01-01T00:00", schedule.tz), 400)
        assert all(b > a for a, b in itertools.pairwise(fires))


# --- cron against croniter -------------------------------------------------------------------------------

REFERENCE_EXPRESSIONS = [
    "* * * * *",
    "*/15 * * * *",
    "0 * * * *",
    "5 4 * * *",
    "0 8 * * 1-5",
    "0 8 * * mon-fri",
    "30 9 * * 6,0",
    "0 0 * * 7",
    "0 0 1 * *",
    "0 12 15 * *",
    "0 0 31 * *",
    "59 23 31 12 *",
    "0 0 29 2 *",
    "0 9 1 jan,apr,jul,oct *",
    "*/5 9-17 * * 1-5",
    "0 */2 * * *",
    "0 9-18/3 * * *",
    "15,45 8,20 * * *",
    "0 0 1-7 * 1",
    "0 0 13 * 5",
    "0 6 * 6-8 *",
    "10-20/5 3 * * *",
    "0 22 * * 1-5",
    "0 7 * * sun",
    "1 2 3 4 *",
    "0 0 * 2 2",
    "0 12 1,15 * *",
    "0 18 28-31 * *",
    "30 1 * * 2-4",
    "*/30 */6 * * *",
    "0 0 1 */3 *",
    "45 17 * * 5",
]
REFERENCE_STARTS = [
    "2026-01-01T00:00:00",
    "2026-02-27T23:59:30",
    "2027-06-15T12:34:00",
    "2028-12-31T23:00:00",
]


@pytest.mark.parametrize("tz", ["UTC", SH])
@pytest.mark.parametrize("expression", REFERENCE_EXPRESSIONS)
def test_cron_matches_croniter(expression: str, tz: str) -> None:
    schedule = sched(tz, kind="cron", cron=expression)
    zone = ZoneInfo(tz)
    for start in REFERENCE_STARTS:
        begin = datetime.fromisoformat(start).replace(tzinfo=zone)
        reference = croniter(expression, begin)
        expected = [reference.get_next(datetime).timestamp() for _ in range(12)]
        assert fire_times(schedule, begin.timestamp(), 12) == expected, (expression, tz, start)


# --- interval and grace ----------------------------------------------------------------------------------


def test_interval_and_grace() -> None:
    cases: list[tuple[Schedule, float | None, float]] = [
        (sched(kind="once", at="2026-12-01T09:00"), None, 7200),
        (sched(kind="every", minutes=MIN_EVERY_MINUTES), 900, 450),
        (sched(kind="every", minutes=60), 3600, 1800),
        (sched(kind="every", minutes=600), 36000, 7200),
        (sched(kind="daily", time="08:00"), 86400, 7200),
        (sched(kind="daily", time="08:00", days=[0, 1, 2, 3, 4]), 86400, 7200),
        (sched(kind="daily", time="08:00", days=[0, 3]), 3 * 86400, 7200),
        (sched(kind="weekly", time="08:00", days=[6]), 7 * 86400, 7200),
        (sched(kind="cron", cron="*/20 * * * *"), 1200, 600),
        (sched(SH, kind="cron", cron="0 8,9 * * *"), 3600, 1800),
        (sched(NY, kind="cron", cron="0 8 * * 1-5"), 86400, 7200),
    ]
    for schedule, interval, grace in cases:
        assert (interval_s(schedule), grace_s(schedule)) == (interval, grace), schedule


# --- words, iso_local, preview ---------------------------------------------------------------------------


def test_words_in_chinese() -> None:
    assert (
        words(sched(SH, kind="daily", time="08:00", days=[0, 1, 2, 3, 4]), "zh")
        == "每个工作日 08:00（Asia/Shanghai）"
    )
    assert words(sched(SH, kind="daily", time="08:00"), "zh") == "每天 08:00（Asia/Shanghai）"
    assert (
        words(sched(SH, kind="weekly", time="09:00", days=[0, 2]), "zh")
        == "每周一、周三 09:00（Asia/Shanghai）"
    )
    assert words(sched(SH, kind="every", minutes=30), "zh") == "每 30 分钟（Asia/Shanghai）"
    assert words(sched(SH, kind="every", minutes=60), "zh") == "每小时（Asia/Shanghai）"
    assert words(sched(SH, kind="every", minutes=120), "zh_CN") == "每 2 小时（Asia/Shanghai）"
    assert (
        words(sched(SH, kind="once", at="2026-12-01T09:00"), "zh") == "2026-12-01 09:00 一次（Asia/Shanghai）"
    )
    assert words(sched(SH, kind="cron", cron="30 7 * * 1-5"), "zh") == "每个工作日 07:30（Asia/Shanghai）"
    assert words(sched(SH, kind="cron", cron="0 9 * * 0,6"), "zh") == "每周六、周日 09:00（Asia/Shanghai）"
    # A shape words cannot say plainly is shown as the cron itself.
    assert words(sched(SH, kind="cron", cron="5 4 1 * *"), "zh") == "cron 5 4 1 * *（Asia/Shanghai）"


def test_words_in_english() -> None:
    assert words(sched(SH, kind="daily", time="08:00", days=[0, 1, 2, 3, 4]), "en") == (
        "Every weekday at 08:00 (Asia/Shanghai)"
    )
    assert words(sched(kind="daily", time="08:00"), "en") == "Every day at 08:00 (UTC)"
    assert (
        words(sched(kind="weekly", time="09:00", days=[0, 2]), "en")
        == "Every Monday and Wednesday at 09:00 (UTC)"
    )
    assert words(sched(kind="weekly", time="09:00", days=[0, 2, 4]), "en") == (
        "Every Monday, Wednesday and Friday at 09:00 (UTC)"
    )
    assert words(sched(kind="weekly", time="09:00", days=[6]), "en") == "Every Sunday at 09:00 (UTC)"
    assert words(sched(kind="every", minutes=30), "en") == "Every 30 minutes (UTC)"
    assert words(sched(kind="every", minutes=60), "en") == "Every hour (UTC)"
    assert words(sched(kind="every", minutes=180), "en") == "Every 3 hours (UTC)"
    assert words(sched(kind="once", at="2026-12-01T09:00"), "en") == "Once on 2026-12-01 at 09:00 (UTC)"
    assert words(sched(kind="cron", cron="0 8 * * 1-5"), "en") == "Every weekday at 08:00 (UTC)"
    assert words(sched(kind="cron", cron="0 8 * * *"), "en") == "Every day at 08:00 (UTC)"
    assert words(sched(kind="cron", cron="0 9 * * 7"), "en") == "Every Sunday at 09:00 (UTC)"
    assert words(sched(kind="cron", cron="*/15 * * * *"), "en") == "Every 15 minutes (UTC)"
    assert words(sched(kind="cron", cron="0 */2 * * *"), "en") == "cron 0 */2 * * * (UTC)"


def test_iso_local_carries_the_offset() -> None:
    ts = datetime(2026, 12, 1, 0, 0, tzinfo=UTC).timestamp()
    assert iso_local(ts, SH) == "2026-12-01T08:00:00+08:00"
    assert iso_local(ts, NY) == "2026-11-30T19:00:00-05:00"
    assert iso_local(ts, "UTC") == "2026-12-01T00:00:00+00:00"


def test_preview_gives_words_and_next_fires_strictly_after() -> None:
    after = at("2026-06-12T08:00", SH)
    data = {"kind": "daily", "time": "08:00", "days": [0, 1, 2, 3, 4]}
    result = preview(data, default_tz=SH, after=after, count=3)
    assert result == {
        "words": "每个工作日 08:00（Asia/Shanghai）",
        "next": ["2026-06-15T08:00:00+08:00", "2026-06-16T08:00:00+08:00", "2026-06-17T08:00:00+08:00"],
    }
    english = preview({**data, "tz": NY}, default_tz=SH, after=after, count=50, lang="en")
    nexts = english["next"]
    assert isinstance(nexts, list) and len(nexts) == 50
    assert english["words"] == "Every weekday at 08:00 (America/New_York)"
    stamps = [datetime.fromisoformat(text).timestamp() for text in nexts]
    assert stamps[0] > after and all(b > a for a, b in itertools.pairwise(stamps))


def test_preview_of_a_once_lists_one_fire_and_refuses_the_past() -> None:
    after = at("2026-06-12T08:00", SH)
    result = preview({"kind": "once", "at": "2026-06-12T08:01"}, default_tz=SH, after=after, count=5)
    assert result["next"] == ["2026-06-12T08:01:00+08:00"]
    with pytest.raises(InvalidInputError) as caught:
        preview({"kind": "once", "at": "2026-06-12T08:00"}, default_tz=SH, after=after, count=5)
    assert caught.value.field == "schedule.at"


@pytest.mark.parametrize("count", [0, 51, -1, True, 2.0])
def test_preview_count_must_be_1_to_50(count: object) -> None:
    with pytest.raises(InvalidInputError) as caught:
        preview({"kind": "every", "minutes": 30}, default_tz=SH, after=0, count=count)  # type: ignore[arg-type]
    assert caught.value.field == "count"

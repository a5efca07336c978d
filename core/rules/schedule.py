"""Rule schedules (docs/runs.md#schedules): parsing, next fire times, missed-run grace and the schedule in
words.

Pure: every function takes the moment it reasons about ("now", "after") as an argument, so the Scheduler
(which owns the clock) and the REST layer can share it and tests need no clock.

DST follows Debian cron, which users already know: a fixed local time that a spring-forward change skips
fires when the gap ends (02:30 on a 02:00->03:00 day fires at 03:00); a fixed local time that an autumn
change repeats fires once, at its first occurrence. Cron expressions with `*` in the minute or hour
field follow the wall clock instead (skipped minutes don't fire, repeated ones fire twice), again as in
Debian cron. `every` is a fixed interval in absolute time, aligned to multiples of the interval since the
Unix epoch so that fire times survive restarts and never drift.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal, get_args
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.errors import InvalidInputError
from core.rules.cron import CronExpr, parse_cron
from core.translations import Language, as_language, text

ScheduleKind = Literal["once", "daily", "weekly", "every", "cron"]
KINDS: tuple[ScheduleKind, ...] = get_args(ScheduleKind)
MIN_EVERY_MINUTES = 15
# Longer gaps are better said as weekly/cron; this also keeps epoch alignment meaningful.
MAX_EVERY_MINUTES = 30 * 24 * 60
MAX_GRACE_S = 2 * 3600.0
MAX_PREVIEW = 50

# No real zone moves its clock by more than this in one change (the largest today is 2 h), so a local
# time more than this past a candidate's wall time can't be an earlier instant.
_MAX_SHIFT = timedelta(hours=3)
# The first of a Monday in January: no DST change near it in either hemisphere, so gaps between the fires
# that follow it show a cron expression's ordinary rhythm.
_RHYTHM_REFERENCE = datetime(2026, 1, 5, tzinfo=UTC).timestamp()
_RHYTHM_SAMPLES = 9
_DAY_S = 86400.0

_KIND_FIELDS: dict[str, tuple[str, ...]] = {
    "once": ("at",),
    "daily": ("time", "days"),
    "weekly": ("time", "days"),
    "every": ("minutes",),
    "cron": ("cron",),
}
_ALL_FIELDS = frozenset({"kind", "tz", "at", "time", "days", "minutes", "cron"})
_TIME_RE = re.compile(r"(\d{1,2}):(\d{2})")
_AT_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{1,2}):(\d{2})(?::00)?")

_WEEKDAYS = (0, 1, 2, 3, 4)


@dataclass(frozen=True, slots=True)
class Schedule:
    kind: ScheduleKind
    tz: str  # IANA zone, stored on the rule when it is created
    at: str = ""  # once: local "YYYY-MM-DDTHH:MM"
    time: str = ""  # daily/weekly: local "HH:MM"
    days: tuple[int, ...] = ()  # 0=Mon .. 6=Sun, sorted, unique; daily: () = every day
    minutes: int = 0  # every
    cron: str = ""  # cron: five fields "m h dom mon dow"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "tz": self.tz}
        if self.kind == "once":
            out["at"] = self.at
        elif self.kind in ("daily", "weekly"):
            out["time"] = self.time
            if self.days or self.kind == "weekly":
                out["days"] = list(self.days)
        elif self.kind == "every":
            out["minutes"] = self.minutes
        else:
            out["cron"] = self.cron
        return out


# ---------------------------------------------------------------------------------------------- parsing


def _zone(name: str, field: str = "schedule.tz") -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidInputError(
            field, f"unknown time zone '{name}'; use an IANA name like Asia/Shanghai or UTC"
        ) from None


def _parse_time(value: object) -> str:
    match = _TIME_RE.fullmatch(value) if isinstance(value, str) else None
    if match is None or int(match[1]) > 23 or int(match[2]) > 59:
        raise InvalidInputError("schedule.time", f"must be a local time 'HH:MM' (00:00-23:59), got {value!r}")
    return f"{int(match[1]):02d}:{match[2]}"


def _parse_at(value: object) -> str:
    match = _AT_RE.fullmatch(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise InvalidInputError(
            "schedule.at",
            f"must be a local date and time 'YYYY-MM-DDTHH:MM' without an offset (the zone goes in tz), "
            f"got {value!r}",
        )
    try:
        moment = datetime(int(match[1]), int(match[2]), int(match[3]), int(match[4]), int(match[5]))
    except ValueError as exc:
        raise InvalidInputError("schedule.at", f"is not a real date and time: {exc}") from None
    return moment.strftime("%Y-%m-%dT%H:%M")


def _parse_days(value: object, *, required: bool) -> tuple[int, ...]:
    hint = "must be a list of weekday numbers, 0=Monday .. 6=Sunday"
    if value is None:
        value = []
    if not isinstance(value, list | tuple):
        raise InvalidInputError("schedule.days", f"{hint}, got {value!r}")
    days: set[int] = set()
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item <= 6:
            raise InvalidInputError("schedule.days", f"{hint}, got {item!r}")
        days.add(item)
    if required and not days:
        raise InvalidInputError(
            "schedule.days", "a weekly schedule needs at least one day (0=Monday .. 6=Sunday)"
        )
    return tuple(sorted(days))


def _parse_minutes(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError("schedule.minutes", f"must be a whole number of minutes, got {value!r}")
    if value < MIN_EVERY_MINUTES:
        raise InvalidInputError(
            "schedule.minutes", f"every must be at least {MIN_EVERY_MINUTES} minutes, got {value}"
        )
    if value > MAX_EVERY_MINUTES:
        raise InvalidInputError(
            "schedule.minutes",
            f"every must be at most {MAX_EVERY_MINUTES} minutes (30 days), got {value}; use weekly or cron",
        )
    return value


def _is_empty(value: object) -> bool:
    return value is None or value in ("", [], (), 0)


def parse_schedule(data: object, *, default_tz: str, now: float | None = None) -> Schedule:
    """Validate a schedule from JSON (or a Schedule). With `now`, a `once` at or before it is refused."""
    if isinstance(data, Schedule):
        data = data.to_json()
    if not isinstance(data, Mapping):
        raise InvalidInputError(
            "schedule", 'must be an object such as {"kind": "daily", "time": "08:00", "tz": "Asia/Shanghai"}'
        )
    unknown = sorted(str(key) for key in data if key not in _ALL_FIELDS)
    if unknown:
        raise InvalidInputError(
            "schedule", f"unknown field '{unknown[0]}'; use kind, tz, at, time, days, minutes or cron"
        )
    kind = data.get("kind")
    if kind not in KINDS:
        raise InvalidInputError("schedule.kind", f"must be one of {', '.join(KINDS)}; got {kind!r}")
    # A field of another kind with a real value is likely a mistake (daily with minutes: 30); say so
    # rather than silently dropping it. Empty placeholders from a form are fine.
    for key in ("at", "time", "days", "minutes", "cron"):
        if key not in _KIND_FIELDS[kind] and not _is_empty(data.get(key)):
            raise InvalidInputError(f"schedule.{key}", f"is not used by a {kind} schedule; remove it")

    tz = data.get("tz")
    if tz is None or tz == "":
        tz = default_tz
    if not isinstance(tz, str):
        raise InvalidInputError(
            "schedule.tz", f"must be an IANA time zone name like Asia/Shanghai, got {tz!r}"
        )
    _zone(tz)

    schedule: Schedule
    if kind == "once":
        schedule = Schedule(kind="once", tz=tz, at=_parse_at(data.get("at")))
    elif kind in ("daily", "weekly"):
        time_text = _parse_time(data.get("time"))
        days = _parse_days(data.get("days"), required=kind == "weekly")
        if kind == "daily" and len(days) == 7:
            days = ()  # every day: store it one way only
        schedule = Schedule(kind=kind, tz=tz, time=time_text, days=days)
    elif kind == "every":
        schedule = Schedule(kind="every", tz=tz, minutes=_parse_minutes(data.get("minutes")))
    else:
        text = data.get("cron")
        if not isinstance(text, str):
            raise InvalidInputError(
                "schedule.cron", f"must be a string of five fields like '0 8 * * 1-5', got {text!r}"
            )
        expr = parse_cron(text)
        schedule = Schedule(kind="cron", tz=tz, cron=expr.text)
        reference = _RHYTHM_REFERENCE if now is None else now
        if next_fire(schedule, reference) is None:
            raise InvalidInputError(
                "schedule.cron",
                f"'{expr.text}' never fires (a date such as 30 February); check the day fields",
            )

    if kind == "once" and now is not None and next_fire(schedule, now) is None:
        raise InvalidInputError("schedule.at", f"is in the past ({schedule.at} {tz}); pick a later time")
    return schedule


# -------------------------------------------------------------------------------------------- fire times


def _gap_end(zone: ZoneInfo, earliest: int, latest: int) -> float:
    """The instant a spring-forward gap ends: the first second in (earliest, latest] on the new offset."""
    after_offset = datetime.fromtimestamp(latest, zone).utcoffset()
    lo, hi = earliest, latest
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if datetime.fromtimestamp(mid, zone).utcoffset() == after_offset:
            hi = mid
        else:
            lo = mid
    return float(hi)


def _instants(local: datetime, zone: ZoneInfo, *, fixed: bool) -> tuple[float, ...]:
    """The instants at which a naive local time fires under the DST rules above."""
    first = local.replace(tzinfo=zone, fold=0).timestamp()
    second = local.replace(tzinfo=zone, fold=1).timestamp()
    if first == second:
        return (first,)
    # Round-trip through UTC: a time in a spring-forward gap comes back as a different wall time.
    exists = datetime.fromtimestamp(first, zone).replace(tzinfo=None) == local
    if exists:  # repeated by an autumn change; fold=0 is the first occurrence
        return (first,) if fixed else (first, second)
    if not fixed:
        return ()
    # In a gap, fold=0 uses the old (smaller) offset and so the later instant; the gap ends between them.
    return (_gap_end(zone, int(second), int(first)),)


def _wall(ts: float, zone: ZoneInfo) -> datetime:
    return datetime.fromtimestamp(ts, zone).replace(tzinfo=None)


def _first_after(
    candidates: Iterable[datetime], zone: ZoneInfo, after: float, *, fixed: bool
) -> float | None:
    # Candidates come in local order, but around a DST change local order and instant order differ, so
    # keep looking until no later local time can be an earlier instant.
    best: float | None = None
    best_wall: datetime | None = None
    for local in candidates:
        if best_wall is not None and local > best_wall + _MAX_SHIFT:
            break
        for instant in _instants(local, zone, fixed=fixed):
            if instant > after and (best is None or instant < best):
                best, best_wall = instant, _wall(instant, zone)
    return best


def _daily_candidates(schedule: Schedule, start: datetime) -> Iterator[datetime]:
    hour, minute = (int(part) for part in schedule.time.split(":"))
    day = start.date()
    # Two weeks is enough for any day set; the iterator is cut short by _first_after anyway.
    for _ in range(15):
        if not schedule.days or day.weekday() in schedule.days:
            moment = datetime(day.year, day.month, day.day, hour, minute)
            if moment >= start:
                yield moment
        day += timedelta(days=1)


def _expr(schedule: Schedule) -> CronExpr:
    return parse_cron(schedule.cron)


def next_fire(schedule: Schedule, after: float) -> float | None:
    """The first fire time (epoch seconds) strictly after `after`; None when there is none."""
    if schedule.kind == "every":
        step = schedule.minutes * 60
        return float((math.floor(after / step) + 1) * step)
    zone = _zone(schedule.tz)
    if schedule.kind == "once":
        return _first_after([datetime.fromisoformat(schedule.at)], zone, after, fixed=True)
    start = _wall(after, zone) - _MAX_SHIFT
    if schedule.kind in ("daily", "weekly"):
        return _first_after(_daily_candidates(schedule, start), zone, after, fixed=True)
    expr = _expr(schedule)
    return _first_after(expr.local_times_from(start), zone, after, fixed=not expr.frequent)


def fire_times(schedule: Schedule, after: float, count: int) -> list[float]:
    times: list[float] = []
    moment = after
    while len(times) < count:
        fire = next_fire(schedule, moment)
        if fire is None:
            break
        times.append(fire)
        moment = fire
    return times


# ------------------------------------------------------------------------------------------ interval, grace


def _smallest_day_gap(days: tuple[int, ...]) -> float:
    if len(days) <= 1:
        return 7 * _DAY_S
    gaps = [b - a for a, b in itertools.pairwise(days)]
    gaps.append(days[0] + 7 - days[-1])
    return min(gaps) * _DAY_S


def interval_s(schedule: Schedule) -> float | None:
    """The typical gap between fires; the smallest one for day sets and cron, so grace never overlaps."""
    if schedule.kind == "once":
        return None
    if schedule.kind == "every":
        return float(schedule.minutes * 60)
    if schedule.kind in ("daily", "weekly"):
        return _DAY_S if schedule.kind == "daily" and not schedule.days else _smallest_day_gap(schedule.days)
    return _cron_interval(schedule.cron, schedule.tz)


# The Scheduler asks for grace on every due rule; a minutely cron costs a few ms to sample, so remember it.
@functools.lru_cache(maxsize=256)
def _cron_interval(cron: str, tz: str) -> float | None:
    fires = fire_times(Schedule(kind="cron", tz=tz, cron=cron), _RHYTHM_REFERENCE, _RHYTHM_SAMPLES)
    if len(fires) < 2:
        return None
    return min(b - a for a, b in itertools.pairwise(fires))


def grace_s(schedule: Schedule) -> float:
    """How late a missed run may still start (docs/runs.md#missed-runs-and-grace): min(interval / 2, 2 h); a
    `once` gets 2 h."""
    interval = interval_s(schedule)
    if interval is None:
        return MAX_GRACE_S
    return min(interval / 2, MAX_GRACE_S)


# ------------------------------------------------------------------------------------------------- words


def _days_words(days: tuple[int, ...], lang: Language) -> str:
    if not days or len(days) == 7:
        return text(lang, "schedule.every_day")
    if days == _WEEKDAYS:
        return text(lang, "schedule.every_weekday")
    names = [text(lang, f"schedule.day.{d}") for d in days]
    listed = names[0]
    if len(names) > 1:
        listed = text(lang, "schedule.day_separator").join(names[:-1])
        listed += text(lang, "schedule.last_day_separator") + names[-1]
    return text(lang, "schedule.on_days", days=listed)


def words(schedule: Schedule, lang: str) -> str:
    """The schedule as a person reads it back, e.g. 「每个工作日 08:00（Asia/Shanghai）」."""
    language = as_language(lang)
    zone = text(language, "schedule.zone", tz=schedule.tz)
    if schedule.kind == "once":
        day, _, clock = schedule.at.partition("T")
        return text(language, "schedule.once", day=day, clock=clock, zone=zone)
    if schedule.kind in ("daily", "weekly"):
        lead = _days_words(schedule.days, language)
        return text(language, "schedule.at", days=lead, time=schedule.time, zone=zone)
    if schedule.kind == "every":
        minutes = schedule.minutes
        if minutes % 60 == 0:
            hours = minutes // 60
            if hours == 1:
                return text(language, "schedule.every_hour", zone=zone)
            return text(language, "schedule.every_hours", hours=hours, zone=zone)
        return text(language, "schedule.every_minutes", minutes=minutes, zone=zone)
    return _cron_words(schedule.cron, language, zone) or text(
        language, "schedule.cron", cron=schedule.cron, zone=zone
    )


def _cron_days(field: str) -> tuple[int, ...] | None:
    """A cron day-of-week field ('*', '1-5', '1,3,5', '0', '7') as our days (0=Monday .. 6=Sunday); None
    for anything fancier (steps, names), which is then said as the cron itself."""
    if field == "*":
        return ()
    days: set[int] = set()
    for part in field.split(","):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            return None
        first, last = int(low), int(high) if dash else int(low)
        if not 0 <= first <= last <= 7:
            return None
        days.update((d - 1) % 7 for d in range(first, last + 1))  # cron: 0 and 7 are Sunday, 1 Monday
    return tuple(sorted(days))


def _cron_words(cron: str, lang: Language, zone: str) -> str:
    """The common cron shapes in words, as a daily or weekly schedule reads ('30 7 * * 1-5' is 「每个工作日
    07:30」, '*/15 * * * *' 「每 15 分钟」); '' for the rest."""
    fields = cron.split()
    if len(fields) != 5:
        return ""
    minute, hour, dom, month, dow = fields
    if dom != "*" or month != "*":
        return ""
    if minute.startswith("*/") and minute[2:].isdigit() and int(minute[2:]) > 0 and hour == dow == "*":
        return text(lang, "schedule.every_minutes", minutes=int(minute[2:]), zone=zone)
    if minute.isdigit() and hour.isdigit() and int(minute) < 60 and int(hour) < 24:
        days = _cron_days(dow)
        if days is None:
            return ""
        lead = _days_words(days, lang)
        return text(lang, "schedule.at", days=lead, time=f"{int(hour):02d}:{int(minute):02d}", zone=zone)
    return ""


def iso_local(ts: float, tz: str) -> str:
    """ISO 8601 in the zone with its offset, e.g. "2026-12-01T08:00:00+08:00"."""
    return datetime.fromtimestamp(ts, _zone(tz)).isoformat(timespec="seconds")


def preview(
    data: object, *, default_tz: str, after: float, count: int, lang: Language = "zh"
) -> dict[str, object]:
    """What a schedule would do: its words and the next `count` fire times after `after` (1..50).

    `after` doubles as "now" for validation, so a `once` in the past is refused as at creation.
    """
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_PREVIEW:
        raise InvalidInputError("count", f"must be a whole number 1-{MAX_PREVIEW}, got {count!r}")
    schedule = parse_schedule(data, default_tz=default_tz, now=after)
    return {
        "words": words(schedule, lang),
        "next": [iso_local(ts, schedule.tz) for ts in fire_times(schedule, after, count)],
    }

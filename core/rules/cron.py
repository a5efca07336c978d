"""Five-field cron expressions ("m h dom mon dow"): parsing and matching local wall-clock minutes.

Semantics follow Vixie/Debian cron, which is what users who write cron expect: dow 0 and 7 are Sunday,
month and day names are case-insensitive, and when both day fields are restricted a day matches if
EITHER matches (a field "is restricted" unless it starts with `*`, as in Vixie cron). Turning local
minutes into instants (DST gaps and repeats) is the caller's job, see `core.rules.schedule`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from core import translations
from core.errors import InvalidInputError
from core.translations import Language

FIELD = "schedule.cron"

_MONTH_NAMES = {
    name: i + 1
    for i, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}
_DOW_NAMES = {name: i for i, name in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}

# (name, low, high, names); dow accepts 7 as a second Sunday, folded to 0 after expansion.
_FIELDS: tuple[tuple[str, int, int, dict[str, int]], ...] = (
    ("minute", 0, 59, {}),
    ("hour", 0, 23, {}),
    ("day of month", 1, 31, {}),
    ("month", 1, 12, _MONTH_NAMES),
    ("day of week", 0, 7, _DOW_NAMES),
)

# The usual shorthands; `@reboot` has no place in a schedule and is refused.
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}

# How far ahead a search goes before deciding the expression never fires (e.g. "0 0 30 2 *").
# Five years covers 29 February on a given weekday combination only partly, which is acceptable.
HORIZON_DAYS = 5 * 366


@dataclass(frozen=True, slots=True)
class CronExpr:
    text: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    doms: frozenset[int]
    months: frozenset[int]
    dows: frozenset[int]  # 0=Sunday .. 6=Saturday
    dom_star: bool
    dow_star: bool
    # Debian cron treats a job with `*` in its minute or hour field as "frequent": it follows the wall
    # clock through DST changes (skipped minutes are skipped, repeated minutes run twice) instead of
    # firing once at a fixed time.
    frequent: bool

    def matches_day(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        dom_ok = day.day in self.doms
        dow_ok = (day.weekday() + 1) % 7 in self.dows
        if self.dom_star or self.dow_star:
            return dom_ok and dow_ok
        return dom_ok or dow_ok

    def matches(self, local: datetime) -> bool:
        return local.minute in self.minutes and local.hour in self.hours and self.matches_day(local.date())

    def local_times_from(self, start: datetime) -> Iterator[datetime]:
        """Matching naive local minutes at or after `start`, in order, up to the horizon.

        Steps by day, then hour, then minute, so a sparse expression costs one cheap check per day.
        """
        first = start.replace(second=0, microsecond=0)
        if first < start:
            first += timedelta(minutes=1)
        day = first.date()
        for _ in range(HORIZON_DAYS):
            if self.matches_day(day):
                for hour in self.hours:
                    if day == first.date() and hour < first.hour:
                        continue
                    for minute in self.minutes:
                        moment = datetime(day.year, day.month, day.day, hour, minute)
                        if moment >= first:
                            yield moment
            day += timedelta(days=1)


class CronRefusal(InvalidInputError):
    """A refused expression. The message stays English for the API and the model; `words(lang)` says the
    same in a person's language (`cron.refused.*` in core's catalogue), the field's name included."""

    def __init__(self, message: str, key: str, index: int = 0, **fields: object) -> None:
        super().__init__(FIELD, message, key=key, fields={"index": index, **fields})
        self.index = index

    def words(self, lang: Language) -> str:
        name = translations.text(lang, f"cron.part.{self.index}") if self.index else ""
        return translations.text(lang, self.key, **{**self.fields, "name": name})


def _value(token: str, index: int, name: str, low: int, high: int, names: dict[str, int]) -> int:
    lowered = token.lower()
    if lowered in names:
        return names[lowered]
    if not token.isdigit():
        if names:
            choices = ", ".join(names)
            raise CronRefusal(
                f"cron field {index} ({name}) has '{token}'; use {low}-{high} or one of {choices}",
                "cron.refused.not_a_name",
                index,
                token=token,
                low=low,
                high=high,
                choices=choices,
            )
        raise CronRefusal(
            f"cron field {index} ({name}) must be a number {low}-{high}, got '{token}'",
            "cron.refused.not_a_number",
            index,
            token=token,
            low=low,
            high=high,
        )
    value = int(token)
    if not low <= value <= high:
        raise CronRefusal(
            f"cron field {index} ({name}) must be {low}-{high}, got {value}",
            "cron.refused.out_of_range",
            index,
            value=value,
            low=low,
            high=high,
        )
    return value


def _expand(text: str, index: int) -> tuple[set[int], bool]:
    name, low, high, names = _FIELDS[index - 1]
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise CronRefusal(
                f"cron field {index} ({name}) has an empty list item in '{text}'",
                "cron.refused.empty_item",
                index,
                text=text,
            )
        base, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not step_text.isdigit() or int(step_text) == 0:
                raise CronRefusal(
                    f"cron field {index} ({name}) step must be a positive number, got '{step_text}'",
                    "cron.refused.step",
                    index,
                    step=step_text,
                )
            step = int(step_text)
        if base == "*":
            # `*` over dow means 0-6: counting 7 as well would make */2 hit Sunday twice.
            start, end = low, (6 if index == 5 else high)
        elif "-" in base:
            a, _, b = base.partition("-")
            start = _value(a, index, name, low, high, names)
            end = _value(b, index, name, low, high, names)
            if start > end:
                raise CronRefusal(
                    f"cron field {index} ({name}) range '{base}' goes backwards; write it low-high",
                    "cron.refused.backwards",
                    index,
                    range=base,
                )
        else:
            if slash:
                # Vixie cron rejects "5/15"; say what to write instead of guessing what it means.
                raise CronRefusal(
                    f"cron field {index} ({name}) '{part}': write a step as */n or a-b/n",
                    "cron.refused.step_form",
                    index,
                    part=part,
                )
            start = end = _value(base, index, name, low, high, names)
        values.update(range(start, end + 1, step))
    if index == 5 and 7 in values:
        values.discard(7)
        values.add(0)
    return values, text.startswith("*")


def parse_cron(text: str) -> CronExpr:
    """Parse a five-field expression (or an @macro); raises InvalidInputError('schedule.cron', ...)."""
    stripped = " ".join(text.split())
    if not stripped:
        raise CronRefusal(
            "is empty; write five fields 'minute hour day-of-month month day-of-week'", "cron.refused.empty"
        )
    expanded = stripped
    if stripped.startswith("@"):
        macro = stripped.lower()
        if macro not in _MACROS:
            choices = ", ".join(_MACROS)
            raise CronRefusal(
                f"unknown shorthand '{stripped}'; use five fields or one of {choices}",
                "cron.refused.unknown_shorthand",
                text=stripped,
                choices=choices,
            )
        expanded = _MACROS[macro]
    fields = expanded.split(" ")
    if len(fields) != 5:
        count = len(fields)
        raise CronRefusal(
            f"needs five fields 'minute hour day-of-month month day-of-week', got {count}: '{stripped}'",
            "cron.refused.field_count",
            count=count,
            text=stripped,
        )
    parsed = [_expand(field, i + 1) for i, field in enumerate(fields)]
    return CronExpr(
        text=stripped,
        minutes=tuple(sorted(parsed[0][0])),
        hours=tuple(sorted(parsed[1][0])),
        doms=frozenset(parsed[2][0]),
        months=frozenset(parsed[3][0]),
        dows=frozenset(parsed[4][0]),
        dom_star=parsed[2][1],
        dow_star=parsed[4][1],
        frequent="*" in fields[0] or "*" in fields[1],
    )

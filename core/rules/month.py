"""Calendar months in a rule's own time zone: a rule's monthly budget counts from the 1st at 00:00 there
and resumes at the next 1st (docs/cost.md#rule-budgets). Pure."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo


def month_start(at: float, tz: str) -> float:
    """The 1st of `at`'s month at 00:00 in `tz`, as epoch seconds."""
    local = datetime.fromtimestamp(at, ZoneInfo(tz))
    return local.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()


def next_month_start(at: float, tz: str) -> float:
    """The next 1st at 00:00 in `tz` after `at`'s month began."""
    local = datetime.fromtimestamp(at, ZoneInfo(tz))
    year, month = (local.year + 1, 1) if local.month == 12 else (local.year, local.month + 1)
    return datetime(year, month, 1, tzinfo=ZoneInfo(tz)).timestamp()


def month_key(at: float, tz: str) -> str:
    """「2026-11」: which month `at` falls in, in `tz`."""
    return datetime.fromtimestamp(at, ZoneInfo(tz)).strftime("%Y-%m")

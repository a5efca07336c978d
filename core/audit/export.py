"""Reading the audit trail back: a filter over its events, and exports as JSONL or CSV
(docs/audit.md#reading-and-exporting)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

Format = Literal["jsonl", "csv"]
FORMATS: tuple[Format, ...] = ("jsonl", "csv")
# CSV columns in this order; anything else an event carries goes, as JSON, into `meta`.
CSV_COLUMNS = (
    "at",
    "id",
    "run",
    "session",
    "task",
    "kind",
    "action",
    "target",
    "decision",
    "result",
    "rule",
    "actor",
    "durationMs",
    "hash",
)


@dataclass(frozen=True, slots=True)
class AuditFilter:
    """Events that match every field given; `target` matches a part of the target, ignoring case;
    `since` / `until` are ISO times compared as moments with the event's `at` (inclusive; no zone is UTC)."""

    run: str | None = None
    task: str | None = None
    session: str | None = None
    kind: str | None = None
    decision: str | None = None
    result: str | None = None
    target: str | None = None
    since: str | None = None
    until: str | None = None

    def matches(self, event: dict[str, Any]) -> bool:
        for name in ("run", "task", "session", "kind", "decision", "result"):
            wanted = getattr(self, name)
            if wanted is not None and event.get(name) != wanted:
                return False
        if self.target is not None and self.target.lower() not in str(event.get("target", "")).lower():
            return False
        if self.since is None and self.until is None:
            return True
        at = _moment(str(event.get("at", "")))
        if at is None:
            return False  # an event without a readable time is in no window
        since, until = _moment(self.since or ""), _moment(self.until or "")
        return (since is None or at >= since) and (until is None or at <= until)


def _moment(text: str) -> datetime | None:
    """An ISO time as a moment: the same moment in any zone or precision compares equal; a time without a
    zone is UTC, as the trail writes its own."""
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def matching(events: Iterable[dict[str, Any]], where: AuditFilter) -> Iterator[dict[str, Any]]:
    return (event for event in events if where.matches(event))


def as_jsonl(events: Iterable[dict[str, Any]]) -> str:
    """The events exactly as written, one per line, so an export can be verified like the trail."""
    return "".join(
        json.dumps(e, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n" for e in events
    )


def _cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    # A spreadsheet runs a cell that starts with one of these as a formula.
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def as_csv(events: Iterable[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow([*CSV_COLUMNS, "meta"])
    for event in events:
        rest = {k: v for k, v in event.items() if k not in CSV_COLUMNS and k not in ("v", "prev")}
        writer.writerow([*(_cell(event.get(c)) for c in CSV_COLUMNS), _cell(rest) if rest else ""])
    return out.getvalue()


def export(events: Iterable[dict[str, Any]], fmt: Format) -> str:
    return as_jsonl(events) if fmt == "jsonl" else as_csv(events)

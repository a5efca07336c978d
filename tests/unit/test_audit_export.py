"""Reading the audit trail back: filters by run, kind, decision, target text and time; JSONL exactly as
written; CSV with fixed columns, the rest in `meta`, and no cell a spreadsheet would run."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from core.audit.export import AuditFilter, as_csv, export, matching
from core.audit.trail import AuditTrail
from core.clock import FakeClock


async def _trail(tmp_path: Path) -> AuditTrail:
    clock = FakeClock()
    trail = AuditTrail(tmp_path / "audit.jsonl", clock)
    await trail.append(
        {"run": "r_1", "kind": "command.exec", "target": "pytest -q", "decision": "allow", "result": "ok"}
    )
    clock.advance(60)
    await trail.append(
        {
            "run": "r_1",
            "kind": "guard.refusal",
            "target": "/home/a/.ssh/id_rsa",
            "decision": "deny",
            "result": "blocked",
            "rule": "credential-paths",
            "reason": "credential files are never readable",
        }
    )
    clock.advance(60)
    await trail.append(
        {"run": "r_2", "kind": "file.write", "target": '=HYPERLINK("x")', "decision": "allow", "result": "ok"}
    )
    return trail


async def test_filters_pick_the_events_a_person_asked_for(tmp_path: Path) -> None:
    trail = await _trail(tmp_path)
    events = list(trail.events())

    def kinds(where: AuditFilter) -> list[str]:
        return [e["kind"] for e in matching(events, where)]

    assert kinds(AuditFilter(run="r_1")) == ["command.exec", "guard.refusal"]
    assert kinds(AuditFilter(decision="deny")) == ["guard.refusal"]
    assert kinds(AuditFilter(target="SSH")) == ["guard.refusal"]
    assert kinds(AuditFilter(since=events[1]["at"])) == ["guard.refusal", "file.write"]
    assert kinds(AuditFilter(until=events[1]["at"], run="r_1")) == ["command.exec", "guard.refusal"]
    assert kinds(AuditFilter(kind="nothing")) == []


async def test_the_time_window_compares_times_not_their_spelling(tmp_path: Path) -> None:
    trail = await _trail(tmp_path)
    events = list(trail.events())
    second = datetime.fromisoformat(events[1]["at"])

    def kinds(where: AuditFilter) -> list[str]:
        return [e["kind"] for e in matching(events, where)]

    # The same moment written in another zone, and without its milliseconds.
    elsewhere = second.astimezone(timezone(timedelta(hours=8))).isoformat()
    assert kinds(AuditFilter(since=elsewhere)) == ["guard.refusal", "file.write"]
    first = datetime.fromisoformat(events[0]["at"])
    assert first.microsecond == 0 and events[0]["at"].endswith(".000+00:00")
    assert kinds(AuditFilter(until=first.isoformat())) == ["command.exec"]
    # A time without a zone is UTC, as the trail writes it.
    naive = second.astimezone(UTC).replace(tzinfo=None).isoformat()
    assert kinds(AuditFilter(since=naive)) == ["guard.refusal", "file.write"]


async def test_a_whole_jsonl_export_is_the_trail_byte_for_byte(tmp_path: Path) -> None:
    trail = await _trail(tmp_path)
    assert export(trail.events(), "jsonl") == trail.path.read_text(encoding="utf-8")
    copy = AuditTrail(tmp_path / "copy.jsonl", FakeClock())
    copy.path.write_text(export(trail.events(), "jsonl"), encoding="utf-8")
    assert copy.verify().intact


async def test_csv_has_fixed_columns_and_keeps_the_rest_in_meta(tmp_path: Path) -> None:
    trail = await _trail(tmp_path)
    rows = list(csv.DictReader(io.StringIO(as_csv(trail.events()))))
    assert [r["kind"] for r in rows] == ["command.exec", "guard.refusal", "file.write"]
    assert rows[1]["rule"] == "credential-paths"
    assert rows[1]["meta"] == '{"reason": "credential files are never readable"}'
    assert rows[0]["meta"] == ""
    # A target that looks like a formula is text in a spreadsheet, not something it runs.
    assert rows[2]["target"] == '\'=HYPERLINK("x")'
    assert len(rows[0]["hash"]) == 64

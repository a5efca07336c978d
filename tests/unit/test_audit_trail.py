"""The audit trail's file: events chained by hash, so an edited, removed or moved line is found; a torn
last line from a crash is skipped, not taken for tampering, and cut off by the next append."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.audit.trail import GENESIS, AuditTrail
from core.clock import FakeClock


@pytest.fixture
def trail(tmp_path: Path) -> AuditTrail:
    return AuditTrail(tmp_path / "audit" / "audit.jsonl", FakeClock())


async def _three(trail: AuditTrail) -> list[dict[str, object]]:
    return [
        await trail.append({"run": "r_1", "kind": "command.exec", "target": f"echo {n}", "decision": "allow"})
        for n in range(3)
    ]


def _lines(trail: AuditTrail) -> list[str]:
    return trail.path.read_text(encoding="utf-8").splitlines()


async def test_events_are_written_one_per_line_and_chained(trail: AuditTrail) -> None:
    written = await _three(trail)
    assert [json.loads(line) for line in _lines(trail)] == written
    assert written[0]["prev"] == GENESIS
    assert written[1]["prev"] == written[0]["hash"]
    assert written[0]["at"] == "2026-09-21T14:13:20.000+00:00"
    assert written[0]["v"] == 1
    assert str(written[0]["id"]).startswith("evt_")
    report = trail.verify()
    assert (report.intact, report.events, report.torn_tail) == (True, 3, False)
    assert list(trail.events()) == written
    assert oct(trail.path.stat().st_mode & 0o777) == "0o600"


async def test_an_edited_line_is_found(trail: AuditTrail) -> None:
    await _three(trail)
    lines = _lines(trail)
    lines[1] = lines[1].replace('"decision":"allow"', '"decision":"deny"')
    trail.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = trail.verify()
    assert not report.intact
    assert report.broken_at == 2
    assert "edited" in report.reason
    assert report.events == 1


async def test_a_removed_line_is_found(trail: AuditTrail) -> None:
    await _three(trail)
    lines = _lines(trail)
    del lines[1]
    trail.path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = trail.verify()
    assert (report.intact, report.broken_at) == (False, 2)
    assert "removed or moved" in report.reason


async def test_a_line_rehashed_after_editing_still_breaks_the_next(trail: AuditTrail) -> None:
    """Whoever edits a line and fixes its hash must rewrite every line after it."""
    from core.audit.trail import chained_hash

    await _three(trail)
    events = [json.loads(line) for line in _lines(trail)]
    events[0]["target"] = "rm -rf /"
    events[0]["hash"] = chained_hash(GENESIS, events[0])
    trail.path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    report = trail.verify()
    assert (report.intact, report.broken_at) == (False, 2)


async def test_a_torn_last_line_is_skipped_then_cut_off(tmp_path: Path, trail: AuditTrail) -> None:
    written = await _three(trail)
    with trail.path.open("ab") as f:
        f.write(b'{"v":1,"id":"evt_half","kin')  # a crash mid-write
    report = trail.verify()
    assert (report.intact, report.events, report.torn_tail) == (True, 3, True)
    assert list(trail.events()) == written

    after_restart = AuditTrail(trail.path, FakeClock())
    fourth = await after_restart.append({"run": "r_2", "kind": "run.resume"})
    assert fourth["prev"] == written[-1]["hash"]
    assert b"evt_half" not in trail.path.read_bytes()
    report = after_restart.verify()
    assert (report.intact, report.events, report.torn_tail) == (True, 4, False)


async def test_a_new_trail_on_the_same_file_carries_the_chain_on(trail: AuditTrail) -> None:
    written = await _three(trail)
    again = AuditTrail(trail.path, FakeClock())
    fourth = await again.append({"kind": "run.finish"})
    assert fourth["prev"] == written[-1]["hash"]
    assert again.verify().intact


def test_no_file_is_an_empty_intact_trail(trail: AuditTrail) -> None:
    report = trail.verify()
    assert (report.intact, report.events) == (True, 0)
    assert list(trail.events()) == []


async def test_the_chain_goes_on_from_a_file_read_only_at_its_end(
    trail: AuditTrail, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart reads the trail's last block, not the whole file; lines longer than a block still chain."""
    from core.audit import trail as trail_module

    monkeypatch.setattr(trail_module, "TAIL_BLOCK", 40)
    written = [await trail.append({"kind": "command.exec", "target": "x" * 300}) for _ in range(3)]
    with trail.path.open("ab") as f:
        f.write(b'{"v":1,"id":"evt_half"')
    again = AuditTrail(trail.path, FakeClock())
    fourth = await again.append({"kind": "run.finish"})
    assert fourth["prev"] == written[-1]["hash"]
    report = again.verify()
    assert (report.intact, report.events, report.torn_tail) == (True, 4, False)

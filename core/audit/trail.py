"""The audit trail's file: one JSON object per line, each carrying the hash of the line before it
(docs/audit.md#the-chain).

A line's `hash` is SHA-256 over the previous line's hash and the line's own canonical JSON without its
`hash`, so an edited, removed, reordered or inserted line breaks the chain from there on, and `verify` names
the first line that does not fit. A crash can leave only a torn last line (no newline): it is reported as
torn and skipped, never taken for tampering; the next append cuts it off (its append never returned, so no
one was told it was written) and writes after the last whole line.

Appends are serialised in this process (one host holds a data dir) and written with one `write` each,
then flushed to disk, off the event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.clock import Clock
from core.ids import new_id

GENESIS = "0" * 64
TAIL_BLOCK = 64 * 1024
VERSION = 1


@dataclass(frozen=True, slots=True)
class ChainReport:
    """What `verify` found: `intact` when every whole line fits the chain."""

    intact: bool
    events: int
    torn_tail: bool
    broken_at: int | None = None  # 1-based line number of the first line that does not fit
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "intact": self.intact,
            "events": self.events,
            "tornTail": self.torn_tail,
            "brokenAtLine": self.broken_at,
            "reason": self.reason,
        }


def canonical(event: Mapping[str, Any]) -> bytes:
    return json.dumps(event, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")


def chained_hash(prev: str, event: Mapping[str, Any]) -> str:
    body = {k: v for k, v in event.items() if k != "hash"}
    return hashlib.sha256(prev.encode("ascii") + b"\n" + canonical(body)).hexdigest()


def _whole_lines(raw: bytes) -> tuple[list[bytes], bool]:
    """The file's complete lines, and whether a torn (unterminated) last line followed them."""
    if not raw:
        return [], False
    lines = raw.split(b"\n")
    tail = lines.pop()  # b"" when the file ends with a newline
    return lines, tail != b""


def _last_hash_in(raw: bytes, *, whole_from_start: bool) -> str | None:
    """The hash of the last whole event in `raw` (whose first line may be cut unless it starts the file)."""
    lines, _torn = _whole_lines(raw)
    if not whole_from_start and lines:
        lines = lines[1:]
    for line in reversed(lines):
        try:
            last = json.loads(line)
        except ValueError:
            continue
        if isinstance(last, dict) and isinstance(last.get("hash"), str):
            return str(last["hash"])
    return None


class AuditTrail:
    def __init__(self, path: Path, clock: Clock) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._last_hash: str | None = None  # read from the file on the first append

    async def append(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Write one event (its `v`, `id`, `at`, `prev` and `hash` are added) and return it as written."""
        return await asyncio.to_thread(self._append, dict(fields))

    def _append(self, fields: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            prev, cut_at = self._tail()
            if cut_at is not None:
                os.truncate(self.path, cut_at)
            event: dict[str, Any] = {
                "v": VERSION,
                "id": new_id("evt"),
                "at": self._clock.now().isoformat(timespec="milliseconds"),
                **fields,
                "prev": prev,
            }
            event["hash"] = chained_hash(prev, event)
            line = canonical(event) + b"\n"
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._last_hash = event["hash"]
            return event

    def _tail(self) -> tuple[str, int | None]:
        """The hash to chain onto, and where to cut a torn last line off (None: nothing torn). Reads the
        file's end only: a trail of years is not read whole at the first append after a start."""
        if self._last_hash is not None:
            return self._last_hash, None
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return GENESIS, None
        block = TAIL_BLOCK
        while True:
            start = max(0, size - block)
            with self.path.open("rb") as f:
                f.seek(start)
                raw = f.read()
            found = _last_hash_in(raw, whole_from_start=start == 0)
            if found is not None or start == 0:
                cut_at = start + raw.rfind(b"\n") + 1 if raw and not raw.endswith(b"\n") else None
                return found or GENESIS, cut_at
            block *= 4

    def events(self) -> Iterator[dict[str, Any]]:
        """Every whole, readable event in file order (torn and unreadable lines skipped)."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return
        lines, _torn = _whole_lines(raw)
        for line in lines:
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                yield event

    def verify(self) -> ChainReport:
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return ChainReport(intact=True, events=0, torn_tail=False)
        lines, torn = _whole_lines(raw)
        prev = GENESIS
        count = 0
        for number, line in enumerate(lines, start=1):
            try:
                event = json.loads(line)
            except ValueError:
                return ChainReport(False, count, torn, number, "the line is not JSON")
            if not isinstance(event, dict) or not isinstance(event.get("hash"), str):
                return ChainReport(False, count, torn, number, "the line is not an audit event")
            if event.get("prev") != prev:
                return ChainReport(
                    False,
                    count,
                    torn,
                    number,
                    "it does not follow the line before it (a line removed or moved)",
                )
            if chained_hash(prev, event) != event["hash"]:
                return ChainReport(False, count, torn, number, "its content does not match its hash (edited)")
            prev = event["hash"]
            count += 1
        return ChainReport(intact=True, events=count, torn_tail=torn)

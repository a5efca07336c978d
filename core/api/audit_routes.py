"""The audit routes of the local API (docs/audit.md#the-api).

GET /api/audit                 -> the trail's events, newest first, filtered (?run=&task=&session=&kind=
                                  &decision=&result=&target=&since=&until=&limit=), as JSON, or a file
                                  with ?format=jsonl|csv (every match, in the trail's order)
GET /api/tasks/{id}/audit      -> the same for one task's events
GET /api/audit/verify          -> whether the chain is intact, and the first line that is not
"""

from __future__ import annotations

import asyncio
import itertools
import re
from datetime import datetime
from typing import TYPE_CHECKING, Any

from core.api import web
from core.api.search_routes import is_text
from core.audit.export import FORMATS, AuditFilter, export, matching
from core.errors import InvalidInputError

if TYPE_CHECKING:
    from core.host import Host

DEFAULT_LIMIT = 200
MAX_LIMIT = 5000
_FILTERS = ("run", "task", "session", "kind", "decision", "result", "target", "since", "until")
_QUERY = frozenset({*_FILTERS, "format", "limit"})
_MEDIA = {"jsonl": "application/x-ndjson", "csv": "text/csv"}
MAX_FILTER_CHARS = 200
_NAMES = re.compile(r"[A-Za-z0-9_.:/-]{1,120}")  # ids, kinds, decisions and results


def _filter(query: dict[str, str], **fixed: str) -> AuditFilter:
    unknown = sorted(set(query) - _QUERY - {"lang"})
    if unknown:
        raise InvalidInputError(
            unknown[0], f"is not a filter; filters are {', '.join(_FILTERS)}, format, limit"
        )
    values: dict[str, str | None] = {name: (query.get(name) or None) for name in _FILTERS}
    for name, value in values.items():
        if value is None:
            continue
        if len(value) > MAX_FILTER_CHARS or not is_text(value):
            raise InvalidInputError(name, f"must be UTF-8 text of at most {MAX_FILTER_CHARS} characters")
        if name not in ("target", "since", "until") and not _NAMES.fullmatch(value):
            raise InvalidInputError(name, "must be an id or a name such as command.exec, deny or ok")
    for name in ("since", "until"):
        value = values[name]
        if value is not None:
            try:
                datetime.fromisoformat(value)
            except ValueError:
                raise InvalidInputError(
                    name, "must be an ISO time such as 2026-12-06T10:00:00+00:00"
                ) from None
    values.update(fixed)
    return AuditFilter(**values)


def _limit(query: dict[str, str]) -> int:
    raw = query.get("limit", "")
    if not raw:
        return DEFAULT_LIMIT
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= MAX_LIMIT:
        raise InvalidInputError("limit", f"must be a whole number from 1 to {MAX_LIMIT}")
    return int(raw)


async def _answer(host: Host, query: dict[str, str], where: AuditFilter, name: str) -> web.Response:
    fmt = query.get("format", "json")
    if fmt not in ("json", *FORMATS):
        raise InvalidInputError("format", "must be json, jsonl or csv")
    limit = _limit(query)
    await host.audit.flush()  # what was just done is in the answer
    trail = host.audit.trail

    def read() -> list[dict[str, Any]]:
        found = matching(trail.events(), where)
        # A file export is the whole match; the JSON answer is the newest `limit` events.
        if fmt != "json":
            return list(found)
        return list(itertools.islice(reversed(list(found)), limit))

    events = await asyncio.to_thread(read)
    if fmt == "json":
        return web.json_response({"events": events, "count": len(events)})
    return web.Response(
        text=export(events, fmt),  # type: ignore[arg-type]
        content_type=_MEDIA[fmt],
        charset="utf-8",
        headers={"Content-Disposition": f'attachment; filename="{name}.{fmt}"'},
    )


def add_audit_routes(router: web.Router, host: Host) -> None:
    async def list_events(request: web.Request) -> web.Response:
        return await _answer(host, request.query, _filter(request.query), "audit")

    async def task_events(request: web.Request) -> web.Response:
        task = await host.tasks.reads.task(request.match_info["id"])
        if "task" in request.query:
            raise InvalidInputError("task", "is the task in the path; leave it out of the query")
        return await _answer(
            host, request.query, _filter(request.query, task=task.id), f"task-{task.id}-audit"
        )

    async def verify(request: web.Request) -> web.Response:
        await host.audit.flush()
        report = await asyncio.to_thread(host.audit.trail.verify)
        return web.json_response(
            {**report.to_json(), "unwritten": host.audit.unwritten, "path": str(host.audit.trail.path)}
        )

    router.add_get("/api/audit", list_events)
    router.add_get("/api/audit/verify", verify)
    router.add_get("/api/tasks/{id}/audit", task_events)

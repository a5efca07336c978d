"""The memory routes of the local API (docs/memory.md#the-api).

GET    /api/bots/{id}/memory          -> the bot's notes, how full the notebook is, and its limits
POST   /api/bots/{id}/memory          -> 201 a note the person writes ({text})
PUT    /api/bots/{id}/memory/{entry}  -> the note with new words ({text}); a deleted note comes back
DELETE /api/bots/{id}/memory/{entry}  -> the note as it was (so that it can be put back)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.api import web
from core.api.validation import json_object, required_str
from core.errors import InvalidInputError
from core.memory.notebook import MAX_CHARS, MAX_ENTRIES, MAX_ENTRY_CHARS
from core.memory.views import MemoryView
from core.store.memory import MemoryEntry

if TYPE_CHECKING:
    from core.host import Host

_ALLOWED = frozenset({"text"})


def memory_json(view: MemoryView) -> dict[str, Any]:
    return {
        "entries": [entry_json(e) for e in view.entries],
        "used": {"entries": view.usage.entries, "chars": view.usage.chars},
        "limits": {"entries": MAX_ENTRIES, "chars": MAX_CHARS, "entryChars": MAX_ENTRY_CHARS},
        "fullSince": view.full_since,
    }


def entry_json(entry: MemoryEntry) -> dict[str, Any]:
    return {
        "id": entry.id,
        "text": entry.text,
        "source": {"kind": entry.source_kind, "id": entry.source_id, "title": entry.source_title},
        "createdAt": entry.created_at,
        "updatedAt": entry.updated_at,
        "editedBy": entry.edited_by,
    }


def add_memory_routes(router: web.Router, host: Host) -> None:
    async def get_memory(request: web.Request) -> web.Response:
        return web.json_response(memory_json(await host.memory.view(request.match_info["id"])))

    async def post_memory(request: web.Request) -> web.Response:
        text = await _text(request)
        entry = await host.memory.add(request.match_info["id"], text)
        return web.json_response(entry_json(entry), status=201)

    async def put_entry(request: web.Request) -> web.Response:
        text = await _text(request)
        entry = await host.memory.edit(request.match_info["id"], request.match_info["entry"], text)
        return web.json_response(entry_json(entry))

    async def delete_entry(request: web.Request) -> web.Response:
        entry = await host.memory.delete(request.match_info["id"], request.match_info["entry"])
        return web.json_response(entry_json(entry))

    router.add_get("/api/bots/{id}/memory", get_memory)
    router.add_post("/api/bots/{id}/memory", post_memory)
    router.add_put("/api/bots/{id}/memory/{entry}", put_entry)
    router.add_delete("/api/bots/{id}/memory/{entry}", delete_entry)


async def _text(request: web.Request) -> str:
    body = await json_object(request)
    extra = sorted(set(body) - _ALLOWED)
    if extra:
        raise InvalidInputError(extra[0], 'is not a field of a memory note; send {"text": ...}')
    return required_str(body, "text")

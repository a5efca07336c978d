"""Reading request bodies: a malformed body or a missing field is a 400 that names the field."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from core.errors import InvalidInputError

MAX_BODY = 1_000_000


async def json_object(request: web.Request) -> dict[str, Any]:
    if request.content_length is not None and request.content_length > MAX_BODY:
        raise InvalidInputError("body", f"is larger than {MAX_BODY} bytes")
    raw = await request.read()
    if not raw.strip():
        raise InvalidInputError("body", "is empty; send a JSON object")
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError("body", f"is not valid JSON ({exc})") from exc
    if not isinstance(body, dict):
        raise InvalidInputError("body", "must be a JSON object")
    return body


def required_str(body: dict[str, Any], field: str) -> str:
    if field not in body:
        raise InvalidInputError(field, "is required")
    value = body[field]
    if not isinstance(value, str):
        raise InvalidInputError(field, "must be a string")
    return value


def optional_str(body: dict[str, Any], field: str, default: str = "") -> str:
    value = body.get(field, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise InvalidInputError(field, "must be a string")
    return value

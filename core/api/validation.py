"""Reading request bodies: a malformed body or a missing field is a 400 that names the field.

`json_object` refuses, before any handler sees the body, what no field can ever accept: a body too large or
nested too deep, text that is not Unicode (a lone surrogate) or holds NUL, and numbers JSON can't carry
(NaN, Infinity, 1e400, integers past 2**53). Handlers then check only what their fields mean."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from core.api import web
from core.errors import InvalidInputError

MAX_BODY = 1_000_000
# Real bodies nest three levels (a rule's trigger filter); the JSON decoder itself gives up near 1,000 with a
# RecursionError, so deep nesting is refused both from the decoder and from the walk below.
MAX_DEPTH = 32
# The largest integer every JSON reader (JavaScript's included) holds exactly.
MAX_JSON_INT = 2**53
_SHOWN_NAME = 60
# A surrogate left in a decoded str was lone: json.loads joins every valid \ud83d\ude00 pair.
_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")


class BodyTooLargeError(InvalidInputError):
    """The body is over MAX_BODY bytes: HTTP 413."""

    code = "too_large"


async def json_object(request: web.Request, *, optional: bool = False, cap: int = MAX_BODY) -> dict[str, Any]:
    """The body as a JSON object, checked as above. With `optional`, an empty body is `{}`; `cap` is for a
    route that takes files in its JSON (a chat message's attachments)."""
    raw = await read_body(request, cap)
    if not raw.strip():
        if optional:
            return {}
        raise InvalidInputError("body", "is empty; send a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            "body", f"is not UTF-8 (bad byte at {exc.start}); send the JSON as UTF-8"
        ) from None
    try:
        body = json.loads(text)
    except RecursionError:
        raise InvalidInputError(
            "body", f"nests deeper than {MAX_DEPTH} levels; send a flatter object"
        ) from None
    except ValueError as exc:  # a JSONDecodeError, or an integer of more than 4,300 digits
        raise InvalidInputError("body", f"is not valid JSON ({exc})") from None
    if not isinstance(body, dict):
        raise InvalidInputError("body", "must be a JSON object")
    check_json_values(body)
    return body


async def read_body(request: web.Request, cap: int = MAX_BODY) -> bytes:
    # A declared length is refused before a byte is read; a chunked body stops at the cap, so neither is
    # ever held in memory whole.
    too_large = f"is larger than {cap} bytes; send less"
    if request.content_length is not None and request.content_length > cap:
        raise BodyTooLargeError("body", too_large)
    try:
        return await request.read(cap)
    except web.BodyTooLarge:
        raise BodyTooLargeError("body", too_large) from None


def check_json_values(body: dict[str, Any]) -> None:
    """Raise InvalidInputError naming the first value no field accepts (see the module's docstring).

    Iterative, so a body that is deep but still under the decoder's limit can't exhaust the stack here."""
    pending: list[tuple[str, object, int]] = [("", body, 1)]
    while pending:
        path, value, depth = pending.pop()
        if isinstance(value, dict | list) and depth > MAX_DEPTH:
            raise InvalidInputError(path, f"nests deeper than {MAX_DEPTH} levels; send a flatter object")
        if isinstance(value, dict):
            for key, item in value.items():
                name = f"{path}.{_shown(key)}" if path else _shown(key)
                _check_text(name, key, what="field name")
                pending.append((name, item, depth + 1))
        elif isinstance(value, list):
            pending.extend((f"{path}[{index}]", item, depth + 1) for index, item in enumerate(value))
        elif isinstance(value, str):
            _check_text(path, value, what="text")
        elif isinstance(value, float) and not math.isfinite(value):
            # json.loads reads NaN, Infinity and -Infinity, and turns 1e400 into inf.
            raise InvalidInputError(path, "must be a finite number; NaN, Infinity and 1e400 are not")
        elif isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_JSON_INT:
            raise InvalidInputError(path, f"is too large a number; numbers here stay within ±{MAX_JSON_INT}")


def _check_text(field: str, text: str, *, what: str) -> None:
    found = _BAD_CHAR.search(text)
    if found is None:
        return
    if found.group() == "\x00":
        raise InvalidInputError(field, f"the {what} holds a NUL character (\\u0000); remove it")
    raise InvalidInputError(
        field,
        f"the {what} holds a lone surrogate ({ascii(found.group())[1:-1]}), which is not a character; "
        "send valid Unicode text",
    )


def _shown(key: str) -> str:
    """A field name fit for an error message: unencodable characters escaped, a huge name cut."""
    shown = key.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\u0000")
    return shown if len(shown) <= _SHOWN_NAME else shown[: _SHOWN_NAME - 1] + "…"


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

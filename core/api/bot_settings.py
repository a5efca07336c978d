"""Reading the bot settings bodies of the API (`PUT /api/bots/{id}`, `POST /api/bots/{id}/test-connection`).

Only shapes are checked here (types, unknown fields); the values themselves are checked by BotService, so the
UI and the API reject the same things with the same messages. A field is named the way the body spells it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from core.bots.validation import validate_images
from core.bots.views import BotUpdate
from core.errors import InvalidInputError

_TOP_FIELDS = frozenset(
    {"name", "avatar", "model", "preset", "taskSlots", "quietHours", "paused", "windowNudge", "images"}
)
_MODEL_FIELDS = frozenset({"provider", "baseUrl", "model", "apiKey"})
_QUIET_FIELDS = frozenset({"start", "end"})
_CONNECTION_FIELDS = frozenset({"baseUrl", "model", "apiKey"})


def _no_unknown(body: dict[str, Any], allowed: frozenset[str], prefix: str = "") -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInputError(
            prefix + unknown[0], f"is not a setting here; use {', '.join(sorted(allowed))}"
        )


def _str(body: dict[str, Any], key: str, field: str) -> str | None:
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(field, "must be a string")
    return value


def _object(body: dict[str, Any], key: str) -> dict[str, Any]:
    value = body.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(key, "must be a JSON object")
    return value


def bot_update_from_json(body: dict[str, Any]) -> BotUpdate:
    """`{name?, avatar?, model?: {provider?, baseUrl?, model?, apiKey?}, preset?, taskSlots?,
    quietHours?: {start?, end?}, paused?, windowNudge?, images?}`. A missing or null field stays as it is;
    `apiKey: ""` removes the stored key; `images` is whether the model is shown images."""
    _no_unknown(body, _TOP_FIELDS)
    model = _object(body, "model")
    _no_unknown(model, _MODEL_FIELDS, "model.")
    quiet = _object(body, "quietHours")
    _no_unknown(quiet, _QUIET_FIELDS, "quietHours.")
    slots = body.get("taskSlots")
    if slots is not None and (isinstance(slots, bool) or not isinstance(slots, int)):
        raise InvalidInputError("taskSlots", "must be a whole number from 1 to 4")
    paused = body.get("paused")
    if paused is not None and not isinstance(paused, bool):
        raise InvalidInputError("paused", "must be true or false")
    nudge = body.get("windowNudge")
    if nudge is not None and not isinstance(nudge, bool):
        raise InvalidInputError("windowNudge", "must be true or false")
    images = body.get("images")
    if images is not None:
        images = validate_images(images)
    return BotUpdate(
        name=_str(body, "name", "name"),
        avatar=_str(body, "avatar", "avatar"),
        model_provider=_str(model, "provider", "provider"),
        model_base_url=_str(model, "baseUrl", "baseUrl"),
        model_name=_str(model, "model", "model"),
        api_key=_str(model, "apiKey", "apiKey"),
        preset=_str(body, "preset", "preset"),
        task_slots=slots,
        quiet_start=_str(quiet, "start", "quietHours.start"),
        quiet_end=_str(quiet, "end", "quietHours.end"),
        paused=paused,
        window_nudge=nudge,
        images=images,
    )


@dataclass(frozen=True, slots=True)
class ConnectionRequest:
    """What to test; None takes the bot's own value (its stored key for `api_key`)."""

    base_url: str | None
    model: str | None
    api_key: str | None


def connection_request_from_json(body: dict[str, Any]) -> ConnectionRequest:
    _no_unknown(body, _CONNECTION_FIELDS)
    return ConnectionRequest(
        base_url=_str(body, "baseUrl", "baseUrl"),
        model=_str(body, "model", "model"),
        api_key=_str(body, "apiKey", "apiKey"),
    )

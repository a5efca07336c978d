"""The rule routes of the local API (docs/architecture.md#the-local-api): list, create, read, edit, delete,
versions, and a preview of a schedule's next times.

Only shapes are checked here (types, unknown fields); the values are checked by RuleService, so the UI, the
chat tool and the API reject the same things with the same messages. A field is named the way the body
spells it; schedule fields as `schedule.<field>`.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from core.api import web
from core.api.validation import json_object, optional_str, required_str
from core.delivery.outbox import local_zone
from core.errors import InvalidInputError
from core.translations import Language

if TYPE_CHECKING:
    from core.host import Host

# The language of the answer's words comes as `?lang=` (as on the task routes); only a preview, which is
# all words, takes it in the body too.
_CREATE_FIELDS = frozenset(
    {"botId", "title", "instruction", "schedule", "kind", "mode", "conversationId", "trigger"}
)
_UPDATE_FIELDS = frozenset({"title", "instruction", "schedule", "mode", "trigger"})
_PREVIEW_FIELDS = frozenset({"schedule", "from", "count", "lang"})
DEFAULT_PREVIEW_COUNT = 5
# 9000-01-01T00:00Z. Schedules count on in calendar dates, which end with 9999; far below that, fifty fire
# times of the sparsest cron (five years apart at most) still fit.
LAST_INSTANT = 221_845_392_000


def add_rule_routes(router: web.Router, host: Host) -> None:
    routes = RuleRoutes(host)
    router.add_get("/api/rules", routes.list_rules)
    router.add_post("/api/rules", routes.create_rule)
    # Before /api/rules/{id}, so "preview" is never taken for a rule id.
    router.add_post("/api/rules/preview", routes.preview)
    router.add_get("/api/rules/{id}", routes.get_rule)
    router.add_put("/api/rules/{id}", routes.update_rule)
    router.add_delete("/api/rules/{id}", routes.delete_rule)
    router.add_get("/api/rules/{id}/versions", routes.versions)
    router.add_post("/api/rules/{id}/run", routes.run_now)
    router.add_get("/api/rules/{id}/runs", routes.runs)


class RuleRoutes:
    def __init__(self, host: Host) -> None:
        self._host = host

    async def list_rules(self, request: web.Request) -> web.Response:
        rules = await self._host.rules.list_rules(
            bot_id=request.query.get("bot") or None, lang=_lang(request, {})
        )
        return web.json_response({"rules": [r.to_json() for r in rules]})

    async def create_rule(self, request: web.Request) -> web.Response:
        """`{botId?, title, instruction, schedule, kind?, mode?, conversationId?, trigger?}` -> 201."""
        body = await json_object(request)
        _no_unknown(body, _CREATE_FIELDS)
        title = required_str(body, "title")
        instruction = required_str(body, "instruction")
        if body.get("schedule") is None:
            raise InvalidInputError("schedule", "is required")
        rule = await self._host.rules.create(
            bot_id=optional_str(body, "botId") or None,
            title=title,
            instruction=instruction,
            schedule=body["schedule"],
            kind=optional_str(body, "kind", "check"),
            mode=optional_str(body, "mode", "act"),
            conversation_id=optional_str(body, "conversationId") or None,
            trigger=body.get("trigger"),
            lang=_lang(request, body),
        )
        return web.json_response(rule.to_json(), status=201)

    async def get_rule(self, request: web.Request) -> web.Response:
        rule = await self._host.rules.get(request.match_info["id"], lang=_lang(request, {}))
        return web.json_response(rule.to_json())

    async def update_rule(self, request: web.Request) -> web.Response:
        """`{title?, instruction?, schedule?, mode?, trigger?}`: a missing or null field stays as it is."""
        body = await json_object(request)
        _no_unknown(body, _UPDATE_FIELDS)
        rule = await self._host.rules.update(
            request.match_info["id"],
            title=_optional(body, "title"),
            instruction=_optional(body, "instruction"),
            schedule=body.get("schedule"),
            mode=_optional(body, "mode"),
            trigger=body.get("trigger"),
            lang=_lang(request, body),
        )
        return web.json_response(rule.to_json())

    async def delete_rule(self, request: web.Request) -> web.Response:
        await self._host.rules.delete(request.match_info["id"])
        return web.Response(status=204)

    async def versions(self, request: web.Request) -> web.Response:
        found = await self._host.rules.versions(request.match_info["id"])
        return web.json_response({"versions": [v.to_json() for v in found]})

    async def run_now(self, request: web.Request) -> web.Response:
        """Run the rule now, in its mode -> 202 `{runId}`; 409 while a run of it is queued or working."""
        run_id = await self._host.rules.run_now(request.match_info["id"])
        return web.json_response({"runId": run_id}, status=202)

    async def runs(self, request: web.Request) -> web.Response:
        """The run log, newest first; `?before=` (epoch seconds or ISO 8601) pages back."""
        before = _instant(request.query.get("before"), "before") if request.query.get("before") else None
        found = await self._host.rules.runs(request.match_info["id"], before=before, lang=_lang(request, {}))
        return web.json_response({"runs": [r.to_json() for r in found]})

    async def preview(self, request: web.Request) -> web.Response:
        """`{schedule, from?, count?, lang?}` -> `{words, next}`: the schedule in words and its next `count`
        times (ISO 8601, in the schedule's zone) strictly after `from` (default now). Nothing is stored."""
        body = await json_object(request)
        _no_unknown(body, _PREVIEW_FIELDS)
        if body.get("schedule") is None:
            raise InvalidInputError("schedule", "is required")
        count = body.get("count", DEFAULT_PREVIEW_COUNT)
        if isinstance(count, bool) or not isinstance(count, int):
            raise InvalidInputError("count", "must be a whole number")
        result = self._host.rules.preview(
            body["schedule"], after=_instant(body.get("from")), count=count, lang=_lang(request, body)
        )
        return web.json_response(result)


def _no_unknown(body: dict[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInputError(unknown[0], f"is not a field here; use {', '.join(sorted(allowed))}")


def _optional(body: dict[str, Any], field: str) -> str | None:
    value = body.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(field, "must be a string")
    return value


def _lang(request: web.Request, body: dict[str, Any]) -> Language:
    """The body's `lang`, else `?lang=`, else zh."""
    lang = body.get("lang")
    if lang is None or lang == "":
        lang = request.query.get("lang", "zh")
    if lang not in ("zh", "en"):  # an empty list or object is no language either
        raise InvalidInputError("lang", "must be zh or en")
    return "zh" if lang == "zh" else "en"


def _instant(value: object, field: str = "from") -> float | None:
    """`from` (or `before`): epoch seconds (a number, or digits in a string) or an ISO 8601 time. A time
    without an offset is read in the system's zone, as a person typing it would mean it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise InvalidInputError(field, "must be an ISO 8601 time or epoch seconds")
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text)
        except ValueError:
            value = _iso_seconds(text, field)
    # An int is compared as it is: float() of a 400-digit one raises OverflowError.
    if not (isinstance(value, int) or math.isfinite(value)) or not 0 <= value <= LAST_INSTANT:
        raise InvalidInputError(field, "must be a time between 1970 and the year 9000")
    return float(value)


def _iso_seconds(text: str, field: str) -> float:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:  # a year past 9999 among them
        shown = text if len(text) <= 40 else text[:39] + "…"
        raise InvalidInputError(field, f"must be an ISO 8601 time or epoch seconds, not {shown!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=ZoneInfo(local_zone()))
    return moment.timestamp()

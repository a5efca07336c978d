"""The local HTTP API (DESIGN.md "Interfaces"): loopback only, bearer token, JSON errors.

Used by `errand serve`, scripts and tests. Bad input never changes state: every handler validates fully
before it calls a command.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import math
import re
from typing import Any

from core.api import web
from core.api.audit_routes import add_audit_routes
from core.api.bot_settings import bot_update_from_json, connection_request_from_json
from core.api.channel_routes import add_channel_routes
from core.api.mcp_routes import add_mcp_routes
from core.api.memory_routes import add_memory_routes
from core.api.multipart import form_parts
from core.api.price_routes import add_price_routes
from core.api.rule_routes import add_rule_routes
from core.api.search_routes import add_search_routes
from core.api.skills_routes import add_skills_routes
from core.api.validation import (
    MAX_BODY,
    BodyTooLargeError,
    json_object,
    optional_str,
    read_body,
    required_str,
)
from core.api.views import conversation_json, live_json, message_json
from core.api.web_search_routes import add_web_search_routes
from core.changes import MessagesChanged
from core.chat import attachments as attachment_files
from core.chat.attachment import MAX_MESSAGE_BYTES
from core.chat.service import MAX_TEXT
from core.errors import (
    ConflictError,
    ErrandError,
    InvalidInputError,
    NotFoundError,
    UnavailableError,
    UnprocessableError,
)
from core.host import Host
from core.translations import Language
from core.version import __version__

log = logging.getLogger(__name__)

# The whole Host header, exactly: a looser test lets "[::1].evil.com" or "localhost.evil.com" through, names
# a DNS-rebinding page controls. [0-9], not \d, which also matches digits of other scripts.
_LOOPBACK_HOST = re.compile(r"(?:127\.0\.0\.1|localhost|\[::1\])(?::[0-9]{1,5})?")
_LINE_SHOWN = 200
# How long a connection keeps reading a body its handler left unread (one refused as too large, or sent with
# a GET), so the client can finish sending and read the answer. A local client needs little; stop() (SIGTERM)
# ends lingering connections at once anyway.
LINGER_S = 1.0


def error_response(status: int, code: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": code, "message": message}}, status=status)


def is_loopback_host(header: str) -> bool:
    return _LOOPBACK_HOST.fullmatch(header.strip().lower()) is not None


def _bad_http_answer(exc: web.BadHttp) -> web.Response:
    """What the HTTP parser refuses (a method no standard has, a head over 8 KB, a malformed header) gets
    the API's JSON errors too."""
    if exc.unknown_method:
        return error_response(
            400, "bad_method", "Unknown HTTP method; this API takes GET, POST, PUT and DELETE."
        )
    line = " ".join(str(exc).split())
    shown = line if len(line) <= _LINE_SHOWN else line[: _LINE_SHOWN - 1] + "…"
    return error_response(400, "bad_request", f"The request is not valid HTTP: {shown}")


def _int_query(request: web.Request, name: str, *, default: int, low: int, high: int) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInputError(name, f"must be a whole number, not {raw!r}") from None
    if not low <= value <= high:
        raise InvalidInputError(name, f"must be between {low} and {high}")
    return value


def _status_for(exc: ErrandError) -> int:
    if isinstance(exc, BodyTooLargeError):
        return 413
    if isinstance(exc, UnprocessableError):
        return 422
    if isinstance(exc, InvalidInputError):
        return 400
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, UnavailableError):
        return 503
    return 400


class ApiServer:
    def __init__(self, host: Host, *, token: str, port: int = 0) -> None:
        self._host = host
        self.token = token
        self._port = port
        self._server: web.HttpServer | None = None
        self.url = ""

    def routes(self) -> web.Router:
        r = web.Router()
        r.add_get("/api/health", self.health)
        r.add_get("/api/bots", self.list_bots)
        r.add_post("/api/bots", self.create_bot)
        # Before /api/bots/{id}, so "presets" is never taken for a bot id.
        r.add_get("/api/bots/presets", self.model_presets)
        r.add_get("/api/bots/{id}", self.get_bot)
        r.add_put("/api/bots/{id}", self.update_bot)
        r.add_post("/api/bots/{id}/test-connection", self.test_connection)
        r.add_get("/api/conversations", self.list_conversations)
        r.add_post("/api/conversations", self.create_conversation)
        r.add_get("/api/conversations/{id}/messages", self.list_messages)
        r.add_post("/api/conversations/{id}/messages", self.post_message)
        r.add_get("/api/tasks", self.list_tasks)
        r.add_post("/api/tasks", self.create_task)
        r.add_get("/api/tasks/{id}", self.get_task)
        r.add_get("/api/tasks/{id}/runs/{run}/activity", self.run_activity)
        r.add_post("/api/tasks/{id}/stop", self.stop_task)
        r.add_post("/api/tasks/{id}/continue", self.continue_task)
        r.add_delete("/api/tasks/{id}", self.delete_task)
        r.add_post("/api/tasks/{id}/budget", self.task_budget)
        r.add_post("/api/tasks/{id}/keep", self.keep_task)
        r.add_get("/api/tasks/{id}/export", self.export_task)
        r.add_get("/api/rules/{id}/export", self.export_rule)
        add_rule_routes(r, self._host)
        add_channel_routes(r, self._host)
        add_mcp_routes(r, self._host)
        add_skills_routes(r, self._host)
        add_memory_routes(r, self._host)
        add_audit_routes(r, self._host)
        add_web_search_routes(r, self._host)
        add_price_routes(r, self._host.prices)
        add_search_routes(r, self._host.search)
        r.add_get("/api/attention", self.list_attention)
        r.add_post("/api/attention/{id}/{action}", self.attention_action)
        return r

    async def start(self) -> str:
        server = web.HttpServer(
            self.routes(),
            middlewares=[self._errors, self._loopback_only, self._authenticated],
            max_body=MAX_BODY,
            bad_http=_bad_http_answer,
            linger_s=LINGER_S,
        )
        port = await server.start(self._port)  # a taken port raises OSError, with nothing left set up
        self._server = server
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            await server.stop()

    # ---- middleware ---------------------------------------------------------------------------------

    async def _errors(self, request: web.Request, handler: web.Handler) -> web.Response:
        try:
            return await handler(request)
        except ErrandError as exc:
            return error_response(_status_for(exc), exc.code, exc.message)
        except web.HttpError as exc:
            if exc.status == 404:
                return error_response(404, "not_found", f"No route {request.method} {request.path}.")
            if exc.status == 405:
                return error_response(
                    405, "method_not_allowed", f"{request.method} is not allowed on {request.path}."
                )
            return error_response(exc.status, "http_error", exc.reason)
        except Exception:
            log.exception("API handler failed: %s %s", request.method, request.path)
            return error_response(
                500, "internal", "Internal error; see the log in the data dir's logs folder."
            )

    async def _loopback_only(self, request: web.Request, handler: web.Handler) -> web.Response:
        # Refusing non-loopback Host headers defeats DNS-rebinding pages that reach 127.0.0.1 from a browser.
        if not is_loopback_host(request.headers.get("Host", "")):
            return error_response(
                403,
                "forbidden_host",
                "Only loopback Host headers (127.0.0.1, localhost, [::1], each with an optional :port) "
                "are accepted.",
            )
        return await handler(request)

    async def _authenticated(self, request: web.Request, handler: web.Handler) -> web.Response:
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        # Header bytes that are not UTF-8 arrive as surrogate escapes; they turn back into those bytes here.
        sent = token.strip().encode("utf-8", "surrogateescape")
        if scheme.lower() != "bearer" or not hmac.compare_digest(sent, self.token.encode()):
            return error_response(
                401,
                "unauthorized",
                "Missing or wrong token. Send 'Authorization: Bearer <token>' from api.json.",
            )
        return await handler(request)

    # ---- routes -------------------------------------------------------------------------------------

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "status": "ok" if self._host.started.is_set() else "starting",
                "version": __version__,
                "sandbox": self._host.sandbox_note,
            }
        )

    async def list_bots(self, request: web.Request) -> web.Response:
        return web.json_response({"bots": [b.to_json() for b in await self._host.bots.list()]})

    async def create_bot(self, request: web.Request) -> web.Response:
        body = await json_object(request)
        name = required_str(body, "name")
        api_key = optional_str(body, "apiKey") or None
        bot = await self._host.bots.create(
            name,
            base_url=optional_str(body, "baseUrl"),
            model=optional_str(body, "model"),
            api_key=api_key,
            preset=optional_str(body, "preset", "workspace-write"),
            # true/false: the person's choice; missing or null: as the model is known to (checked there).
            images=body.get("images"),
        )
        return web.json_response(bot.to_json(), status=201)

    async def get_bot(self, request: web.Request) -> web.Response:
        return web.json_response((await self._host.bots.get(request.match_info["id"])).to_json())

    async def update_bot(self, request: web.Request) -> web.Response:
        bot_id = request.match_info["id"]
        changes = bot_update_from_json(await json_object(request))
        bot = await self._host.bots.update(bot_id, changes)
        return web.json_response(bot.to_json())

    async def test_connection(self, request: web.Request) -> web.Response:
        """`{baseUrl?, model?, apiKey?}`, each defaulting to the bot's own. The answer is 200 whether the
        model answered or not: `ok` says which, `message` what to do."""
        bot = await self._host.bots.get(request.match_info["id"])
        body = await json_object(request, optional=True)
        wanted = connection_request_from_json(body)
        check = await self._host.bots.test_connection(
            wanted.base_url if wanted.base_url is not None else bot.model_base_url,
            wanted.model if wanted.model is not None else bot.model_name,
            api_key=wanted.api_key,
            bot_id=bot.id,
            lang=_lang(request),
        )
        return web.json_response({"ok": check.ok, "message": check.message, "latencyMs": check.latency_ms})

    async def model_presets(self, request: web.Request) -> web.Response:
        presets = await self._host.bots.model_presets(_lang(request))
        return web.json_response(
            {
                "presets": [
                    {
                        "key": p.key,
                        "label": p.label,
                        "baseUrl": p.base_url,
                        "model": p.model,
                        "needsKey": p.needs_key,
                        "local": p.local,
                        "models": list(p.models),
                        "keyHint": p.key_hint,
                        "images": p.images,
                    }
                    for p in presets
                ]
            }
        )

    async def list_conversations(self, request: web.Request) -> web.Response:
        bot = request.query.get("bot")
        if bot:
            await self._host.bots.get(bot)
        items = [c for c in await self._host.chat.list_conversations() if not bot or c.bot_id == bot]
        return web.json_response({"conversations": [conversation_json(c) for c in items]})

    async def create_conversation(self, request: web.Request) -> web.Response:
        body = await json_object(request, optional=True)
        bot_id = optional_str(body, "botId") or None
        title = optional_str(body, "title")
        conversation = await self._host.chat.create_conversation(bot_id, title)
        return web.json_response(conversation_json(conversation), status=201)

    async def list_messages(self, request: web.Request) -> web.Response:
        """`?after=<message id>&wait=<seconds>` long-polls: it answers as soon as a newer message is stored
        (or after `wait` seconds), so a script can wait for a reply without hammering the API."""
        conversation_id = request.match_info["id"]
        after = _int_query(request, "after", default=0, low=0, high=2**62)
        wait = _int_query(request, "wait", default=0, low=0, high=60)
        # Listening before the first read: a reply stored while that read runs still wakes the wait.
        changed, unsubscribe = self._host.bus.queue(
            lambda e: isinstance(e, MessagesChanged) and e.conversation_id == conversation_id
        )
        try:
            messages = await self._host.chat.list_messages(conversation_id)
            if wait and not any(m.id > after for m in messages):
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        while not any(m.id > after for m in messages):
                            await changed.get()
                            messages = await self._host.chat.list_messages(conversation_id)
        finally:
            unsubscribe()
        if after:
            messages = [m for m in messages if m.id > after]
        return web.json_response(
            {
                "messages": [message_json(m) for m in messages],
                "live": live_json(self._host.chat.live_reply(conversation_id)),
            }
        )

    async def post_message(self, request: web.Request) -> web.Response:
        """`{text, attachments?: [{name, mediaType, dataBase64}]}`, or a multipart form with a `text` field
        and file parts (docs/chat.md#attachments)."""
        conversation_id = request.match_info["id"]
        content_type = request.headers.get("content-type", "")
        try:
            if content_type.lower().startswith("multipart/form-data"):
                parts = form_parts(content_type, await read_body(request, MAX_MESSAGE_BYTES))
                said = parts.get("text", "")
                text = said if isinstance(said, str) else ""
                attachments = attachment_files.from_parts(parts)
            else:
                body = await json_object(request, cap=MAX_MESSAGE_BYTES)
                attachments = attachment_files.from_json(body.get("attachments"))
                text = optional_str(body, "text") if attachments else required_str(body, "text")
        except BodyTooLargeError:
            raise BodyTooLargeError("body", attachment_files.TOO_LARGE) from None
        message = await self._host.chat.say(conversation_id, text, attachments=attachments)
        return web.json_response({"message": message_json(message)}, status=202)

    # ---- tasks (docs/architecture.md#the-local-api) -------------------------------------------------

    async def list_tasks(self, request: web.Request) -> web.Response:
        groups = [g for g in request.query.get("group", "").split(",") if g]
        tasks = await self._host.tasks.list_tasks(
            bot_id=request.query.get("bot") or None, groups=groups, lang=_lang(request)
        )
        return web.json_response({"tasks": [t.to_json() for t in tasks]})

    async def create_task(self, request: web.Request) -> web.Response:
        body = await json_object(request)
        text = _words(body)
        budget = _usd(body, "budgetUsd") if body.get("budgetUsd") is not None else None
        task = await self._host.tasks.create(
            bot_id=optional_str(body, "botId") or None,
            conversation_id=optional_str(body, "conversationId") or None,
            words=text,
            budget_usd=budget,
            record_request=True,
            acceptance=body.get("acceptance"),
            plan=_flag(body, "plan"),
        )
        return web.json_response(task.to_json(), status=201)

    async def get_task(self, request: web.Request) -> web.Response:
        detail = await self._host.tasks.detail(request.match_info["id"], lang=_lang(request))
        return web.json_response(detail.to_json())

    async def run_activity(self, request: web.Request) -> web.Response:
        steps = await self._host.tasks.run_activity(request.match_info["id"], request.match_info["run"])
        return web.json_response({"steps": steps})

    async def stop_task(self, request: web.Request) -> web.Response:
        task = await self._host.tasks.stop_task(request.match_info["id"])
        return web.json_response(task.to_json())

    async def continue_task(self, request: web.Request) -> web.Response:
        body = await json_object(request)
        how = await self._host.tasks.follow_up(request.match_info["id"], _words(body))
        return web.json_response({"result": how}, status=202)

    async def delete_task(self, request: web.Request) -> web.Response:
        await self._host.tasks.delete_task(request.match_info["id"])
        return web.json_response({"deleted": request.match_info["id"]})

    async def task_budget(self, request: web.Request) -> web.Response:
        """`{addUsd}` or `{budgetUsd}` (docs/architecture.md#the-local-api): raises the budget; a task stopped
        at it goes on."""
        body = await json_object(request)
        unknown = sorted(set(body) - {"addUsd", "budgetUsd"})
        if unknown:
            raise InvalidInputError(unknown[0], "unknown field; send addUsd or budgetUsd")
        amounts = {name: _usd(body, name) for name in ("addUsd", "budgetUsd") if name in body}
        task = await self._host.tasks.set_budget(
            request.match_info["id"], add_usd=amounts.get("addUsd"), budget_usd=amounts.get("budgetUsd")
        )
        return web.json_response(task.to_json())

    async def keep_task(self, request: web.Request) -> web.Response:
        detail = await self._host.tasks.keep(request.match_info["id"])
        return web.json_response(detail.to_json())

    async def export_task(self, request: web.Request) -> web.Response:
        task_id = request.match_info["id"]
        text = await self._host.tasks.export_markdown(task_id, _lang(request))
        return _markdown(text, f"task-{task_id}.md")

    async def export_rule(self, request: web.Request) -> web.Response:
        rule_id = request.match_info["id"]
        text = await self._host.rules.export_markdown(rule_id, _lang(request))
        return _markdown(text, f"rule-{rule_id}.md")

    # ---- needs you (docs/architecture.md#the-local-api) ---------------------------------------------

    async def list_attention(self, request: web.Request) -> web.Response:
        items = await self._host.attention.items(lang=_lang(request))
        return web.json_response({"items": [i.to_json() for i in items], "count": len(items)})

    async def attention_action(self, request: web.Request) -> web.Response:
        body = await json_object(request, optional=True)
        result = await self._host.attention.act(request.match_info["id"], request.match_info["action"], body)
        return web.json_response(result)


def _words(body: dict[str, Any]) -> str:
    """A task's `text`: the same bound as a chat message, since both reach the model whole."""
    text = required_str(body, "text")
    if len(text) > MAX_TEXT:
        raise InvalidInputError("text", f"must be at most {MAX_TEXT} characters")
    return text


def _usd(body: dict[str, Any], name: str) -> float:
    value = body[name]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError(name, "must be a number of US dollars, e.g. 1 or 2.5")
    try:
        amount = float(value)  # a 400-digit integer is valid JSON but no float
    except OverflowError:
        raise InvalidInputError(name, "is far too large; budgets go up to $1,000") from None
    if not math.isfinite(amount):
        raise InvalidInputError(name, "must be a number of US dollars, e.g. 1 or 2.5")
    return amount


def _markdown(text: str, filename: str) -> web.Response:
    return web.Response(
        text=text,
        content_type="text/markdown",
        charset="utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


def _flag(body: dict[str, Any], name: str) -> bool:
    value = body.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InvalidInputError(name, f"must be true or false (got {value!r})")
    return value


def _lang(request: web.Request) -> Language:
    lang = request.query.get("lang", "zh")
    if lang not in ("zh", "en"):
        raise InvalidInputError("lang", "must be zh or en")
    return "zh" if lang == "zh" else "en"

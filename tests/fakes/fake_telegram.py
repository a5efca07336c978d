"""A fake of the Telegram Bot API on 127.0.0.1 (aiohttp), for tests: pass `base_url` / `file_base_url` to
python-telegram-bot 22.8 (`Bot(token, base_url=…, base_file_url=…)` or the ApplicationBuilder's).

What it models, as PTB and https://core.telegram.org/bots/api describe it:

- One route `POST|GET /bot{token}/{method}` (method names case-insensitive, as Telegram's). Parameters come
  from the query string and the body: form-encoded (PTB's default, nested values as JSON strings), multipart
  or JSON. A wrong token gets 401 "Unauthorized", an unknown method 404 "Not Found"; errors are
  `{"ok":false,"error_code":N,"description":"…"}` with the same HTTP status.
- `getMe`, `deleteWebhook` (`drop_pending_updates`), `sendChatAction`, `getUpdates`: `offset` confirms and
  forgets every update below it (negative: keep the last -offset), `limit` (1-100), `timeout` holds the call
  until an update is queued, `allowed_updates` is remembered between calls like Telegram's (updates of other
  types are dropped). A second poll while one is held ends the older with 409, as Telegram does.
  `update_id`s count up from 1000.
- `sendMessage`: chat must exist (created by `user_says` or `add_chat`), text 1-4096 chars, `parse_mode`,
  `reply_parameters` (`message_id`, `allow_sending_without_reply`) or the older `reply_to_message_id`,
  `reply_markup` inline keyboards (callback_data 1-64 bytes), `message_thread_id`. Answers a full Message:
  per-chat increasing `message_id`, `date` from `now`, `from` = the bot, `reply_to_message` one level deep.
- `editMessageText` / `editMessageReplyMarkup` on the bot's own messages ("message is not modified" when
  nothing changes), `answerCallbackQuery` for ids the fake issued and not yet answered, `getFile` and
  `GET /file/bot{token}/{file_path}` for bytes registered with `put_file`.
- Builders queue updates: `user_says` (text, photo, document, replies, threads, entities), `press`
  (a callback_query on a bot message), `queue_raw` (anything).
- Recorded: `sent`, `edits`, `callback_answers`, `calls`, `get_updates_calls`, `last_offset`; waiters
  `wait_for_sent`, `wait_for_edits`, `wait_for_callback_answers`, `wait_polling`.
- Switches (each consumed by the next matching calls): `fail_sends(n, status)`, `rate_limit(n, retry_after)`,
  `lose_answer(n)` (the send is done and recorded, then the connection drops with no answer) for the
  "send" methods (`SEND_METHODS`: sendMessage and the two edits); `fail_polls(n, status)`, `conflict(n)`
  for getUpdates. Faults come before validation, as a front-end proxy's would.

Not modelled: webhooks, media uploads, inline mode, formatting/entity parsing (text length is counted in
Python characters, not after parsing), flood limits beyond the switches.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http import HTTPStatus
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from tests.fakes.pulse import Pulse

TEXT_LIMIT = 4096
CALLBACK_DATA_LIMIT = 64
FIRST_UPDATE_ID = 1000
ME_FLAGS = {"can_join_groups": True, "can_read_all_group_messages": False, "supports_inline_queries": False}
SEND_METHODS = frozenset(("sendMessage", "editMessageText", "editMessageReplyMarkup"))
CONFLICT = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup are exactly "
    "the same as a current content and reply markup of the message"
)

Params = dict[str, Any]


@dataclass
class SentMessage:
    chat_id: int
    message_id: int
    text: str
    reply_to: int | None
    reply_markup: dict[str, Any] | None
    parse_mode: str | None
    message_thread_id: int | None = None


@dataclass
class Edit:
    method: str  # "editMessageText" | "editMessageReplyMarkup"
    chat_id: int
    message_id: int
    text: str | None  # the new text (editMessageText only)
    reply_markup: dict[str, Any] | None  # the new keyboard, None when removed
    parse_mode: str | None = None


@dataclass
class CallbackAnswer:
    id: str
    text: str | None
    show_alert: bool = False


class Refused(Exception):
    """A Bot API error answer, raised in a handler and turned into Telegram's error body."""

    def __init__(self, status: int, description: str, parameters: dict[str, Any] | None = None) -> None:
        super().__init__(status, description)
        self.status, self.description, self.parameters = status, description, parameters


def _bad(what: str) -> Refused:
    return Refused(400, f"Bad Request: {what}")


class FakeTelegram:
    def __init__(
        self,
        *,
        token: str = "123456789:AAH-fake-token-0000000000000000000",
        bot_id: int = 123456789,
        username: str = "errand_test_bot",
        first_name: str = "Errand",
        now: Callable[[], float] = time.time,
    ) -> None:
        self.token, self.bot_id, self.username, self.first_name = token, bot_id, username, first_name
        self.now = now
        self.base_url = ""
        self.file_base_url = ""
        self.sent: list[SentMessage] = []
        self.edits: list[Edit] = []
        self.callback_answers: list[CallbackAnswer] = []
        self.calls: list[str] = []  # every method call that passed the token check, in order
        self.get_updates_calls: list[dict[str, Any]] = []  # offset / limit / timeout / allowed_updates
        self.last_offset: int | None = None
        self.polls_held = 0  # getUpdates calls that found nothing and began to wait
        self.allowed_updates: list[str] = []
        self.chats: dict[int, dict[str, Any]] = {}
        self._messages: dict[tuple[int, int], dict[str, Any]] = {}
        self._next_message_id: dict[int, int] = {}
        self._updates: list[dict[str, Any]] = []
        self._update_ids = itertools.count(FIRST_UPDATE_ID)
        self._query_ids = itertools.count(4_000_000_000_000_000_001)
        self._queries: dict[str, bool] = {}  # issued callback query id -> answered
        self._files: dict[str, tuple[str, bytes]] = {}
        self._send_faults: list[Refused] = []
        self._poll_faults: list[Refused] = []
        self._lose = 0
        self._poll_serial = 0
        self._tick = Pulse()
        self._closing = False
        self._runner: web.AppRunner | None = None
        handlers: dict[str, Callable[[Params], Awaitable[Any]]] = {
            "getMe": self._get_me,
            "deleteWebhook": self._delete_webhook,
            "getUpdates": self._get_updates,
            "sendMessage": self._send_message,
            "sendChatAction": self._send_chat_action,
            "editMessageText": self._edit_text,
            "editMessageReplyMarkup": self._edit_markup,
            "answerCallbackQuery": self._answer_callback,
            "getFile": self._get_file,
        }
        self._methods = {name.lower(): (name, handler) for name, handler in handlers.items()}

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._api)
        app.router.add_get("/file/bot{token}/{file_path:.+}", self._download)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/bot"
        self.file_base_url = f"http://127.0.0.1:{port}/file/bot"
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closing = True
        self._tick.beat()  # held polls answer at once
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ---- switches -----------------------------------------------------------------------------------

    def fail_sends(self, n: int = 1, status: int = 500) -> None:
        """The next n send methods fail with `status` and Telegram's error body."""
        self._send_faults += [Refused(status, _phrase(status))] * n

    def rate_limit(self, n: int = 1, retry_after: int = 3) -> None:
        """The next n send methods get 429 with `parameters.retry_after` (PTB raises RetryAfter)."""
        fault = Refused(429, f"Too Many Requests: retry after {retry_after}", {"retry_after": retry_after})
        self._send_faults += [fault] * n

    def lose_answer(self, n: int = 1) -> None:
        """The next n successful send methods take effect and are recorded, but no answer comes back."""
        self._lose += n

    def fail_polls(self, n: int = 1, status: int = 502) -> None:
        self._poll_faults += [Refused(status, _phrase(status))] * n

    def conflict(self, n: int = 1) -> None:
        """The next n getUpdates calls get 409, as when another instance polls the same bot."""
        self._poll_faults += [Refused(409, CONFLICT)] * n

    # ---- what a test does ---------------------------------------------------------------------------

    def add_chat(
        self, chat_id: int, chat_type: str = "private", *, title: str = "", first_name: str = "Ann"
    ) -> dict[str, Any]:
        """A chat the bot is in (`user_says` creates them on first use)."""
        if chat_id not in self.chats:
            chat: dict[str, Any] = {"id": chat_id, "type": chat_type}
            if chat_type == "private":
                chat["first_name"] = first_name
            else:
                chat["title"] = title or f"Group {chat_id}"
                if chat_type == "supergroup":
                    chat["is_forum"] = False
            self.chats[chat_id] = chat
        return self.chats[chat_id]

    def put_file(self, file_id: str, data: bytes, file_path: str = "photos/file_1.jpg") -> None:
        """Bytes that `getFile(file_id)` describes and the file route serves."""
        self._files[file_id] = (file_path, data)

    def user_says(
        self,
        *,
        chat_id: int,
        user_id: int,
        text: str = "",
        chat_type: str = "private",
        reply_to: int | None = None,
        first_name: str = "Ann",
        photo: str | None = None,
        document: tuple[str, str] | None = None,
        message_thread_id: int | None = None,
        entities: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """A user writes in a chat: the Message, queued as a `message` update. With a photo or document,
        `text` is the caption. `reply_to` is the message_id of an earlier message in that chat."""
        chat = self.add_chat(chat_id, chat_type, first_name=first_name)
        message = self._new_message(
            chat, {"id": user_id, "is_bot": False, "first_name": first_name}, reply_to
        )
        media = photo is not None or document is not None
        if photo is not None:
            thumb = {"file_id": f"{photo}-s", "file_unique_id": f"u-{photo}-s", "width": 90, "height": 90}
            message["photo"] = [thumb, {**self._file_meta(photo), "width": 1280, "height": 960}]
        if document is not None:
            message["document"] = {**self._file_meta(document[0]), "file_name": document[1]}
        if text:
            message["caption" if media else "text"] = text
        if entities is not None:
            message["caption_entities" if media else "entities"] = entities
        if message_thread_id is not None:
            message["message_thread_id"] = message_thread_id
            message["is_topic_message"] = True
        self._store(message)
        self._queue({"message": message})
        return copy.deepcopy(message)

    def press(self, *, chat_id: int, user_id: int, message_id: int, data: str) -> str:
        """A user presses an inline button on the bot's message: a `callback_query` update; its id."""
        message = self._messages.get((chat_id, message_id))
        if message is None or message["from"]["id"] != self.bot_id:
            raise KeyError(f"no bot message {message_id} in chat {chat_id}")
        query_id = str(next(self._query_ids))
        self._queries[query_id] = False
        user = {"id": user_id, "is_bot": False, "first_name": "Ann"}
        query = {"id": query_id, "from": user, "message": message, "chat_instance": f"ci-{chat_id}"}
        self._queue({"callback_query": {**query, "data": data}})
        return query_id

    def queue_raw(self, update: dict[str, Any]) -> dict[str, Any]:
        """Anything as the next update (malformed ones too); an `update_id` is added if missing."""
        if "update_id" not in update:
            update = {"update_id": next(self._update_ids), **update}
        self._updates.append(update)
        self._tick.beat()
        return update

    @property
    def pending_updates(self) -> list[dict[str, Any]]:
        """Queued updates not yet confirmed by an offset."""
        return list(self._updates)

    def message(self, chat_id: int, message_id: int) -> dict[str, Any]:
        """The current state of a message (after edits)."""
        return copy.deepcopy(self._messages[(chat_id, message_id)])

    async def wait_for_sent(self, n: int, timeout: float = 5.0) -> list[SentMessage]:
        await self._wait(lambda: len(self.sent) >= n, timeout)
        return self.sent

    async def wait_for_edits(self, n: int, timeout: float = 5.0) -> list[Edit]:
        await self._wait(lambda: len(self.edits) >= n, timeout)
        return self.edits

    async def wait_for_callback_answers(self, n: int, timeout: float = 5.0) -> list[CallbackAnswer]:
        await self._wait(lambda: len(self.callback_answers) >= n, timeout)
        return self.callback_answers

    async def wait_polling(self, n: int = 1, timeout: float = 5.0) -> None:
        """Until the n-th getUpdates call that found nothing to answer is being held (or was)."""
        await self._wait(lambda: self.polls_held >= n, timeout)

    async def wait_until(self, done: Callable[[], bool], timeout: float = 5.0) -> None:
        """Until `done()` holds, re-checked after every call the fake answers."""
        await self._wait(done, timeout)

    async def _wait(self, done: Callable[[], bool], timeout: float) -> None:
        async with asyncio.timeout(timeout):
            await self._tick.until(done)

    # ---- model --------------------------------------------------------------------------------------

    def _bot_user(self) -> dict[str, Any]:
        return {"id": self.bot_id, "is_bot": True, "first_name": self.first_name, "username": self.username}

    def _new_message(
        self, chat: dict[str, Any], sender: dict[str, Any], reply_to: int | None
    ) -> dict[str, Any]:
        message_id = self._next_message_id.get(chat["id"], 1)
        self._next_message_id[chat["id"]] = message_id + 1
        message: dict[str, Any] = {
            "message_id": message_id,
            "from": sender,
            "chat": dict(chat),
            "date": int(self.now()),
        }
        if reply_to is not None:
            replied = self._messages.get((chat["id"], reply_to))
            if replied is None:
                raise KeyError(f"no message {reply_to} in chat {chat['id']}")
            message["reply_to_message"] = {
                k: v for k, v in copy.deepcopy(replied).items() if k != "reply_to_message"
            }
        return message

    def _file_meta(self, file_id: str) -> dict[str, Any]:
        size = len(self._files[file_id][1]) if file_id in self._files else 0
        return {"file_id": file_id, "file_unique_id": f"u-{file_id}", "file_size": size}

    def _store(self, message: dict[str, Any]) -> None:
        self._messages[(message["chat"]["id"], message["message_id"])] = message

    def _queue(self, body: dict[str, Any]) -> None:
        self.queue_raw({"update_id": next(self._update_ids), **copy.deepcopy(body)})

    # ---- HTTP ---------------------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return _error(Refused(401, "Unauthorized"))
        found = self._methods.get(request.match_info["method"].lower())
        if found is None:
            return _error(Refused(404, "Not Found"))
        name, handler = found
        self.calls.append(name)
        try:
            params = await _params(request)
            if name in SEND_METHODS and self._send_faults:
                raise self._send_faults.pop(0)
            result = await handler(params)
        except Refused as refused:
            return _error(refused)
        if name in SEND_METHODS and self._lose and request.transport is not None:
            self._lose -= 1
            request.transport.close()  # done and recorded, but the client never hears back
        return web.json_response({"ok": True, "result": result})

    async def _download(self, request: web.Request) -> web.StreamResponse:
        if request.match_info["token"] != self.token:
            return _error(Refused(401, "Unauthorized"))
        path = request.match_info["file_path"]
        for file_path, data in self._files.values():
            if file_path == path:
                return web.Response(body=data, content_type="application/octet-stream")
        return _error(Refused(404, "Not Found"))

    # ---- methods ------------------------------------------------------------------------------------

    async def _get_me(self, params: Params) -> dict[str, Any]:
        return {**self._bot_user(), **ME_FLAGS}

    async def _delete_webhook(self, params: Params) -> bool:
        if _bool(params, "drop_pending_updates"):
            self._updates.clear()
        return True

    async def _send_chat_action(self, params: Params) -> bool:
        self._chat(params)
        return True

    async def _get_updates(self, params: Params) -> list[dict[str, Any]]:
        offset, limit = _int(params, "offset"), _int(params, "limit") or 100
        timeout = _float(params, "timeout") or 0.0
        allowed = _obj(params, "allowed_updates")
        self.get_updates_calls.append(
            {"offset": offset, "limit": limit, "timeout": timeout, "allowed_updates": allowed}
        )
        if self._poll_faults:
            raise self._poll_faults.pop(0)
        if not 1 <= limit <= 100:
            raise _bad("limit must be between 1 and 100")
        if allowed is not None:
            if not isinstance(allowed, list):
                raise _bad("can't parse allowed_updates JSON array")
            self.allowed_updates = [str(a) for a in allowed]
        if offset is not None:
            self.last_offset = offset
            if offset < 0:
                self._updates = self._updates[offset:]
            else:
                self._updates = [u for u in self._updates if _update_id(u) >= offset]
        self._poll_serial += 1
        mine = self._poll_serial
        self._tick.beat()  # an older held poll sees it was superseded
        deadline = asyncio.get_running_loop().time() + timeout
        held = False
        while True:
            coming = self._tick.coming()
            if self._deliverable() or self._closing:
                break
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                break
            if not held:
                held = True
                self.polls_held += 1
                self._tick.beat()
                continue  # that beat was this poll's own: take the next one
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(coming.wait(), left)
            if self._poll_serial != mine:
                raise Refused(409, CONFLICT)
        return copy.deepcopy(self._deliverable()[:limit])

    def _deliverable(self) -> list[dict[str, Any]]:
        if self.allowed_updates:  # Telegram drops updates of types the bot did not ask for
            self._updates = [
                u for u in self._updates if not _kinds(u) or _kinds(u) & set(self.allowed_updates)
            ]
        return self._updates

    async def _send_message(self, params: Params) -> dict[str, Any]:
        chat = self._chat(params)
        text = _text(params)
        markup = self._markup(params)
        reply_to = _int(params, "reply_to_message_id")
        reply_params = _obj(params, "reply_parameters")
        allow_without = _bool(params, "allow_sending_without_reply")
        if isinstance(reply_params, dict):
            reply_to = _int(reply_params, "message_id")
            allow_without = _bool(reply_params, "allow_sending_without_reply")
        elif reply_params is not None:
            raise _bad("can't parse reply parameters JSON object")
        if reply_to is not None and (chat["id"], reply_to) not in self._messages:
            if not allow_without:
                raise _bad("message to be replied not found")
            reply_to = None
        message = self._new_message(chat, self._bot_user(), reply_to)
        message["text"] = text
        thread = _int(params, "message_thread_id")
        if thread is not None:
            message["message_thread_id"] = thread
        if markup is not None:
            message["reply_markup"] = markup
        self._store(message)
        parse_mode = params.get("parse_mode") or None
        self.sent.append(
            SentMessage(chat["id"], message["message_id"], text, reply_to, markup, parse_mode, thread)
        )
        self._tick.beat()
        return copy.deepcopy(message)

    async def _edit_text(self, params: Params) -> dict[str, Any]:
        message = self._own_message(params, "to edit")
        text, markup = _text(params), self._markup(params)
        if text == message.get("text") and markup == message.get("reply_markup"):
            raise _bad(NOT_MODIFIED.removeprefix("Bad Request: "))
        return self._apply_edit(message, "editMessageText", text, markup, params.get("parse_mode") or None)

    async def _edit_markup(self, params: Params) -> dict[str, Any]:
        message = self._own_message(params, "to edit")
        markup = self._markup(params)
        if markup == message.get("reply_markup"):
            raise _bad(NOT_MODIFIED.removeprefix("Bad Request: "))
        return self._apply_edit(message, "editMessageReplyMarkup", None, markup, None)

    def _apply_edit(
        self,
        message: dict[str, Any],
        method: str,
        text: str | None,
        markup: dict[str, Any] | None,
        parse_mode: str | None,
    ) -> dict[str, Any]:
        if text is not None:
            message["text"] = text
        if markup is None:
            message.pop("reply_markup", None)
        else:
            message["reply_markup"] = markup
        message["edit_date"] = int(self.now())
        self.edits.append(
            Edit(method, message["chat"]["id"], message["message_id"], text, markup, parse_mode)
        )
        self._tick.beat()
        return copy.deepcopy(message)

    async def _answer_callback(self, params: Params) -> bool:
        query_id = str(params.get("callback_query_id", ""))
        if self._queries.get(query_id, True):
            raise _bad("query is too old and response timeout expired or query ID is invalid")
        self._queries[query_id] = True
        text = params.get("text")
        self.callback_answers.append(
            CallbackAnswer(query_id, None if text is None else str(text), _bool(params, "show_alert"))
        )
        self._tick.beat()
        return True

    async def _get_file(self, params: Params) -> dict[str, Any]:
        file_id = str(params.get("file_id", ""))
        if file_id not in self._files:
            raise _bad("invalid file_id")
        return {**self._file_meta(file_id), "file_path": self._files[file_id][0]}

    # ---- validation ---------------------------------------------------------------------------------

    def _chat(self, params: Params) -> dict[str, Any]:
        try:
            chat_id = int(str(params.get("chat_id", "")))
        except ValueError:
            raise _bad("chat not found") from None
        if chat_id not in self.chats:
            raise _bad("chat not found")
        return self.chats[chat_id]

    def _own_message(self, params: Params, what: str) -> dict[str, Any]:
        if "inline_message_id" in params:
            raise _bad("inline messages are not modelled by the fake")
        chat = self._chat(params)
        message = self._messages.get((chat["id"], _int(params, "message_id") or 0))
        if message is None:
            raise _bad(f"message {what} not found")
        if message["from"]["id"] != self.bot_id:
            raise _bad("message can't be edited")
        return message

    def _markup(self, params: Params) -> dict[str, Any] | None:
        markup = _obj(params, "reply_markup")
        if markup is None:
            return None
        rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
        if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
            raise _bad("can't parse reply keyboard markup JSON object")
        for row in rows:
            for button in row:
                if not isinstance(button, dict) or not button.get("text"):
                    raise _bad("can't parse inline keyboard button: text buttons are unallowed")
                data = button.get("callback_data")
                if data is not None and not 1 <= len(str(data).encode()) <= CALLBACK_DATA_LIMIT:
                    raise _bad("BUTTON_DATA_INVALID")
        return {"inline_keyboard": rows}


# ---- helpers ----------------------------------------------------------------------------------------


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def _error(refused: Refused) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": refused.status, "description": refused.description}
    if refused.parameters:
        body["parameters"] = refused.parameters
    return web.json_response(body, status=refused.status)


async def _params(request: web.Request) -> Params:
    """Query string plus body, whichever of form, multipart or JSON it is. Form and multipart values stay
    strings (PTB sends nested values as JSON strings); uploaded files become bytes."""
    params: Params = dict(request.query)
    if not request.can_read_body:
        return params
    if request.content_type == "application/json":
        try:
            body = await request.json()
        except ValueError:
            raise _bad("can't parse JSON") from None
        if not isinstance(body, dict):
            raise _bad("can't parse JSON object")
        params.update(body)
    elif request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        for key, value in (await request.post()).items():
            params[key] = value.file.read() if isinstance(value, web.FileField) else value
    return params


def _obj(params: Params, name: str) -> Any:
    value = params.get(name)
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except ValueError:
            raise _bad(f"can't parse {name} JSON object") from None
    return value


def _int(params: Params, name: str) -> int | None:
    value = params.get(name)
    try:
        return None if value is None or value == "" else int(value)
    except (TypeError, ValueError):
        raise _bad(f"invalid {name} specified") from None


def _float(params: Params, name: str) -> float | None:
    value = params.get(name)
    try:
        return None if value is None or value == "" else float(value)
    except (TypeError, ValueError):
        raise _bad(f"invalid {name} specified") from None


def _bool(params: Params, name: str) -> bool:
    value = params.get(name)
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1"))


def _text(params: Params) -> str:
    text = params.get("text")
    if not isinstance(text, str) or not text:
        raise _bad("message text is empty")
    if len(text) > TEXT_LIMIT:
        raise _bad("message is too long")
    return text


def _update_id(update: dict[str, Any]) -> int:
    value = update.get("update_id")
    return value if isinstance(value, int) else 0


def _kinds(update: dict[str, Any]) -> set[str]:
    return {k for k in update if k != "update_id"}

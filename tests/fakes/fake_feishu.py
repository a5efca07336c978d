"""A fake of Feishu's open platform on 127.0.0.1 (aiohttp), for tests: pass `url` as lark-oapi's `domain`.

What it models, as lark-oapi 1.7.5 and the platform's docs describe it:

- Auth: `POST /open-apis/auth/v3/tenant_access_token/internal` issues `t-<n>` (counted in `token_requests`);
  an unknown app id gets 10003 and a wrong secret 10014, with HTTP 200. REST calls need an issued token
  (`Bearer`), else 99991661 (none) / 99991663 (not ours, or revoked by `expire_tokens()`), HTTP 400.
  `GET /open-apis/bot/v3/info` answers the bot's name and open id.
- Long connection: `POST /callback/ws/endpoint` gives `ws://…/ws?device_id=<n>&service_id=7` and a full
  `ClientConfig`; `/ws` speaks `pbbp2.Frame`: client pings get pongs (carrying the config again), `push`
  sends an event as data frames (optionally in chunks) to the newest connection and waits for its ack
  (ConnectionError if that client leaves first). `drop_connection`, `reject_handshakes` (refused upgrades
  carrying the `handshake-*` headers the SDK parses). Wrong credentials at the endpoint get the token
  endpoint's codes: what Feishu really answers there is not documented.
- Events: `message_event` / `card_action_event` build full envelopes; a built user message also lands in
  the chat's history (`history=False` to skip); `say_while_offline` records one without an event.
- Messages: create, reply and card patch with Feishu's validation (content as a JSON string, card shape,
  30 KB / 150 KB limits, unknown chat 230002, uuid dedupe for 1 h), recorded in `sent` / `patches`.
- History: `GET /open-apis/im/v1/messages` pages (cursor tokens), sorts and filters by seconds; per-chat
  call counts in `history_calls`. Resources: `put_resource` bytes served to
  `GET …/messages/{id}/resources/{key}`. Times come from `now` (epoch seconds; pass a fake clock).
- `card_checker`: our own card check, so a card we did not mean to build is refused like a broken one.
- Switches: `fail_sends(n, status=, code=)`, `lose_answer(n)` (accepted and recorded, connection closed
  with no answer), `history_forbidden` (230027), `expire_tokens()`, `reject_handshakes(n, …)`.
  Sends, replies and patches all count as sends for the fault switches.

Stricter than the platform in one place: patching a card that is not shared (`config.update_multi`) is
refused with 230001, where Feishu accepts it and the update then misbehaves for other viewers.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from aiohttp import WSMsgType, web
from lark_oapi.ws.pb.pbbp2_pb2 import Frame  # type: ignore[import-untyped]

from tests.fakes.pulse import Pulse

SERVICE_ID = 7
UUID_WINDOW_S = 3600.0
TEXT_LIMIT = 150 * 1024
CARD_LIMIT = 30 * 1024  # cards and post
MSG_TYPES = frozenset(("text", "post", "image", "file", "audio", "media", "sticker", "interactive"))
MSG_TYPES |= {"share_chat", "share_user", "system"}
_ITEM_FIELDS = ("message_id", "root_id", "parent_id", "thread_id", "msg_type", "chat_id")
ERRORS: dict[int, str] = {
    10003: "invalid param",
    10014: "app secret invalid",
    99991661: "Missing access token for authorization. Please make a request with token attached.",
    99991663: "Invalid access token for authorization. Please make a request with token attached.",
    99991400: "request trigger frequency limit",
    230001: "Your request contains an invalid request parameter",
    230002: "The bot can not be outside the group.",
    230013: "Bot has NO availability to this user.",
    230020: "This operation triggers the frequency limit.",
    230025: "The length of the message content reaches its limit.",
    230027: "Lack of necessary permissions.",
    230099: "Failed to create card content",
    234001: "Invalid request param.",
    234003: "File not in message.",
}


class NoClientConnected(RuntimeError):
    pass


class Refused(Exception):
    """A platform error answer, raised inside a handler and turned into Feishu's error body."""

    def __init__(self, code: int, ext: str = "", status: int = 400) -> None:
        super().__init__(code, ext)
        self.code, self.ext, self.status = code, ext, status


@dataclass
class Ack:
    code: int
    data: dict[str, Any] | None  # the decoded callback result, e.g. {"toast": {...}}
    headers: dict[str, str]  # the echoed frame headers, plus the SDK's biz_rt


@dataclass
class Sent:
    message_id: str
    chat_id: str
    msg_type: str
    content: dict[str, Any]
    reply_to: str  # the message replied to; "" for a create
    root_id: str
    uuid: str
    patched: list[dict[str, Any]] = field(default_factory=list)
    thread_id: str = ""
    parent_id: str = ""


@dataclass
class Patch:
    message_id: str
    content: dict[str, Any]


@dataclass
class _Message:
    message_id: str
    chat_id: str
    msg_type: str
    content: str  # as the platform stores it: a JSON string
    create_ms: int
    sender: dict[str, str]
    seq: int
    root_id: str = ""
    parent_id: str = ""
    thread_id: str = ""
    mentions: list[dict[str, Any]] = field(default_factory=list)
    update_ms: int = 0

    def item(self) -> dict[str, Any]:
        item: dict[str, Any] = {name: getattr(self, name) for name in _ITEM_FIELDS}
        item.update(create_time=str(self.create_ms), update_time=str(self.update_ms or self.create_ms))
        item.update(deleted=False, updated=bool(self.update_ms), sender=dict(self.sender))
        item.update(body={"content": self.content}, mentions=[dict(m) for m in self.mentions])
        return item


@dataclass
class _Conn:
    ws: web.WebSocketResponse
    request: web.Request
    closed: asyncio.Event = field(default_factory=asyncio.Event)


def mention(
    key: str = "@_user_1", *, open_id: str, name: str = "", tenant_key: str = "tk_fake"
) -> dict[str, Any]:
    """One entry of an event's `message.mentions` (its `id` is an object there; history flattens it)."""
    return {"key": key, "id": _user_ids(open_id), "name": name, "tenant_key": tenant_key}


def _user_ids(open_id: str) -> dict[str, str]:
    return {"open_id": open_id, "union_id": "on_" + open_id.removeprefix("ou_"), "user_id": ""}


def _frame(method: int, headers: dict[str, str], payload: bytes = b"", seq_id: int = 0) -> Any:
    frame = Frame()
    frame.SeqID, frame.LogID, frame.service, frame.method = seq_id, seq_id, SERVICE_ID, method
    for key, value in headers.items():
        header = frame.headers.add()
        header.key, header.value = key, value
    if payload:
        frame.payload = payload
    return frame


def _card_ok(card: Any) -> bool:
    if not isinstance(card, dict):
        return False
    if card.get("schema") == "2.0":
        return isinstance(card.get("body"), dict)
    if card.get("type") == "template":
        return isinstance(card.get("data"), dict)
    return isinstance(card.get("elements"), list) or isinstance(card.get("i18n_elements"), dict)


def _card_shared(card: dict[str, Any]) -> bool:
    default = card.get("schema") == "2.0"  # JSON 2.0 cards are always shared
    return bool((card.get("config") or {}).get("update_multi", default))


class FakeFeishu:
    def __init__(
        self,
        *,
        app_id: str = "cli_fake00000000001",
        app_secret: str = "secret-1",
        app_name: str = "Errand Bot",
        bot_open_id: str = "ou_bot0000000000000000000000000001",
        tenant_key: str = "tk_fake",
        reconnect_interval: int = 1,
        ping_interval: int = 120,
        now: Callable[[], float] = time.time,
        card_checker: Callable[[object], None] | None = None,
    ) -> None:
        self.app_id, self.app_secret, self.app_name = app_id, app_secret, app_name
        self.bot_open_id, self.tenant_key = bot_open_id, tenant_key
        self.reconnect_interval, self.ping_interval = reconnect_interval, ping_interval
        self._now = now
        # Our own card check (core.channels.feishu.cards.check_card) where the host is under test: a card
        # the platform would take but that we did not mean to build is refused too.
        self._card_checker = card_checker
        self.url = ""
        self.chats: dict[str, str] = {}  # chat_id -> "p2p" | "group"
        self.sent: list[Sent] = []
        self.patches: list[Patch] = []
        self.acks: list[Ack] = []
        self.history_calls: dict[str, int] = {}
        self.history_forbidden = False
        self.token_requests = 0
        self.endpoint_requests = 0
        self.connections = 0
        self.rejected_handshakes = 0
        self.pings = 0
        self._tokens: set[str] = set()
        self._p2p: dict[str, str] = {}  # user open_id -> their p2p chat with the bot
        self._messages: dict[str, _Message] = {}
        self._by_sent: dict[str, Sent] = {}
        self._uuids: dict[str, tuple[float, str]] = {}
        self._resources: dict[tuple[str, str], bytes] = {}
        self._cursors: dict[str, tuple[tuple[Any, ...], tuple[int, int]]] = {}
        self._faults: list[tuple[int, int, str]] = []
        self._lose = 0
        self._rejections: list[tuple[int, int, str]] = []
        self._conn: _Conn | None = None
        self._pending: dict[str, asyncio.Future[Ack]] = {}
        self._ids = itertools.count(1)
        self._tick = Pulse()
        self._runner: web.AppRunner | None = None

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def start(self) -> Self:
        app = web.Application()
        app.router.add_post("/open-apis/auth/v3/tenant_access_token/internal", self._token)
        app.router.add_get("/open-apis/bot/v3/info", self._bot_info)
        app.router.add_post("/callback/ws/endpoint", self._endpoint)
        app.router.add_get("/ws", self._ws)
        app.router.add_post("/open-apis/im/v1/messages", self._create)
        app.router.add_get("/open-apis/im/v1/messages", self._list)
        app.router.add_post("/open-apis/im/v1/messages/{message_id}/reply", self._reply)
        app.router.add_patch("/open-apis/im/v1/messages/{message_id}", self._patch)
        app.router.add_get("/open-apis/im/v1/messages/{message_id}/resources/{file_key}", self._resource)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def stop(self) -> None:
        if self._conn is not None:
            await self.drop_connection()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # ---- switches -----------------------------------------------------------------------------------

    def fail_sends(self, n: int = 1, *, status: int | None = None, code: int = 0, msg: str = "") -> None:
        """The next n sends fail. With a code: Feishu's error body under HTTP `status` (default 400, or 429
        for 99991400 as the rate limiter answers). Without: a non-JSON error page under `status` (500)."""
        default = 500 if not code else 429 if code == 99991400 else 400
        self._faults += [(status or default, code, msg)] * n

    def lose_answer(self, n: int = 1) -> None:
        """The next n sends are accepted and recorded, but the connection closes before any answer."""
        self._lose += n

    def reject_handshakes(
        self, n: int = 1, status: int = 514, auth_code: int = 1000040350, msg: str = "too many connections"
    ) -> None:
        self._rejections += [(status, auth_code, msg)] * n

    def expire_tokens(self) -> None:
        self._tokens.clear()

    def add_chat(self, chat_id: str, chat_type: str = "group") -> None:
        self.chats.setdefault(chat_id, chat_type)

    def put_resource(self, message_id: str, file_key: str, data: bytes) -> None:
        self._resources[(message_id, file_key)] = data

    # ---- events -------------------------------------------------------------------------------------

    def message_event(
        self,
        *,
        chat_id: str,
        sender: str,
        text: str = "",
        chat_type: str = "p2p",
        message_id: str | None = None,
        msg_type: str = "text",
        content: dict[str, Any] | None = None,
        mentions: Iterable[dict[str, Any]] = (),
        parent_id: str = "",
        root_id: str = "",
        thread_id: str = "",
        create_time_ms: int | None = None,
        event_id: str | None = None,
        history: bool = True,
    ) -> dict[str, Any]:
        """An `im.message.receive_v1` envelope from user `sender` (an open id)."""
        n = next(self._ids)
        self.add_chat(chat_id, chat_type)
        if chat_type == "p2p":
            self._p2p.setdefault(sender, chat_id)
        message_id = message_id or f"om_{n:032x}"
        created = create_time_ms if create_time_ms is not None else int(self._now() * 1000)
        body = json.dumps(content if content is not None else {"text": text}, ensure_ascii=False)
        if parent_id and not root_id:
            parent = self._messages.get(parent_id)
            root_id = (parent.root_id if parent else "") or parent_id
        mentions = list(mentions)
        if history:
            flat = [m | {"id": m["id"]["open_id"], "id_type": "open_id"} for m in mentions]  # history's shape
            record = _Message(
                message_id, chat_id, msg_type, body, created, self._by(sender, "open_id", "user"), n
            )
            record.root_id, record.parent_id, record.thread_id, record.mentions = (
                root_id,
                parent_id,
                thread_id,
                flat,
            )
            self._record(record)
        message = dict(message_id=message_id, root_id=root_id, parent_id=parent_id, create_time=str(created))
        message.update(update_time=str(created), chat_id=chat_id, thread_id=thread_id, chat_type=chat_type)
        message.update(message_type=msg_type, content=body)
        sender_block = {"sender_id": _user_ids(sender), "sender_type": "user", "tenant_key": self.tenant_key}
        return {
            "schema": "2.0",
            "header": self._header(event_id or f"{n:032x}", "im.message.receive_v1", str(created)),
            "event": {"sender": sender_block, "message": message | {"mentions": mentions}},
        }

    def say_while_offline(self, *, chat_id: str, sender: str, text: str = "", **fields: Any) -> str:
        """A user message that reaches only the history (sent while no client listened); its message id."""
        event = self.message_event(chat_id=chat_id, sender=sender, text=text, history=True, **fields)
        return str(event["event"]["message"]["message_id"])

    def card_action_event(
        self,
        *,
        operator: str,
        message_id: str,
        chat_id: str,
        value: dict[str, Any],
        event_id: str | None = None,
        tag: str = "button",
        form_value: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A `card.action.trigger` callback: `operator` pressed a button on card `message_id`."""
        n = next(self._ids)
        action: dict[str, Any] = {"tag": tag, "value": value}
        if form_value is not None:
            action["form_value"] = form_value
        operator_block = _user_ids(operator) | {"tenant_key": self.tenant_key}
        # the callback doc gives create_time in microseconds, unlike events (milliseconds)
        header = self._header(event_id or f"{n:032x}", "card.action.trigger", str(int(self._now() * 1e6)))
        context = {"open_message_id": message_id, "open_chat_id": chat_id}
        return {
            "schema": "2.0",
            "header": header,
            "event": {
                "operator": operator_block,
                "token": f"c-{n:040x}",
                "action": action,
                "host": "im_message",
                "context": context,
            },
        }

    def _by(self, sender_id: str, id_type: str, sender_type: str) -> dict[str, str]:
        return {
            "id": sender_id,
            "id_type": id_type,
            "sender_type": sender_type,
            "tenant_key": self.tenant_key,
        }

    def _header(self, event_id: str, event_type: str, create_time: str) -> dict[str, str]:
        header = dict(event_id=event_id, event_type=event_type, create_time=create_time, token="")
        return header | {"app_id": self.app_id, "tenant_key": self.tenant_key}

    # ---- long connection ----------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.ws.closed

    async def wait_connected(self, n: int = 1, timeout: float = 5.0) -> None:
        await self._wait(lambda: self.connections >= n and self.connected, timeout)

    async def push(
        self, event: dict[str, Any], *, frame_type: str = "event", chunks: int = 1, timeout: float = 5.0
    ) -> Ack:
        """Send one event or callback to the newest connection and wait for its ack. lark-oapi 1.7.5 never
        acks `frame_type="card"` (it drops those frames), so that times out against the stock SDK."""
        ack: asyncio.Future[Ack] = asyncio.get_running_loop().create_future()
        frame_id, conn = await self._send_event(event, frame_type, chunks, ack)
        closed = asyncio.ensure_future(conn.closed.wait())
        try:
            await asyncio.wait((ack, closed), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
            self._pending.pop(frame_id, None)
        if ack.done():
            return ack.result()
        if conn.closed.is_set():
            raise ConnectionError(f"the client disconnected before acking frame {frame_id}")
        raise TimeoutError(f"no ack for frame {frame_id} ({frame_type}) within {timeout}s")

    async def push_nowait(self, event: dict[str, Any], *, frame_type: str = "event", chunks: int = 1) -> str:
        """Send without waiting; the frame's message_id, whose ack later lands in `acks`."""
        return (await self._send_event(event, frame_type, chunks, None))[0]

    async def _send_event(
        self, event: dict[str, Any], frame_type: str, chunks: int, ack: asyncio.Future[Ack] | None
    ) -> tuple[str, _Conn]:
        conn = self._conn
        if conn is None or conn.ws.closed:
            raise NoClientConnected("no long-connection client is connected to the fake")
        n = next(self._ids)
        frame_id, payload = f"fmsg_{n}", json.dumps(event, ensure_ascii=False).encode()
        size = -(-len(payload) // max(1, chunks))
        parts = [payload[i : i + size] for i in range(0, len(payload), size)] or [b""]
        if ack is not None:
            self._pending[frame_id] = ack  # before sending: the ack may arrive while a later chunk is written
        for seq, part in enumerate(parts):
            headers = {"type": frame_type, "message_id": frame_id, "trace_id": f"trace_{n}"}
            headers |= {"sum": str(len(parts)), "seq": str(seq)}
            await conn.ws.send_bytes(_frame(1, headers, part, seq_id=n).SerializeToString())
        return frame_id, conn

    async def drop_connection(self, *, abrupt: bool = False) -> None:
        """Close the client's socket from the server side (abrupt: TCP close with no close frame)."""
        conn = self._conn
        if conn is None:
            return
        if abrupt and conn.request.transport is not None:
            conn.request.transport.close()
        else:
            await conn.ws.close()
        await conn.closed.wait()

    def _config(self) -> dict[str, int]:
        intervals = {"ReconnectInterval": self.reconnect_interval, "PingInterval": self.ping_interval}
        return {"ReconnectCount": -1, "ReconnectNonce": 0, **intervals}  # the SDK copies all four as they are

    async def _endpoint(self, request: web.Request) -> web.Response:
        self.endpoint_requests += 1
        body = await request.json()
        refused = self._credentials(body.get("AppID"), body.get("AppSecret"))
        if refused:
            return self._json({"code": refused, "msg": ERRORS[refused], "data": None})
        url = f"ws://127.0.0.1:{request.url.port}/ws?device_id={next(self._ids)}&service_id={SERVICE_ID}"
        return self._json({"code": 0, "msg": "ok", "data": {"URL": url, "ClientConfig": self._config()}})

    async def _ws(self, request: web.Request) -> web.StreamResponse:
        if self._rejections:
            status, auth_code, msg = self._rejections.pop(0)
            self.rejected_handshakes += 1
            # any status but 101 (and redirects) makes websockets raise InvalidStatus carrying these headers
            headers = {"handshake-status": str(status), "handshake-msg": msg}
            return web.Response(
                status=400, text=msg, headers=headers | {"handshake-autherrcode": str(auth_code)}
            )
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        conn = self._conn = _Conn(ws, request)
        self.connections += 1
        self._tick.beat()
        try:
            async for message in ws:
                if message.type == WSMsgType.BINARY:
                    await self._on_frame(conn, message.data)
        finally:
            conn.closed.set()
            if self._conn is conn:
                self._conn = None
            self._tick.beat()
        return ws

    async def _on_frame(self, conn: _Conn, data: bytes) -> None:
        frame = Frame()
        frame.ParseFromString(data)
        headers = {h.key: h.value for h in frame.headers}
        if frame.method == 0 and headers.get("type") == "ping":
            self.pings += 1
            pong = _frame(0, {"type": "pong"}, json.dumps(self._config()).encode())
            await conn.ws.send_bytes(pong.SerializeToString())
        elif frame.method == 1:
            answer = json.loads(frame.payload or b"{}")
            raw = answer.get("data")
            ack = Ack(int(answer.get("code", 0)), json.loads(base64.b64decode(raw)) if raw else None, headers)
            self.acks.append(ack)
            pending = self._pending.get(headers.get("message_id", ""))
            if pending is not None and not pending.done():
                pending.set_result(ack)
            self._tick.beat()

    # ---- waiting ------------------------------------------------------------------------------------

    async def _wait(self, ready: Callable[[], bool], timeout: float) -> None:
        async with asyncio.timeout(timeout):
            await self._tick.until(ready)

    async def wait_for_sent(self, n: int, timeout: float = 5.0) -> list[Sent]:
        await self._wait(lambda: len(self.sent) >= n, timeout)
        return list(self.sent)

    async def wait_for_acks(self, n: int, timeout: float = 5.0) -> list[Ack]:
        """For frames sent with `push_nowait`."""
        await self._wait(lambda: len(self.acks) >= n, timeout)
        return list(self.acks)

    async def wait_for_patches(self, n: int, timeout: float = 5.0) -> list[Patch]:
        await self._wait(lambda: len(self.patches) >= n, timeout)
        return list(self.patches)

    # ---- REST ---------------------------------------------------------------------------------------

    def _json(
        self, body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None
    ) -> web.Response:
        log_id = f"2026{next(self._ids):016d}"
        if body.get("code"):
            body.setdefault("error", {"log_id": log_id})
        return web.json_response(body, status=status, headers={"X-Tt-Logid": log_id, **(headers or {})})

    def _refusal(self, refused: Refused) -> web.Response:
        msg = ERRORS.get(refused.code, "error")
        if refused.ext:
            msg = f"{msg}, ext={refused.ext}"
        return self._json({"code": refused.code, "msg": msg}, status=refused.status)

    def _credentials(self, app_id: Any, secret: Any) -> int:
        return 10003 if app_id != self.app_id else 10014 if secret != self.app_secret else 0

    def _authorise(self, request: web.Request) -> None:
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or not auth[7:].strip():
            raise Refused(99991661)
        if auth[7:] not in self._tokens:
            raise Refused(99991663)

    async def _token(self, request: web.Request) -> web.Response:
        self.token_requests += 1
        body = await request.json()
        refused = self._credentials(body.get("app_id"), body.get("app_secret"))
        if refused:
            return self._json({"code": refused, "msg": ERRORS[refused]})
        token = f"t-{next(self._ids)}"
        self._tokens.add(token)
        return self._json({"code": 0, "msg": "ok", "tenant_access_token": token, "expire": 7200})

    async def _bot_info(self, request: web.Request) -> web.Response:
        try:
            self._authorise(request)
        except Refused as refused:
            return self._refusal(refused)
        bot = {"activate_status": 2, "app_name": self.app_name, "avatar_url": "", "ip_white_list": []}
        return self._json({"code": 0, "msg": "ok", "bot": bot | {"open_id": self.bot_open_id}})

    async def _create(self, request: web.Request) -> web.StreamResponse:
        return await self._send(request, "")

    async def _reply(self, request: web.Request) -> web.StreamResponse:
        return await self._send(request, request.match_info["message_id"])

    async def _send(self, request: web.Request, reply_to: str) -> web.StreamResponse:
        try:
            self._authorise(request)
            fault = self._fault()
            if fault is not None:
                return fault
            body = await request.json()
            uuid = str(body.get("uuid") or "")
            if len(uuid) > 50:
                raise Refused(230001, "invalid uuid")
            if uuid and uuid in self._uuids and self._now() - self._uuids[uuid][0] < UUID_WINDOW_S:
                first = self._messages[self._uuids[uuid][1]]
                return self._json({"code": 0, "msg": "success", "data": first.item()})
            message = self._accept(request, body, reply_to)
        except Refused as refused:
            return self._refusal(refused)
        self._record(message)
        if uuid:
            self._uuids[uuid] = (self._now(), message.message_id)
        m = message
        sent = Sent(m.message_id, m.chat_id, m.msg_type, json.loads(m.content), reply_to, m.root_id, uuid)
        sent.thread_id, sent.parent_id = m.thread_id, m.parent_id
        self.sent.append(sent)
        self._by_sent[sent.message_id] = sent
        self._tick.beat()
        return self._answer(request, {"code": 0, "msg": "success", "data": message.item()})

    def _fault(self) -> web.Response | None:
        if not self._faults:
            return None
        status, code, msg = self._faults.pop(0)
        if not code:
            return web.Response(
                status=status, text="<html><body>upstream error</body></html>", content_type="text/html"
            )
        headers = {"x-ogw-ratelimit-limit": "50", "x-ogw-ratelimit-reset": "1"} if code == 99991400 else None
        return self._json(
            {"code": code, "msg": msg or ERRORS.get(code, "error")}, status=status, headers=headers
        )

    def _answer(self, request: web.Request, body: dict[str, Any]) -> web.StreamResponse:
        if self._lose and request.transport is not None:
            self._lose -= 1
            request.transport.close()  # the client sees the connection drop with no response at all
        return self._json(body)

    def _content(self, msg_type: Any, content: Any) -> dict[str, Any]:
        if msg_type not in MSG_TYPES:
            raise Refused(230001, "invalid msg_type")
        if not isinstance(content, str) or not content:
            raise Refused(230001, "content cannot be empty" if not content else "invalid message content")
        try:
            parsed = json.loads(content)
        except ValueError:
            raise Refused(230001, "invalid message content") from None
        if msg_type == "interactive" and not _card_ok(parsed):
            raise Refused(
                230099,
                "ErrCode: 200621; ErrMsg: parse card json err, please check whether the card "
                "json is correct; ",
            )
        if msg_type == "interactive" and self._card_checker is not None:
            try:
                self._card_checker(parsed)
            except ValueError as exc:
                raise Refused(230099, f"ErrCode: 200621; {exc}") from None
        if not isinstance(parsed, dict) or (msg_type == "text" and not isinstance(parsed.get("text"), str)):
            raise Refused(230001, "invalid message content. validate content fail")
        limit = TEXT_LIMIT if msg_type == "text" else CARD_LIMIT
        if msg_type in ("text", "interactive", "post") and len(content.encode()) > limit:
            raise Refused(230025)
        return parsed

    def _accept(self, request: web.Request, body: dict[str, Any], reply_to: str) -> _Message:
        msg_type = body.get("msg_type")
        self._content(msg_type, body.get("content"))
        n = next(self._ids)
        root_id = parent_id = thread_id = ""
        if reply_to:
            parent = self._messages.get(reply_to)
            if parent is None:
                raise Refused(230001, "invalid message_id")
            chat_id, parent_id = parent.chat_id, reply_to
            root_id = parent.root_id or reply_to
            thread_id = parent.thread_id or (f"omt_{n:012x}" if body.get("reply_in_thread") else "")
            if thread_id:
                parent_id = root_id  # inside a topic both point to the topic's root
                if not parent.thread_id:
                    parent.thread_id = thread_id
        else:
            kind, receive_id = request.query.get("receive_id_type"), body.get("receive_id")
            if kind == "chat_id":
                chat_id = str(receive_id)
            elif kind == "open_id":
                chat_id = self._p2p.get(str(receive_id), "")
                if not chat_id:
                    raise Refused(230013)
            else:
                raise Refused(230001, "invalid receive_id_type")
        if chat_id not in self.chats:
            raise Refused(230002)
        sender, created = self._by(self.app_id, "app_id", "app"), int(self._now() * 1000)
        message = _Message(f"om_{n:032x}", chat_id, str(msg_type), body["content"], created, sender, n)
        message.root_id, message.parent_id, message.thread_id = root_id, parent_id, thread_id
        return message

    async def _patch(self, request: web.Request) -> web.StreamResponse:
        message_id = request.match_info["message_id"]
        try:
            self._authorise(request)
            fault = self._fault()
            if fault is not None:
                return fault
            body = await request.json()
            message = self._messages.get(message_id)
            if message is None:
                raise Refused(230001, "invalid message_id")
            if message.sender.get("sender_type") != "app":
                raise Refused(230001, "bot or user is not the message`s sender")
            if message.msg_type != "interactive":
                raise Refused(230001, "This message is NOT a card")
            card = self._content("interactive", body.get("content"))
            if not (_card_shared(json.loads(message.content)) and _card_shared(card)):
                raise Refused(230001, "the fake refuses updating a card without config.update_multi=true")
        except Refused as refused:
            return self._refusal(refused)
        message.content, message.update_ms = body["content"], int(self._now() * 1000)
        self.patches.append(Patch(message_id, card))
        self._by_sent[message_id].patched.append(card)
        self._tick.beat()
        return self._answer(request, {"code": 0, "msg": "success", "data": {}})

    def _record(self, message: _Message) -> None:
        self._messages[message.message_id] = message

    async def _list(self, request: web.Request) -> web.Response:
        q = request.query
        container = q.get("container_id", "")
        self.history_calls[container] = self.history_calls.get(container, 0) + 1
        try:
            self._authorise(request)
            items, size, key = self._history_query(q)
            if self.history_forbidden:
                raise Refused(230027)
            token = q.get("page_token", "")
            if token:
                cursor = self._cursors.get(token)
                if cursor is None:
                    raise Refused(230001, "invalid page_token")
                if cursor[0] != key:
                    raise Refused(230001, "the request parameters have changed, page_token is invalid")
                after = cursor[1]  # the last item handed out: the next page starts past it
                if key[2] == "ByCreateTimeDesc":
                    items = [m for m in items if (m.create_ms, m.seq) < after]
                else:
                    items = [m for m in items if (m.create_ms, m.seq) > after]
        except Refused as refused:
            return self._refusal(refused)
        page, has_more, next_token = items[:size], len(items) > size, ""
        if has_more:
            next_token = base64.urlsafe_b64encode(f"page-{next(self._ids)}".encode()).decode()
            self._cursors[next_token] = (key, (page[-1].create_ms, page[-1].seq))
        data = {"has_more": has_more, "page_token": next_token, "items": [m.item() for m in page]}
        return self._json({"code": 0, "msg": "success", "data": data})

    def _history_query(self, q: Any) -> tuple[list[_Message], int, tuple[Any, ...]]:
        kind, container = q.get("container_id_type"), q.get("container_id", "")
        if kind not in ("chat", "thread"):
            raise Refused(230001, "invalid container_id_type")
        sort = q.get("sort_type", "ByCreateTimeAsc")
        if sort not in ("ByCreateTimeAsc", "ByCreateTimeDesc"):
            raise Refused(230001, "invalid sort_type")
        try:
            size = int(q.get("page_size", "20"))
            start = int(q["start_time"]) if q.get("start_time") else None
            end = int(q["end_time"]) if q.get("end_time") else None
        except ValueError:
            raise Refused(230001, "invalid start_time") from None
        if not 1 <= size <= 50:
            raise Refused(230001, "The page_size exceeds the limit")
        if start is not None and end is not None and end < start:
            raise Refused(230001, "The end_time is earlier than the start_time")
        if kind == "chat":
            if container not in self.chats:
                raise Refused(230002)
            items = [m for m in self._messages.values() if m.chat_id == container]
            # seconds, as the API takes them; both ends inclusive
            items = [
                m
                for m in items
                if (start is None or m.create_ms // 1000 >= start)
                and (end is None or m.create_ms // 1000 <= end)
            ]
        else:
            items = [m for m in self._messages.values() if m.thread_id == container]
        items.sort(key=lambda m: (m.create_ms, m.seq), reverse=sort == "ByCreateTimeDesc")
        return items, size, (kind, container, sort, start, end, size)

    async def _resource(self, request: web.Request) -> web.Response:
        try:
            self._authorise(request)
            if request.query.get("type") not in ("image", "file"):
                raise Refused(234001)
            data = self._resources.get((request.match_info["message_id"], request.match_info["file_key"]))
            if data is None:
                raise Refused(234003)
        except Refused as refused:
            return self._refusal(refused)
        return web.Response(body=data, content_type="application/octet-stream")

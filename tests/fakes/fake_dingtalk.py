"""A fake of DingTalk's platform on 127.0.0.1 (aiohttp), for tests: pass `fake.endpoint` where
`https://api.dingtalk.com` would go (our `DingTalkApi`, `ERRAND_DINGTALK_ENDPOINT`). It serves our own client
(core/channels/dingtalk/openapi.py) and frames that dingtalk-stream 0.24.3's types read
(`CallbackMessage`, `ChatbotMessage`, `CardCallbackMessage`, `AckMessage`).

What it models, as dingtalk-stream 0.24.3, the Stream protocol notes and the robot OpenAPI's Tea models
(aliyun/dingtalk-sdk `robot_1_0`, `im_1_0`) describe it:

- Auth: `POST /v1.0/oauth2/accessToken {appKey, appSecret}` issues a new `accessToken` (`expireIn` 7200,
  counted in `token_requests`); wrong credentials get HTTP 400 `invalidClientIdOrSecret`. Every robot route
  needs header `x-acs-dingtalk-access-token` holding an issued, unexpired token, else HTTP 401
  `InvalidAuthentication`. `expire_tokens()` revokes every token issued so far.
- Stream: `POST /v1.0/gateway/connections/open {clientId, clientSecret, subscriptions, ua, localIp}` gives
  `ws://127.0.0.1:P/connect` and a ticket (recorded in `opened`); wrong credentials get 401. `GET
  /connect?ticket=T` upgrades once per ticket, within 90 s of its issue (`now`), else 401 before the
  upgrade. Frames are JSON text `{specVersion, type, headers{topic, messageId, contentType, time, …}, data}`
  with `data` a JSON string. A pushed frame goes to the newest live connection that was not told to
  disconnect (DingTalk picks one at random; the fake is deterministic). Acks from the client are recorded in
  `acks` (messageId -> Ack); one that is not a 200 for a frame the fake sent, an EVENT ack without
  `{"status": "SUCCESS"|"LATER"}`, or a ping answer that does not echo the ping's data lands in
  `bad_acks` too; anything unreadable the client sends lands in `bad_frames`.
- Builders (async: they push a frame): `user_says` (one-to-one or group robot message, text / picture /
  richText, quotes via `quote_of_bot` / `quote_of_user`; a group message that does not @ the bot is not
  delivered, as DingTalk does), `press` (card callback on a card the fake sent, for one of its current
  buttons), `ping`, `tell_disconnect` (SYSTEM disconnect, then the fake closes that connection after
  `grace_s`), `drop_connection` (abrupt TCP close), `event`, `push_raw` (anything).
- Sends, all checking the token and `robotCode`, recorded in `sent` (one `Sent` per recipient):
  `oToMessages/batchSend` (1-20 `userIds`, `sampleText` / `sampleMarkdown`, `msgParam` a JSON string of at
  most 15000 bytes; unknown staff in `invalidStaffIdList`, throttled staff in `flowControlledStaffIdList`),
  `groupMessages/send` (a group the fake knows), robot `interactiveCards/send` (`StandardCard`, `cardData`
  checked with our own `check_card`, idempotent by `cardBizId`) and its update `PUT
  /v1.0/im/robots/interactiveCards` (recorded in `card_updates`), and `POST /robot/sendBySession?session=S`
  (no token; errcode 0, or an errcode with HTTP 200 for an expired or unknown session).
- Read-back: `GET /v1.0/robot/oToMessages/readStatus` answers `{sendStatus, messageReadInfoList}`, `POST
  /v1.0/robot/groupMessages/query` answers `{sendStatus, readUserIds, readUsers, hasMore, nextToken}`
  (the Tea models' field names); `mark_read` makes a recipient count as having read a send.
- Switches, each consumed by the next matching calls: `fail_sends(n, status)` and `lose_answer(n)` (done
  and recorded in `sent` and `lost`, then the connection is closed with no answer) for the five send
  routes, before any validation, as a front-end proxy's would; `throttle(staff, n)`; `fail_delivery(n)`
  (the next n batch or group sends are accepted but end FAIL: recorded in `failed`, not in `sent`);
  `hold_status(n)` (the next n read-backs answer PROCESSING).
- Also recorded: `calls` (method, path) of every request, `connections` (live), `connects` (count),
  `pongs`, `frames_pushed`; waiters `wait_for_sent`, `wait_for_ack(s)`, `wait_for_pongs`,
  `wait_for_card_updates`, `wait_connected`, `wait_until`.

The fake's own choices where DingTalk does not say: error codes other than `invalidClientIdOrSecret`,
`InvalidAuthentication` and `invalidParameter.robotCode.notExsit`; a webhook session that is unknown gets
errcode 300001 and a malformed webhook body 40035; a batchSend that reaches nobody reads back as FAIL;
`messageReadInfoList[].readStatus` is "READ" or "UNREAD".
Stricter than DingTalk: only `sampleText` and `sampleMarkdown` are taken as `msgKey`, only a card our
`check_card` accepts is taken, and a one-to-one card goes only to known staff.

Not modelled: media upload and download, the newer card APIs (`/v1.0/card/instances`…), `coolAppCode`,
recalls, `atUsers` beyond the bot, re-pushing of unacked events, rate limits beyond the switches, tokens
being the same when fetched again within their lifetime (the fake issues a new one each time).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import itertools
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from aiohttp import WSMsgType, web

from core.channels.dingtalk.cards import CardError, check_card
from tests.fakes.pulse import Pulse

BOT_TOPIC = "/v1.0/im/bot/messages/get"
CARD_TOPIC = "/v1.0/card/instances/callback"
TOKEN_LIFETIME_S = 7200
TICKET_LIFETIME_S = 90.0
WEBHOOK_LIFETIME_MS = 90 * 60 * 1000
MSG_PARAM_LIMIT = 15_000
BATCH_LIMIT = 20
MSG_KEYS = frozenset(("sampleText", "sampleMarkdown"))
SESSION_EXPIRED = 300005
SESSION_UNKNOWN = 300001
WEBHOOK_BAD_BODY = 40035
_FAULT_CODES = {429: "Throttling", 500: "InternalError", 502: "BadGateway", 503: "ServiceUnavailable"}


class NoClientConnected(RuntimeError):
    """A frame was pushed while no stream connection could take it."""


class Refused(Exception):
    """A DingTalk error answer, raised in a handler: `{"code", "message"}` with an HTTP status."""

    def __init__(self, status: int, code: str, message: str = "") -> None:
        super().__init__(status, code, message)
        self.status, self.code, self.message = status, code, message or code


def _bad(code: str, message: str = "") -> Refused:
    return Refused(400, code, message)


@dataclass(frozen=True, slots=True)
class Sent:
    via: str  # "batch" | "group" | "card" | "webhook"
    to: str  # staff id (batch, one-to-one card); openConversationId (group, group card); conversation
    msg_key: str  # sampleText / sampleMarkdown; "card"; the webhook's msgtype (text / markdown)
    text: str
    title: str = ""
    card_biz_id: str = ""
    card: dict[str, Any] | None = None
    at_user_ids: tuple[str, ...] = ()
    process_query_key: str = ""
    session: str = ""


@dataclass(frozen=True, slots=True)
class CardUpdate:
    card_biz_id: str
    card: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Said:
    """What `user_says` made: the robot message's msgId, the frame's messageId, the conversation and the
    session of its webhook."""

    msg_id: str
    message_id: str
    conversation_id: str
    session: str


@dataclass(frozen=True, slots=True)
class Ack:
    message_id: str
    code: int | None
    message: str
    data: Any  # the ack's `data`, parsed when it is a JSON string
    raw: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Opened:
    client_id: str
    subscriptions: list[Any]
    ua: str
    local_ip: str
    ticket: str


@dataclass
class Connection:
    id: str
    ws: web.WebSocketResponse
    request: web.Request
    leaving: bool = False  # told to disconnect: gets no new frames
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    received: list[dict[str, Any]] = field(default_factory=list)  # readable frames from the client


@dataclass
class _Delivery:
    via: str  # "batch" | "group" | "card"
    recipients: list[str]
    group_id: str
    status: str  # SUCCESS | FAIL
    read: set[str] = field(default_factory=set)


@dataclass
class _Card:
    to: str
    group_id: str
    card: dict[str, Any]
    process_query_key: str


@dataclass
class _Session:
    conversation_id: str
    staff_id: str
    until_ms: int


class FakeDingTalk:
    def __init__(
        self,
        *,
        app_key: str = "dingfakeappkey01",
        app_secret: str = "fake-secret",
        robot_code: str = "",
        corp_id: str = "dingfakecorp0001",
        bot_name: str = "Errand",
        now: Callable[[], float] = time.time,
    ) -> None:
        self.app_key, self.app_secret = app_key, app_secret
        self.robot_code = robot_code or app_key
        self.corp_id, self.bot_name = corp_id, bot_name
        self.bot_user_id = "$:LWCP_bot"  # the robot's chatbotUserId
        self.now = now
        self._port = 0
        # records
        self.sent: list[Sent] = []
        self.lost: list[Sent] = []
        self.failed: list[Sent] = []
        self.card_updates: list[CardUpdate] = []
        self.calls: list[tuple[str, str]] = []
        self.opened: list[Opened] = []
        self.acks: dict[str, Ack] = {}
        self.bad_acks: list[tuple[str, dict[str, Any]]] = []  # (why, the ack as sent)
        self.bad_frames: list[str] = []
        self.pongs: list[Any] = []
        self.frames_pushed: list[dict[str, Any]] = []
        self.connections: list[Connection] = []  # live, oldest first
        self.connects = 0
        self.token_requests = 0
        self.staff: dict[str, str] = {}  # staff id -> nick
        self.groups: dict[str, str] = {}  # openConversationId -> title
        # state
        self._tokens: dict[str, float] = {}  # token -> expiry (epoch s)
        self._tickets: dict[str, float] = {}  # unused ticket -> issued at
        self._p2p: dict[str, str] = {}  # staff id -> their one-to-one conversation id
        self._sessions: dict[str, _Session] = {}
        self._deliveries: dict[str, _Delivery] = {}
        self._cards: dict[str, _Card] = {}
        self._user_messages: dict[str, tuple[str, str, str]] = {}  # msgId -> (staff, nick, text)
        self._pushed: dict[str, tuple[str, str, Any]] = {}  # messageId -> (type, topic, data)
        self._acked_pings: set[str] = set()
        self._ids = itertools.count(1)
        # switches
        self._send_faults: list[int] = []
        self._lose = 0
        self._throttle: dict[str, int] = {}
        self._fail_delivery = 0
        self._hold_status = 0
        self._tick = Pulse()
        self._timers: set[asyncio.Task[None]] = set()
        self._runner: web.AppRunner | None = None

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/v1.0/oauth2/accessToken", self._token)
        app.router.add_post("/v1.0/gateway/connections/open", self._open)
        app.router.add_get("/connect", self._connect)
        app.router.add_post("/v1.0/robot/oToMessages/batchSend", self._batch_send)
        app.router.add_get("/v1.0/robot/oToMessages/readStatus", self._read_status)
        app.router.add_post("/v1.0/robot/groupMessages/send", self._group_send)
        app.router.add_post("/v1.0/robot/groupMessages/query", self._group_query)
        app.router.add_post("/v1.0/im/v1.0/robot/interactiveCards/send", self._card_send)
        app.router.add_put("/v1.0/im/robots/interactiveCards", self._card_update)
        app.router.add_post("/robot/sendBySession", self._webhook)
        self._runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for timer in list(self._timers):
            timer.cancel()
        for conn in list(self.connections):
            if conn.request.transport is not None:
                conn.request.transport.close()
        self._tick.beat()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def webhook_url(self, session: str) -> str:
        return f"{self.endpoint}/robot/sendBySession?session={session}"

    # ---- switches -----------------------------------------------------------------------------------

    def fail_sends(self, n: int = 1, status: int = 500) -> None:
        """The next n send calls (batch, group, card send or update, webhook) answer `status`."""
        self._send_faults += [status] * n

    def lose_answer(self, n: int = 1) -> None:
        """The next n send calls that succeed take effect and are recorded (`sent`, `lost`), then the
        connection closes with no answer."""
        self._lose += n

    def throttle(self, staff_id: str, n: int = 1) -> None:
        """The next n batchSends to `staff_id` leave them in `flowControlledStaffIdList`, undelivered."""
        self._throttle[staff_id] = self._throttle.get(staff_id, 0) + n

    def fail_delivery(self, n: int = 1) -> None:
        """The next n batch or group sends are accepted (a processQueryKey comes back) but end FAIL."""
        self._fail_delivery += n

    def hold_status(self, n: int = 1) -> None:
        """The next n read-backs (readStatus, groupMessages/query) answer PROCESSING."""
        self._hold_status += n

    def expire_tokens(self) -> None:
        """Every access token issued so far stops working (the robot routes answer 401)."""
        self._tokens.clear()

    # ---- who and where ------------------------------------------------------------------------------

    def add_staff(self, staff_id: str, nick: str = "Lin") -> None:
        self.staff.setdefault(staff_id, nick)

    def add_group(self, conversation_id: str, title: str = "测试群") -> None:
        self.groups.setdefault(conversation_id, title)

    def p2p_conversation(self, staff_id: str) -> str:
        """The one-to-one conversation id between the robot and `staff_id`."""
        if staff_id not in self._p2p:
            digest = hashlib.sha256(f"{self.robot_code}/{staff_id}".encode()).hexdigest()[:22]
            self._p2p[staff_id] = f"cid{digest}=="
        return self._p2p[staff_id]

    def mark_read(self, process_query_key: str, user_id: str) -> None:
        """`user_id` has read the send known by `process_query_key`."""
        self._deliveries[process_query_key].read.add(user_id)

    def card(self, card_biz_id: str) -> dict[str, Any]:
        """A sent card as it stands now (after updates)."""
        return copy.deepcopy(self._cards[card_biz_id].card)

    def quote_of_bot(self, words: str) -> dict[str, Any]:
        """A `repliedMsg` quoting a message of the robot's that said `words`."""
        return {
            "msgId": self._new_id("msg"),
            "msgType": "text",
            "senderId": self.bot_user_id,
            "senderNick": self.bot_name,
            "content": {"text": words},
        }

    def quote_of_user(self, msg_id: str) -> dict[str, Any]:
        """A `repliedMsg` quoting a message a person sent through `user_says`."""
        staff_id, nick, text = self._user_messages[msg_id]
        return {
            "msgId": msg_id,
            "msgType": "text",
            "senderId": _sender_id(staff_id),
            "senderNick": nick,
            "content": {"text": text},
        }

    # ---- builders -----------------------------------------------------------------------------------

    async def user_says(
        self,
        text: str = "",
        *,
        staff_id: str = "manager4242",
        nick: str = "Lin",
        group: tuple[str, str] | None = None,
        at_bot: bool = True,
        quote: dict[str, Any] | None = None,
        msgtype: str = "text",
        picture_code: str | None = None,
    ) -> Said | None:
        """A person writes to the robot: a CALLBACK on the robot-message topic. In a group (`group` =
        (openConversationId, title)) only a message that @s the robot arrives: else None, nothing sent."""
        self.add_staff(staff_id, nick)
        if group is not None:
            self.add_group(*group)
            if not at_bot:
                return None
        conversation = group[0] if group is not None else self.p2p_conversation(staff_id)
        msg_id = self._new_id("msg")
        session = self._new_id("session")
        now_ms = int(self.now() * 1000)
        self._sessions[session] = _Session(conversation, staff_id, now_ms + WEBHOOK_LIFETIME_MS)
        data: dict[str, Any] = {
            "conversationId": conversation,
            "conversationType": "2" if group is not None else "1",
            "chatbotCorpId": self.corp_id,
            "chatbotUserId": self.bot_user_id,
            "msgId": msg_id,
            "senderNick": nick,
            "isAdmin": False,
            "senderStaffId": staff_id,
            "sessionWebhookExpiredTime": now_ms + WEBHOOK_LIFETIME_MS,
            "createAt": now_ms,
            "senderCorpId": self.corp_id,
            "senderId": _sender_id(staff_id),
            "sessionWebhook": self.webhook_url(session),
            "robotCode": self.robot_code,
            "isInAtList": True,
            "msgtype": msgtype,
        }
        if group is not None:
            data["conversationTitle"] = group[1]
            data["atUsers"] = [{"dingtalkId": self.bot_user_id}]
        if msgtype == "text":
            content: dict[str, Any] = {"content": text}
            if quote is not None:
                content.update(isReplyMsg=True, repliedMsg=copy.deepcopy(quote))
            data["text"] = content
        elif msgtype == "picture":
            code = picture_code or self._new_id("pic")
            data["content"] = {"downloadCode": code, "pictureDownloadCode": code}
        elif msgtype == "richText":
            parts: list[dict[str, Any]] = [{"text": text}] if text else []
            if picture_code:
                parts.append({"type": "picture", "downloadCode": picture_code})
            data["content"] = {"richText": parts}
        self._user_messages[msg_id] = (staff_id, nick, text)
        message_id = await self._push("CALLBACK", BOT_TOPIC, data)
        return Said(msg_id, message_id, conversation, session)

    async def press(self, card_biz_id: str, action_id: str, *, staff_id: str) -> str:
        """A person presses a button of a card the fake sent: a CALLBACK on the card topic; its messageId.
        KeyError for a card the fake did not send, ValueError for a button the card does not show now."""
        sent = self._cards[card_biz_id]
        if action_id not in _button_ids(sent.card):
            raise ValueError(f"card {card_biz_id!r} shows no button {action_id!r}")
        private = {"cardPrivateData": {"actionIds": [action_id], "params": {}}}
        data = {
            "extension": json.dumps({}),
            "corpId": self.corp_id,
            "type": "actionCallback",
            "userId": staff_id,
            "userIdType": 1,
            "content": json.dumps(private, ensure_ascii=False),
            "outTrackId": card_biz_id,
            "spaceType": "IM_GROUP" if sent.group_id else "IM_ROBOT",
            "spaceId": sent.group_id or self.p2p_conversation(sent.to),
        }
        return await self._push("CALLBACK", CARD_TOPIC, data)

    async def ping(self) -> str:
        """A SYSTEM ping; the client must answer with the same data (recorded in `pongs`)."""
        return await self._push("SYSTEM", "ping", {"opaque": str(uuid.uuid4())})

    async def event(self, topic: str, data: dict[str, Any], event_id: str = "") -> str:
        """An EVENT frame; its ack must carry `{"status": "SUCCESS"|"LATER"}`."""
        now_ms = str(int(self.now() * 1000))
        extra = {
            "eventId": event_id or self._new_id("evt"),
            "eventType": topic,
            "eventBornTime": now_ms,
            "eventCorpId": self.corp_id,
            "eventUnifiedAppId": self.app_key,
        }
        return await self._push("EVENT", topic, data, extra)

    async def tell_disconnect(self, grace_s: float = 0.5) -> Connection:
        """A SYSTEM disconnect to the current connection, which gets no new frames from now on and is
        closed by the fake after `grace_s` (DingTalk: about 10 s)."""
        conn = self._current()
        await self._push("SYSTEM", "disconnect", {"reason": "server is going to restart"}, conn=conn)
        conn.leaving = True
        timer = asyncio.ensure_future(self._close_later(conn, grace_s))
        self._timers.add(timer)
        timer.add_done_callback(self._timers.discard)
        return conn

    async def drop_connection(self) -> None:
        """Close the current connection abruptly (TCP close, no close frame)."""
        conn = self._current()
        if conn.request.transport is not None:
            conn.request.transport.close()
        await conn.closed.wait()

    async def push_raw(self, frame: str | dict[str, Any]) -> None:
        """Anything as a frame (bad ones too) to the current connection."""
        text = frame if isinstance(frame, str) else json.dumps(frame, ensure_ascii=False)
        await self._current().ws.send_str(text)

    # ---- waiting ------------------------------------------------------------------------------------

    async def wait_until(self, done: Callable[[], bool], timeout: float = 5.0) -> None:
        """Until `done()` holds, re-checked after everything the fake records."""
        async with asyncio.timeout(timeout):
            await self._tick.until(done)

    async def wait_for_sent(self, n: int, timeout: float = 5.0) -> list[Sent]:
        await self.wait_until(lambda: len(self.sent) >= n, timeout)
        return list(self.sent)

    async def wait_for_ack(self, message_id: str, timeout: float = 5.0) -> Ack:
        await self.wait_until(lambda: message_id in self.acks, timeout)
        return self.acks[message_id]

    async def wait_for_acks(self, n: int, timeout: float = 5.0) -> dict[str, Ack]:
        await self.wait_until(lambda: len(self.acks) >= n, timeout)
        return dict(self.acks)

    async def wait_for_pongs(self, n: int, timeout: float = 5.0) -> list[Any]:
        await self.wait_until(lambda: len(self.pongs) >= n, timeout)
        return list(self.pongs)

    async def wait_for_card_updates(self, n: int, timeout: float = 5.0) -> list[CardUpdate]:
        await self.wait_until(lambda: len(self.card_updates) >= n, timeout)
        return list(self.card_updates)

    async def wait_connected(self, n: int = 1, timeout: float = 5.0) -> Connection:
        """Until the n-th connection was made and a connection can take frames; that connection."""
        await self.wait_until(lambda: self.connects >= n and self._takers() != [], timeout)
        return self._current()

    # ---- stream -------------------------------------------------------------------------------------

    def _takers(self) -> list[Connection]:
        return [c for c in self.connections if not c.leaving and not c.ws.closed]

    def _current(self) -> Connection:
        takers = self._takers()
        if not takers:
            raise NoClientConnected("no stream connection can take a frame")
        return takers[-1]

    async def _push(
        self,
        kind: str,
        topic: str,
        data: dict[str, Any],
        extra: dict[str, str] | None = None,
        *,
        conn: Connection | None = None,
    ) -> str:
        target = conn or self._current()
        message_id = self._new_id("msgid")
        headers = {
            "appId": self.app_key,
            "connectionId": target.id,
            "contentType": "application/json",
            "messageId": message_id,
            "time": str(int(self.now() * 1000)),
            "topic": topic,
            **(extra or {}),
        }
        frame = {
            "specVersion": "1.0",
            "type": kind,
            "headers": headers,
            "data": json.dumps(data, ensure_ascii=False),
        }
        self._pushed[message_id] = (kind, topic, data)
        await target.ws.send_str(json.dumps(frame, ensure_ascii=False))
        self.frames_pushed.append(frame)
        self._tick.beat()
        return message_id

    async def _close_later(self, conn: Connection, grace_s: float) -> None:
        await asyncio.sleep(grace_s)  # DingTalk's grace period, modelled: not a test's synchronisation
        await conn.ws.close()

    async def _connect(self, request: web.Request) -> web.StreamResponse:
        self._call(request)
        ticket = request.query.get("ticket", "")
        issued = self._tickets.pop(ticket, None)
        if issued is None or self.now() - issued > TICKET_LIFETIME_S:
            return _error(Refused(401, "InvalidTicket", "the ticket is unknown, used or expired"))
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        conn = Connection(self._new_id("conn"), ws, request)
        self.connections.append(conn)
        self.connects += 1
        self._tick.beat()
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    self._on_text(conn, message.data)
                else:
                    self.bad_frames.append(f"{message.type.name} frame")
        finally:
            conn.closed.set()
            with contextlib.suppress(ValueError):
                self.connections.remove(conn)
            self._tick.beat()
        return ws

    def _on_text(self, conn: Connection, text: str) -> None:
        try:
            frame = json.loads(text)
        except ValueError:
            frame = None
        headers = frame.get("headers") if isinstance(frame, dict) else None
        message_id = headers.get("messageId") if isinstance(headers, dict) else None
        if not isinstance(frame, dict) or not isinstance(message_id, str):
            self.bad_frames.append(text)
            self._tick.beat()
            return
        conn.received.append(frame)
        raw = frame.get("data")
        data: Any = raw
        if isinstance(raw, str):
            with contextlib.suppress(ValueError):
                data = json.loads(raw)
        code = frame.get("code")
        ack = Ack(
            message_id, code if isinstance(code, int) else None, str(frame.get("message", "")), data, frame
        )
        self.acks[message_id] = ack
        why = self._ack_problem(ack)
        if why:
            self.bad_acks.append((why, frame))
        pushed = self._pushed.get(message_id)
        if pushed is not None and pushed[:2] == ("SYSTEM", "ping") and not why:
            self.pongs.append(data)
        self._tick.beat()

    def _ack_problem(self, ack: Ack) -> str:
        pushed = self._pushed.get(ack.message_id)
        if pushed is None:
            return "an ack for a frame the fake did not send"
        kind, topic, data = pushed
        if ack.code != 200:
            return f"ack code {ack.code!r}, not 200"
        if kind == "EVENT":
            status = ack.data.get("status") if isinstance(ack.data, dict) else None
            if status not in ("SUCCESS", "LATER"):
                return f"an EVENT ack needs data.status SUCCESS or LATER, not {status!r}"
        if kind == "SYSTEM" and topic == "ping" and ack.data != data:
            return "a ping answer must echo the ping's data"
        return ""

    # ---- HTTP: auth and gateway ---------------------------------------------------------------------

    def _call(self, request: web.Request) -> None:
        self.calls.append((request.method, request.path))
        self._tick.beat()

    async def _token(self, request: web.Request) -> web.Response:
        self._call(request)
        self.token_requests += 1
        body = await _body(request)
        if body.get("appKey") != self.app_key or body.get("appSecret") != self.app_secret:
            return _error(_bad("invalidClientIdOrSecret", "无效的clientId或者clientSecret"))
        token = uuid.uuid4().hex
        self._tokens[token] = self.now() + TOKEN_LIFETIME_S
        return web.json_response({"accessToken": token, "expireIn": TOKEN_LIFETIME_S})

    async def _open(self, request: web.Request) -> web.Response:
        self._call(request)
        try:
            body = await _body(request)
        except Refused as refused:
            return _error(refused)
        if body.get("clientId") != self.app_key or body.get("clientSecret") != self.app_secret:
            return _error(Refused(401, "Unauthorized", "clientId or clientSecret is wrong"))
        subscriptions = body.get("subscriptions")
        if not isinstance(subscriptions, list) or not subscriptions:
            return _error(_bad("invalidParameter.subscriptions", "subscriptions must be a non-empty list"))
        ticket = uuid.uuid4().hex
        self._tickets[ticket] = self.now()
        opened = Opened(
            str(body["clientId"]),
            subscriptions,
            str(body.get("ua", "")),
            str(body.get("localIp", "")),
            ticket,
        )
        self.opened.append(opened)
        return web.json_response({"endpoint": f"ws://127.0.0.1:{self._port}/connect", "ticket": ticket})

    def _authorise(self, request: web.Request) -> None:
        token = request.headers.get("x-acs-dingtalk-access-token", "")
        until = self._tokens.get(token)
        if until is None or self.now() >= until:
            raise Refused(401, "InvalidAuthentication", "不合法的access_token")

    def _robot(self, body: dict[str, Any]) -> None:
        if body.get("robotCode") != self.robot_code:
            raise _bad("invalidParameter.robotCode.notExsit", "robotCode不存在")

    # ---- HTTP: sends --------------------------------------------------------------------------------

    async def _send_route(
        self, request: web.Request, handler: Callable[[dict[str, Any]], tuple[dict[str, Any], list[Sent]]]
    ) -> web.StreamResponse:
        """The shared path of the token-holding send routes: faults, token, body, then the handler."""
        self._call(request)
        try:
            if self._send_faults:
                status = self._send_faults.pop(0)
                raise Refused(status, _FAULT_CODES.get(status, "SystemError"), "the fake was told to fail")
            self._authorise(request)
            answer, done = handler(await _body(request))
        except Refused as refused:
            return _error(refused)
        return self._answer(request, answer, done)

    def _answer(self, request: web.Request, answer: dict[str, Any], done: list[Sent]) -> web.StreamResponse:
        self._tick.beat()
        if self._lose and request.transport is not None:
            self._lose -= 1
            self.lost += done
            request.transport.close()  # done and recorded, but the client never hears back
        return web.json_response(answer)

    async def _batch_send(self, request: web.Request) -> web.StreamResponse:
        return await self._send_route(request, self._do_batch)

    def _do_batch(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[Sent]]:
        self._robot(body)
        users = body.get("userIds")
        if not isinstance(users, list) or not users or not all(isinstance(u, str) and u for u in users):
            raise _bad("invalidParameter.userIds.empty", "userIds must be a non-empty list of staff ids")
        if len(users) > BATCH_LIMIT:
            raise _bad("invalidParameter.userIds.tooMany", f"at most {BATCH_LIMIT} userIds")
        msg_key, text, title = _message(body)
        key = self._new_id("pqk")
        invalid = [u for u in users if u not in self.staff]
        throttled: list[str] = []
        reached: list[str] = []
        for user in users:
            if user in invalid:
                continue
            if self._throttle.get(user, 0) > 0:
                self._throttle[user] -= 1
                throttled.append(user)
            else:
                reached.append(user)
        fail = bool(reached) and self._take_fail_delivery()
        status = "SUCCESS" if reached and not fail else "FAIL"
        self._deliveries[key] = _Delivery("batch", reached, "", status)
        done = [Sent("batch", u, msg_key, text, title, process_query_key=key) for u in reached]
        (self.failed if fail else self.sent).extend(done)
        answer = {
            "processQueryKey": key,
            "invalidStaffIdList": invalid,
            "flowControlledStaffIdList": throttled,
        }
        return answer, [] if fail else done

    async def _group_send(self, request: web.Request) -> web.StreamResponse:
        return await self._send_route(request, self._do_group)

    def _do_group(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[Sent]]:
        self._robot(body)
        group = body.get("openConversationId")
        if not isinstance(group, str) or group not in self.groups:
            raise _bad("invalidParameter.openConversationId.invalid", "the robot is not in this group")
        msg_key, text, title = _message(body)
        key = self._new_id("pqk")
        fail = self._take_fail_delivery()
        self._deliveries[key] = _Delivery("group", [group], group, "FAIL" if fail else "SUCCESS")
        done = [Sent("group", group, msg_key, text, title, process_query_key=key)]
        (self.failed if fail else self.sent).extend(done)
        return {"processQueryKey": key}, [] if fail else done

    async def _card_send(self, request: web.Request) -> web.StreamResponse:
        return await self._send_route(request, self._do_card)

    def _do_card(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[Sent]]:
        if body.get("cardTemplateId") != "StandardCard":
            raise _bad("invalidParameter.cardTemplateId", "only StandardCard is modelled")
        self._robot(body)
        biz = body.get("cardBizId")
        if not isinstance(biz, str) or not biz.strip():
            raise _bad("invalidParameter.cardBizId", "cardBizId is missing")
        if biz in self._cards:  # idempotent: the same card again is the same card
            return {"processQueryKey": self._cards[biz].process_query_key}, []
        card = _card(body.get("cardData"))
        group, receiver = body.get("openConversationId"), body.get("singleChatReceiver")
        if (group is None) == (receiver is None):
            raise _bad("invalidParameter.receiver", "give openConversationId or singleChatReceiver")
        if group is not None:
            if not isinstance(group, str) or group not in self.groups:
                raise _bad("invalidParameter.openConversationId.invalid", "the robot is not in this group")
            to, group_id = group, group
        else:
            user = _receiver(receiver)
            if user not in self.staff:
                raise _bad("invalidParameter.singleChatReceiver", f"unknown staff {user!r}")
            to, group_id = user, ""
        key = self._new_id("pqk")
        self._cards[biz] = _Card(to, group_id, card, key)
        self._deliveries[key] = _Delivery("card", [to], group_id, "SUCCESS")
        text = str(card.get("header", {}).get("title", {}).get("text", ""))
        done = [Sent("card", to, "card", text, card_biz_id=biz, card=card, process_query_key=key)]
        self.sent += done
        # The robot card API's answer (Tea model SendRobotInteractiveCardResponseBody): the key at top level.
        return {"processQueryKey": key}, done

    async def _card_update(self, request: web.Request) -> web.StreamResponse:
        return await self._send_route(request, self._do_card_update)

    def _do_card_update(self, body: dict[str, Any]) -> tuple[dict[str, Any], list[Sent]]:
        biz = body.get("cardBizId")
        if not isinstance(biz, str) or biz not in self._cards:
            raise _bad("invalidParameter.cardBizId.notExist", "no card with this cardBizId")
        card = _card(body.get("cardData"))
        self._cards[biz].card = card
        self.card_updates.append(CardUpdate(biz, card))
        return {"processQueryKey": self._cards[biz].process_query_key}, []

    async def _webhook(self, request: web.Request) -> web.StreamResponse:
        self._call(request)
        if self._send_faults:
            status = self._send_faults.pop(0)
            return _error(
                Refused(status, _FAULT_CODES.get(status, "SystemError"), "the fake was told to fail")
            )
        session_id = request.query.get("session", "")
        session = self._sessions.get(session_id)
        if session is None:
            return web.json_response({"errcode": SESSION_UNKNOWN, "errmsg": "session is invalid"})
        if int(self.now() * 1000) >= session.until_ms:
            return web.json_response({"errcode": SESSION_EXPIRED, "errmsg": "session is expired"})
        try:
            body = await _body(request)
        except Refused:
            body = {}
        kind = body.get("msgtype")
        part = body.get(kind) if isinstance(kind, str) else None
        if kind == "text" and isinstance(part, dict) and _nonempty(part.get("content")):
            text, title = part["content"], ""
        elif kind == "markdown" and isinstance(part, dict) and _nonempty(part.get("text")):
            text, title = part["text"], str(part.get("title", ""))
        else:
            return web.json_response({"errcode": WEBHOOK_BAD_BODY, "errmsg": "msgtype and its content"})
        at = body.get("at")
        ids = at.get("atUserIds") if isinstance(at, dict) else None
        at_ids = tuple(i for i in ids if isinstance(i, str)) if isinstance(ids, list) else ()
        sent = Sent(
            "webhook", session.conversation_id, kind, text, title, at_user_ids=at_ids, session=session_id
        )
        self.sent.append(sent)
        return self._answer(request, {"errcode": 0, "errmsg": "ok"}, [sent])

    # ---- HTTP: read-back ----------------------------------------------------------------------------

    async def _read_status(self, request: web.Request) -> web.Response:
        self._call(request)
        try:
            self._authorise(request)
            self._robot(dict(request.query))
            delivery = self._delivery(request.query.get("processQueryKey"), "")
        except Refused as refused:
            return _error(refused)
        infos = [
            {
                "name": self.staff.get(user, ""),
                "userId": user,
                "readStatus": "READ" if user in delivery.read else "UNREAD",
                "readTimestamp": int(self.now() * 1000) if user in delivery.read else 0,
            }
            for user in delivery.recipients
        ]
        return web.json_response({"sendStatus": self._status(delivery), "messageReadInfoList": infos})

    async def _group_query(self, request: web.Request) -> web.Response:
        self._call(request)
        try:
            self._authorise(request)
            body = await _body(request)
            self._robot(body)
            group = body.get("openConversationId")
            if not isinstance(group, str) or not group:
                raise _bad("invalidParameter.openConversationId.invalid", "openConversationId is missing")
            delivery = self._delivery(body.get("processQueryKey"), group)
        except Refused as refused:
            return _error(refused)
        read = sorted(delivery.read)
        return web.json_response(
            {
                "sendStatus": self._status(delivery),
                "readUserIds": read,
                "readUsers": [{"userId": u, "unionId": f"union{u}"} for u in read],
                "hasMore": False,
                "nextToken": "",
            }
        )

    def _delivery(self, key: object, group: str) -> _Delivery:
        delivery = self._deliveries.get(key) if isinstance(key, str) else None
        if delivery is None or delivery.group_id != group:
            raise _bad("invalidParameter.processQueryKey.invalid", "no send with this processQueryKey")
        return delivery

    def _status(self, delivery: _Delivery) -> str:
        if self._hold_status > 0:
            self._hold_status -= 1
            return "PROCESSING"
        return delivery.status

    def _take_fail_delivery(self) -> bool:
        if self._fail_delivery > 0:
            self._fail_delivery -= 1
            return True
        return False

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):04d}{uuid.uuid4().hex[:12]}"


# ---- helpers ----------------------------------------------------------------------------------------


def _sender_id(staff_id: str) -> str:
    return f"$:LWCP_{staff_id}"


def _error(refused: Refused) -> web.Response:
    body = {"code": refused.code, "message": refused.message, "requestid": uuid.uuid4().hex}
    return web.json_response(body, status=refused.status)


async def _body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise _bad("invalidParameter.body", "the body must be JSON") from None
    if not isinstance(body, dict):
        raise _bad("invalidParameter.body", "the body must be a JSON object")
    return body


def _nonempty(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _message(body: dict[str, Any]) -> tuple[str, str, str]:
    """(msgKey, text, title) of a robot send; Refused when the key or its msgParam is wrong."""
    msg_key = body.get("msgKey")
    if msg_key not in MSG_KEYS:
        raise _bad("invalidParameter.msgKey.invalid", f"msgKey must be one of {', '.join(sorted(MSG_KEYS))}")
    raw = body.get("msgParam")
    if not isinstance(raw, str):
        raise _bad("invalidParameter.msgParam.invalid", "msgParam must be a JSON string")
    if len(raw.encode()) > MSG_PARAM_LIMIT:
        raise _bad("invalidParameter.msgParam.tooLong", f"msgParam is over {MSG_PARAM_LIMIT} bytes")
    try:
        param = json.loads(raw)
    except ValueError:
        raise _bad("invalidParameter.msgParam.invalid", "msgParam is not JSON") from None
    if not isinstance(param, dict):
        raise _bad("invalidParameter.msgParam.invalid", "msgParam must be a JSON object")
    if msg_key == "sampleText":
        if not _nonempty(param.get("content")):
            raise _bad("invalidParameter.msgParam.invalid", "sampleText needs content")
        return msg_key, param["content"], ""
    if not _nonempty(param.get("title")) or not _nonempty(param.get("text")):
        raise _bad("invalidParameter.msgParam.invalid", "sampleMarkdown needs title and text")
    return str(msg_key), param["text"], param["title"]


def _card(raw: object) -> dict[str, Any]:
    """The card in `cardData`, checked with our own shape rule."""
    if not isinstance(raw, str):
        raise _bad("invalidParameter.cardData", "cardData must be a JSON string")
    try:
        check_card(raw)
    except CardError as err:
        raise _bad("invalidParameter.cardData", str(err)) from None
    card = json.loads(raw)
    assert isinstance(card, dict)  # check_card held it to an object
    return card


def _receiver(raw: object) -> str:
    try:
        receiver = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        receiver = None
    user = receiver.get("userId") if isinstance(receiver, dict) else None
    if not isinstance(user, str) or not user:
        raise _bad("invalidParameter.singleChatReceiver", 'singleChatReceiver must be {"userId": …} as JSON')
    return user


def _button_ids(card: dict[str, Any]) -> set[str]:
    ids: set[str] = set()
    for content in card.get("contents", []):
        if isinstance(content, dict) and content.get("type") == "action":
            ids |= {b["id"] for b in content.get("actions", []) if isinstance(b, dict) and "id" in b}
    return ids

"""A fake of WeChat's iLink server on 127.0.0.1 (aiohttp), for tests and benchmarks.

It speaks the protocol as `core.channels.wechat` reads it, and checks what we send with our own
`frames.parse_send`, so a send the real server would refuse is refused here too.

- QR login: `get_bot_qrcode` gives a code; `get_qrcode_status` walks the scripted `qr_script`
  (default wait -> scaned -> confirmed) and confirms with `token`, `account_id` and this server as `baseurl`.
- `getupdates` needs the Bearer token, parks until a message is queued (`user_says`) or `hold_s` passes, and
  answers with the messages after the cursor (`c<N>`; an unknown cursor gets everything).
- `sendmessage` records each body in `sent`, and in `sent_at` the loop time (`loop.time()`) its request
  reached the fake, for benchmarks. It checks the context token against the tokens it gave out,
  and answers `ret=-2` on the 11th send per token (`sends_per_token`) or once the fake clock is 24 h past
  the peer's last message; else `ret=0` with a fresh `message_id`.
- Switches: `expire_session` (every call `-14`), `fail_next` (HTTP statuses or "timeout" / "not-json" /
  "ret" for the next calls of a path), `redeliver(message_id)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from core.channels.wechat.frames import FrameError, OutboundText, parse_send
from tests.fakes.pulse import Pulse

WINDOW_S = 24 * 3600.0
SENDS_PER_TOKEN = 10


@dataclass
class Sent:
    body: dict[str, Any]
    message: OutboundText
    message_id: str


@dataclass
class _Peer:
    last_said_at: float = 0.0
    token: str = ""
    sends: dict[str, int] = field(default_factory=dict)  # per context token


class FakeILink:
    def __init__(
        self,
        *,
        token: str = "tok-1",
        account_id: str = "bot-1@im.bot",
        owner_id: str = "owner@im.wechat",
        hold_s: float = 1.0,
        now: Callable[[], float] | None = None,
    ) -> None:
        self.token = token
        self.account_id = account_id
        self.owner_id = owner_id
        self.hold_s = hold_s
        self.sends_per_token = SENDS_PER_TOKEN
        self._now = now or (lambda: asyncio.get_running_loop().time())
        self.qr_script: list[str] = ["wait", "scaned", "confirmed"]
        self.qr_polls: list[dict[str, str]] = []
        self.log: list[dict[str, Any]] = []  # [{"seq", "message_id", ...}] in order of arrival
        self.sent: list[Sent] = []
        self.sent_at: list[float] = []  # when each of `sent` reached the fake, in loop time
        self.refused_sends: list[str] = []  # why each refused send was refused
        self.polls = 0
        self.signed_calls = 0  # every request that needs the bot's token, refused or not
        self.expire_session = False
        self.fail_next: dict[str, list[int | str]] = {}
        self._peers: dict[str, _Peer] = {}
        self._arrived = Pulse()
        self._closing = asyncio.Event()
        self._polled = Pulse()
        self._sent_one = Pulse()
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    # ---- what a test does ---------------------------------------------------------------------------

    def user_says(self, text: str, *, user: str = "", quote_of: str = "", **fields: Any) -> dict[str, Any]:
        """A WeChat user writes to the bot: queued for the next getupdates, with a fresh context token."""
        who = user or self.owner_id
        n = next(self._ids)
        peer = self._peers.setdefault(who, _Peer())
        peer.token = f"ctx-{who}-{n}"
        peer.last_said_at = self._now()
        item: dict[str, Any] = {"type": 1, "text_item": {"text": text}}
        if quote_of:
            item["ref_msg"] = {"title": "", "svr_id": quote_of}
        message = {
            "seq": n,
            "message_id": str(7_000_000_000_000_000_000 + n),
            "from_user_id": who,
            "to_user_id": self.account_id,
            "client_id": f"wx-{n}",
            "create_time_ms": int(self._now() * 1000),
            "message_type": 1,
            "message_state": 2,
            "context_token": peer.token,
            "item_list": [item],
            **fields,
        }
        self.log.append(message)
        self._arrived.beat()
        return message

    def queue_raw(self, message: object) -> None:
        """Anything at all as the next message (malformed frames)."""
        self.log.append(message)  # type: ignore[arg-type]
        self._arrived.beat()

    def redeliver(self, message_id: str) -> None:
        """The platform sends a message again (at-least-once delivery)."""
        again = next(m for m in self.log if m.get("message_id") == message_id)
        self.log.append(dict(again))
        self._arrived.beat()

    async def wait_for_polls(self, count: int, timeout: float = 5.0) -> None:
        """Until `count` getupdates calls have been answered or are being held."""
        async with asyncio.timeout(timeout):
            await self._polled.until(lambda: self.polls >= count)

    # ---- server -------------------------------------------------------------------------------------

    async def wait_for_sent(self, accept: Callable[[list[Sent]], bool], timeout: float = 10.0) -> None:
        """Until `accept(self.sent)` holds, re-checked after every send that reached the server (for a
        host in another process, whose bus a test cannot watch)."""
        async with asyncio.timeout(timeout):
            await self._sent_one.until(lambda: accept(self.sent))

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/ilink/bot/get_bot_qrcode", self._qrcode)
        app.router.add_get("/ilink/bot/get_qrcode_status", self._qr_status)
        app.router.add_post("/ilink/bot/getupdates", self._updates)
        app.router.add_post("/ilink/bot/sendmessage", self._send)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._arrived.beat()
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _fault(self, path: str) -> web.Response | None:
        pending = self.fail_next.get(path)
        if not pending:
            return None
        fault = pending.pop(0)
        if fault == "timeout":
            await self._closing.wait()  # answers only when the fake shuts down
        if fault == "not-json":
            return web.Response(text="<html>oops</html>", content_type="text/html")
        if fault == "ret":
            return web.json_response({"ret": -1, "errmsg": "system busy"})
        return web.Response(status=int(fault), text="fault")

    async def _refusal(self, path: str, request: web.Request) -> web.Response | None:
        """What a signed call gets before its own answer: a scripted fault, no token, an expired session."""
        self.signed_calls += 1
        fault = await self._fault(path)
        if fault is not None:
            return fault
        if not self._authorised(request):
            return web.json_response({"ret": -1, "errmsg": "unauthorised"}, status=401)
        if self.expire_session:
            return web.json_response({"ret": -14, "errcode": -14, "errmsg": "session timeout"})
        return None

    def _authorised(self, request: web.Request) -> bool:
        return (
            request.headers.get("Authorization") == f"Bearer {self.token}"
            and request.headers.get("AuthorizationType") == "ilink_bot_token"
        )

    async def _qrcode(self, request: web.Request) -> web.Response:
        return (await self._fault("get_bot_qrcode")) or web.json_response(
            {"qrcode": f"qr-{next(self._ids)}", "qrcode_img_content": f"{self.base_url}/qr"}
        )

    async def _qr_status(self, request: web.Request) -> web.Response:
        fault = await self._fault("get_qrcode_status")
        if fault is not None:
            return fault
        self.qr_polls.append(dict(request.query))
        status = self.qr_script.pop(0) if len(self.qr_script) > 1 else self.qr_script[0]
        if status == "scaned_but_redirect":
            return web.json_response({"status": status, "redirect_host": self.base_url.split("://", 1)[1]})
        if status != "confirmed":
            return web.json_response({"status": status})
        return web.json_response(
            {
                "status": "confirmed",
                "bot_token": self.token,
                "ilink_bot_id": self.account_id,
                "baseurl": self.base_url,
                "ilink_user_id": self.owner_id,
            }
        )

    async def _updates(self, request: web.Request) -> web.Response:
        refused = await self._refusal("getupdates", request)
        if refused is not None:
            return refused
        body = await request.json()
        cursor = str(body.get("get_updates_buf", ""))
        start = int(cursor[1:]) if cursor.startswith("c") and cursor[1:].isdigit() else 0
        self.polls += 1
        self._polled.beat()
        arrived = self._arrived.coming()
        if start >= len(self.log):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), self.hold_s)
        batch = self.log[start:]
        return web.json_response(
            {"ret": 0, "msgs": batch, "get_updates_buf": f"c{len(self.log)}", "longpolling_timeout_ms": 35000}
        )

    async def _send(self, request: web.Request) -> web.Response:
        arrived = asyncio.get_running_loop().time()
        refused = await self._refusal("sendmessage", request)
        if refused is not None:
            return refused
        body = await request.json()
        try:
            message = parse_send(body)
        except FrameError as exc:
            self.refused_sends.append(str(exc))
            return web.json_response({"ret": -1, "errmsg": str(exc)})
        peer = self._peers.get(message.to_user)
        tokens = {m.get("context_token") for m in self.log if isinstance(m, dict)}
        if peer is None or message.context_token not in tokens:
            self.refused_sends.append("unknown context token")
            return web.json_response({"ret": -2, "errmsg": "prepare failed"})
        count = peer.sends.get(message.context_token, 0) + 1
        if count > self.sends_per_token or self._now() - peer.last_said_at > WINDOW_S:
            self.refused_sends.append("the peer must write first")
            return web.json_response({"ret": -2, "errmsg": "prepare failed"})
        peer.sends[message.context_token] = count
        message_id = str(9_000_000_000_000_000_000 + len(self.sent) + 1)
        self.sent.append(Sent(json.loads(json.dumps(body)), message, message_id))
        self.sent_at.append(arrived)
        self._sent_one.beat()
        return web.json_response({"ret": 0, "message_id": message_id})

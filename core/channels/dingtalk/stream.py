"""DingTalk's stream connection, on our loop (docs/channels.md#receiving-on-dingtalk).

We drive the protocol ourselves with httpx and websockets instead of dingtalk-stream's client: its
`start()` swallows cancellation (a stopped channel would reconnect ten seconds later), its gateway call is a
blocking `requests.post` without a time-out, and it acks a callback whatever its handler did. What the
protocol is: a ticket from the gateway (good for one connection within 90 s), a websocket to the endpoint
with it, and JSON frames, each acked by its messageId.

What we do:
- frames are taken one at a time, in the order they came, so messages are stored in that order;
- a callback is acked only once `on_callback` returned, that is once what it brought is stored (DingTalk
  does not push a robot message again, so an unacked one is lost to a crash either way; the ack must not
  claim what did not happen);
- an EVENT is acked as SUCCESS (we subscribe to none; one that comes is logged);
- a SYSTEM `ping` is answered with its own data; on `disconnect` the next connection opens at once while
  the old one drains what it still brings (DingTalk closes it about ten seconds later, and what it pushes
  meanwhile is otherwise lost);
- a frame we cannot read is logged and skipped; the connection goes on;
- reconnects back off 1, 2, 4… s up to a minute, with jitter; an app DingTalk refuses says so in the
  channel's state and is tried again every REFUSED_WAIT_S.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import websockets

from core.channels.dingtalk.openapi import CredentialsRefused, DingTalkApi
from core.clock import Clock

log = logging.getLogger(__name__)

FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 60.0
REFUSED_WAIT_S = 120.0
DRAIN_S = 30.0  # how long an old connection told to go is read before it is closed from our side

# (topic, data) of a callback → the response to ack it with ({} when there is nothing to say).
CallbackHandler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any] | None]]
StateHandler = Callable[[str, str], Awaitable[None]]  # (status, reason)


class StreamConnection:
    def __init__(
        self, api: DingTalkApi, clock: Clock, *, on_callback: CallbackHandler, on_state: StateHandler
    ) -> None:
        self._api = api
        self._clock = clock
        self._on_callback = on_callback
        self._on_state = on_state
        self._take_lock = asyncio.Lock()  # one frame at a time, across the live and a draining connection
        self._draining: set[asyncio.Task[None]] = set()
        self.connections = 0  # sockets opened so far (tests, the bench)

    async def run(self) -> None:
        """Connect, take frames, reconnect; until cancelled."""
        try:
            await self._run()
        finally:
            for task in self._draining:
                task.cancel()
            await asyncio.gather(*self._draining, return_exceptions=True)

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                socket = await self._open()
            except CredentialsRefused as refused:
                log.warning("dingtalk: the app was refused: %s", refused)
                await self._on_state("error", f"{refused}: check the AppKey and AppSecret")
                await self._clock.sleep(REFUSED_WAIT_S)
                continue
            except Exception as exc:
                failures += 1
                log.warning("dingtalk: could not connect (%d in a row): %s", failures, exc)
                await self._on_state("reconnecting" if self.connections else "connecting", str(exc)[:300])
                await self._clock.sleep(_backoff(failures))
                continue
            failures = 0
            self.connections += 1
            await self._on_state("connected", "")
            told_to_go = await self._pump(socket)
            if told_to_go:
                # DingTalk closes this one soon: what it still brings is read beside the next connection.
                task = asyncio.get_running_loop().create_task(self._drain(socket))
                self._draining.add(task)
                task.add_done_callback(self._draining.discard)
                log.info("dingtalk: told to reconnect; connecting again at once")
                continue
            await asyncio.shield(socket.close())
            log.info("dingtalk: the stream closed; reconnecting")
            await self._on_state("reconnecting", "the connection dropped")
            await self._clock.sleep(_backoff(1))

    async def _open(self) -> Any:
        url, ticket = await self._api.open_connection()
        joiner = "&" if "?" in url else "?"
        return await websockets.connect(f"{url}{joiner}ticket={quote(ticket, safe='')}", max_size=4 << 20)

    async def _pump(self, socket: Any) -> bool:
        """Take frames until the socket closes (False) or DingTalk says to reconnect (True)."""
        try:
            async for raw in socket:
                if await self._take(socket, raw):
                    return True
        except websockets.exceptions.ConnectionClosed:
            pass
        return False

    async def _drain(self, socket: Any) -> None:
        try:
            async with asyncio.timeout(DRAIN_S):
                await self._pump(socket)
        except TimeoutError:
            pass
        finally:
            await asyncio.shield(socket.close())

    async def _take(self, socket: Any, raw: str | bytes) -> bool:
        """One frame; True when it was `disconnect`."""
        try:
            frame = json.loads(raw)
            if not isinstance(frame, dict) or not isinstance(frame.get("headers"), dict):
                raise ValueError("not a frame object with headers")
        except ValueError as exc:
            log.warning("dingtalk: a frame that could not be read was skipped: %s", exc)
            return False
        headers: dict[str, Any] = frame["headers"]
        kind, topic = frame.get("type"), str(headers.get("topic") or "")
        message_id = headers.get("messageId")
        if not isinstance(message_id, str) or not message_id:
            log.warning("dingtalk: a %s frame without a messageId was skipped", kind)
            return False
        if kind == "SYSTEM":
            if topic == "disconnect":
                return True
            if topic == "ping":
                await self._ack(socket, message_id, frame.get("data") or "{}")
            else:
                log.info("dingtalk: a system frame %r was skipped", topic)
            return False
        if kind == "EVENT":
            log.info("dingtalk: an event on %r was acked and skipped", topic)
            await self._ack(socket, message_id, json.dumps({"status": "SUCCESS"}))
            return False
        if kind != "CALLBACK":
            log.warning("dingtalk: a frame of type %r was skipped", kind)
            return False
        try:
            data = json.loads(frame.get("data") or "")
            if not isinstance(data, dict):
                raise ValueError("the callback's data is not an object")
        except (TypeError, ValueError) as exc:
            log.warning("dingtalk: a callback on %r could not be read: %s", topic, exc)
            await self._ack(socket, message_id, json.dumps({"response": {}}))
            return False
        async with self._take_lock:
            try:
                response = await self._on_callback(topic, data)
            except Exception:
                log.exception("dingtalk: a callback on %r could not be taken", topic)
                await self._ack(socket, message_id, json.dumps({"response": {}}), code=500)
                return False
        await self._ack(socket, message_id, json.dumps({"response": response or {}}, ensure_ascii=False))
        return False

    @staticmethod
    async def _ack(socket: Any, message_id: str, data: str, *, code: int = 200) -> None:
        ack = {
            "code": code,
            "headers": {"messageId": message_id, "contentType": "application/json"},
            "message": "OK" if code == 200 else "failed",
            "data": data,
        }
        try:
            await socket.send(json.dumps(ack, ensure_ascii=False))
        except websockets.exceptions.ConnectionClosed as exc:
            log.info("dingtalk: an ack could not be sent: %s", exc)


def _backoff(failures: int) -> float:
    wait: float = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2.0 ** max(0, failures - 1))
    return wait * random.uniform(0.8, 1.2)

"""Feishu's long connection, on our loop (docs/channels.md#the-long-connection).

lark-oapi's `ws.Client` is built to own a thread: `start()` blocks in `run_until_complete` on a loop grabbed
at import time, fetches its endpoint with a blocking `requests.post` that has no time-out, acks an event as
soon as a synchronous handler returns and drops `card` frames. So we drive its steps ourselves, on the host's
loop, with its own parts: its handshake-error reading, its frames, pings, chunk joining and its server-given
timing; the endpoint call is the same request, made with httpx and a time-out. What we do differently:

- an event is acked only after `on_event` returned, that is after it was stored: a crash before the ack
  makes Feishu push it again, and the dedupe drops it then;
- `card` frames are taken like `event` frames (Feishu has been seen sending button presses as either);
- reconnects back off 1, 2, 4… s up to `ReconnectInterval` (Feishu's own, 120 s), with jitter; a refusal
  that only the person can fix (wrong secret, too many connections) says so in the channel's state and is
  tried again at the long interval;
- every state change is reported (`on_state`), so the bot panel shows connected, reconnecting or why not.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import random
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import websockets

from core.agent.http_warmup import shared_ssl_context
from core.channels.feishu.config import FeishuApp
from core.channels.feishu.sdk import Sdk
from core.clock import Clock

log = logging.getLogger(__name__)

ENDPOINT_TIMEOUT_S = 20.0
ENDPOINT_PATH = "/callback/ws/endpoint"
SYSTEM_BUSY, INTERNAL_ERROR = 1, 1000040343  # the endpoint's codes worth trying again (the SDK's)
FIRST_BACKOFF_S = 1.0
MAX_BACKOFF_S = 120.0  # Feishu's own ReconnectInterval; a smaller one from the server wins
TOO_MANY_CONNECTIONS = 1000040350
CONTROL, DATA = 0, 1

# What a handler answers for a callback (a card press: a toast, a changed card), or None for an event.
EventHandler = Callable[[bytes], Awaitable[dict[str, Any] | None]]
StateHandler = Callable[[str, str], Awaitable[None]]  # (status, reason)
ConnectedHandler = Callable[[], Coroutine[Any, Any, None]]


class ConnectionRefused(Exception):
    """Feishu refused the connection for a reason the person must fix; `reason` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LongConnection:
    def __init__(
        self,
        sdk: Sdk,
        app: FeishuApp,
        base_url: str,
        clock: Clock,
        *,
        on_event: EventHandler,
        on_state: StateHandler,
        on_connected: ConnectedHandler,
    ) -> None:
        self._sdk = sdk
        self._clock = clock
        self._on_event = on_event
        self._on_state = on_state
        self._on_connected = on_connected
        lark = sdk.lark
        # Its endpoint call, timing and chunk cache are what we use of it; never its start().
        self._client = sdk.ws.Client(
            app.app_id,
            app.app_secret,
            log_level=lark.LogLevel.WARNING,
            domain=base_url,
            auto_reconnect=False,
        )
        self._send_lock = asyncio.Lock()
        self._app = app
        self._base_url = base_url.rstrip("/")
        self._http: httpx.AsyncClient | None = None
        self._socket: Any = None
        self.connections = 0  # sockets opened so far (tests, the bench)

    async def run(self) -> None:
        """Connect, take frames, reconnect; until cancelled."""
        try:
            await self._run()
        finally:
            # The SDK's chunk cache starts a clean-up task on the loop that built it; it goes with us.
            cron = getattr(self._client._cache, "_cron", None)
            if isinstance(cron, asyncio.Task):
                cron.cancel()
                await asyncio.gather(cron, return_exceptions=True)
            if self._http is not None:
                await asyncio.shield(self._http.aclose())

    async def _run(self) -> None:
        failures = 0
        while True:
            try:
                socket, service_id = await self._open()
            except ConnectionRefused as refused:
                log.warning("feishu: the connection was refused: %s", refused.reason)
                await self._on_state("error", refused.reason)
                failures += 1
                await self._clock.sleep(self._long_wait())
                continue
            except Exception as exc:
                failures += 1
                log.warning("feishu: could not connect (%d in a row): %s", failures, exc)
                await self._on_state("reconnecting" if self.connections else "connecting", str(exc)[:300])
                await self._clock.sleep(self._backoff(failures))
                continue
            failures = 0
            self._socket = socket
            self.connections += 1
            await self._on_state("connected", "")
            loop = asyncio.get_running_loop()
            pinging = loop.create_task(self._ping(socket, service_id))
            # Catch-up runs beside the frames: what the socket brings meanwhile is deduped against it.
            catching_up = loop.create_task(self._on_connected())
            try:
                await self._pump(socket)
            finally:
                pinging.cancel()
                catching_up.cancel()
                await asyncio.gather(pinging, catching_up, return_exceptions=True)
                self._socket = None
                await asyncio.shield(socket.close())
            log.info("feishu: the long connection closed; reconnecting")
            await self._on_state("reconnecting", "the connection dropped")
            await self._clock.sleep(self._backoff(1))

    async def reconnect(self) -> None:
        """Drop the socket; `run` connects again (a connection that stopped delivering)."""
        if self._socket is not None:
            await self._socket.close()

    async def _open(self) -> tuple[Any, int]:
        ws, errors = self._sdk.ws, self._sdk.ws_errors
        url = await self._endpoint()
        query = parse_qs(urlparse(url).query)
        service_id = int(query["service_id"][0])
        try:
            socket = await websockets.connect(url, **ws._ws_connect_kwargs(None))
        except websockets.exceptions.InvalidHandshake as exc:
            try:
                ws._parse_ws_conn_exception(exc)
            except errors.ClientException as refused:
                raise ConnectionRefused(_refusal(refused)) from exc
            raise
        return socket, service_id

    async def _endpoint(self) -> str:
        """Where to connect, and the server's timing: what the SDK's `_get_conn_url` asks, but on our
        loop and with a time-out (its blocking call has none, and a server that never answers would hold
        a worker thread, and Errand's shutdown, for ever)."""
        if self._http is None:
            self._http = httpx.AsyncClient(
                verify=shared_ssl_context(), timeout=ENDPOINT_TIMEOUT_S, trust_env=False
            )
        response = await self._http.post(
            self._base_url + ENDPOINT_PATH,
            json={"AppID": self._app.app_id, "AppSecret": self._app.app_secret},
            headers={"locale": "zh"},
        )
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.status_code != 200 or not isinstance(answer, dict):
            raise ConnectionError(f"Feishu's endpoint answered HTTP {response.status_code}")
        code, data = answer.get("code"), answer.get("data")
        if code in (SYSTEM_BUSY, INTERNAL_ERROR):
            raise ConnectionError(f"Feishu is busy ({code}: {answer.get('msg')})")
        if code != 0 or not isinstance(data, dict) or not isinstance(data.get("URL"), str):
            raise ConnectionRefused(f"Feishu refused the connection ({code}: {answer.get('msg')})")
        if isinstance(data.get("ClientConfig"), dict):
            self._client._configure(self._sdk.ws.ClientConfig(data["ClientConfig"]))
        url: str = data["URL"]
        return url

    async def _pump(self, socket: Any) -> None:
        """Take frames one after another, so messages are stored in the order Feishu sent them."""
        try:
            async for raw in socket:
                if not isinstance(raw, bytes):
                    continue
                try:
                    await self._frame(socket, raw)
                except Exception:  # one frame we cannot take (chunk headers out of range): the rest go on
                    log.exception("feishu: a frame was skipped")
        except websockets.exceptions.ConnectionClosed:
            return

    async def _frame(self, socket: Any, raw: bytes) -> None:
        frame = self._sdk.frame()
        try:
            frame.ParseFromString(raw)
        except Exception:
            log.warning("feishu: a frame that is not a protobuf Frame was skipped")
            return
        headers = {h.key: h.value for h in frame.headers}
        kind = headers.get("type", "")
        if frame.method == CONTROL:
            if kind == "pong" and frame.payload:
                self._configure(frame.payload)
            return
        if frame.method != DATA or kind not in ("event", "card"):
            return
        payload: bytes | None = frame.payload
        total = _int(headers.get("sum"), 1)
        if total > 1:  # one event cut into chunks: joined by its message_id
            seq = _int(headers.get("seq"), 0)
            payload = self._client._combine(headers.get("message_id", ""), total, seq, payload)
            if payload is None:
                return
        answer: dict[str, Any] = {"code": 200}
        try:
            result = await self._on_event(payload or b"")
            if result is not None:
                answer["data"] = base64.b64encode(json.dumps(result, ensure_ascii=False).encode()).decode()
        except Exception:
            log.exception("feishu: handling an event failed; Feishu will push it again")
            answer = {"code": 500}
        frame.payload = json.dumps(answer).encode()
        try:
            async with self._send_lock:
                await socket.send(frame.SerializeToString())
        except Exception as exc:  # the socket went: Feishu pushes the unacked event again
            log.info("feishu: an ack could not be sent: %s", exc)

    async def _ping(self, socket: Any, service_id: int) -> None:
        while True:
            try:
                frame = self._sdk.ws._new_ping_frame(service_id)
                async with self._send_lock:
                    await socket.send(frame.SerializeToString())
            except Exception as exc:
                log.info("feishu: a ping failed: %s", exc)
            await self._clock.sleep(max(1.0, float(self._client._ping_interval or 120)))

    def _configure(self, payload: bytes) -> None:
        try:
            decoded = json.loads(payload)
        except ValueError:
            return
        if isinstance(decoded, dict):
            self._client._configure(self._sdk.ws.ClientConfig(decoded))

    def _long_wait(self) -> float:
        interval: float = float(self._client._reconnect_interval or MAX_BACKOFF_S)
        return interval

    def _backoff(self, failures: int) -> float:
        cap = min(MAX_BACKOFF_S, self._long_wait())
        wait: float = min(cap, FIRST_BACKOFF_S * 2.0 ** max(0, failures - 1))
        return wait * random.uniform(0.8, 1.2)


def _refusal(exc: Any) -> str:
    code = getattr(exc, "code", None)
    if code in (514, TOO_MANY_CONNECTIONS):
        return "too many connections: another copy of this app is connected (Feishu allows 50)"
    return f"Feishu refused the connection ({exc})"  # the SDK's exception says "<code>: <message>"


def _int(raw: str | None, default: int) -> int:
    try:
        return int(raw or default)
    except ValueError:
        return default

"""The local API's HTTP layer: HTTP/1.1 on asyncio streams, parsed by h11 (docs/architecture.md, "The local
API").

The API is a handful of JSON routes for one local client at a time; a general web framework cost `errand
serve` about 0.18 s and 11 MB at every start for what these ~300 lines do: route `{name}` patterns,
read bodies up to a cap, answer in JSON, keep connections alive, and stop at once. h11 does the parsing
(and refuses what is not HTTP); this module only moves bytes and calls handlers.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import json
import logging
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote

import h11

log = logging.getLogger(__name__)

# The methods HTTP and its extensions (WebDAV, ...) define, as common HTTP parsers know them: one of these
# on a route that does not take it is a 405; anything else is refused as an unknown method, not routed.
KNOWN_METHODS = frozenset(
    [
        "GET",
        "HEAD",
        "POST",
        "PUT",
        "DELETE",
        "PATCH",
        "OPTIONS",
        "CONNECT",
        "TRACE",
        "COPY",
        "LOCK",
        "MKCOL",
        "MOVE",
        "PROPFIND",
        "PROPPATCH",
        "SEARCH",
        "UNLOCK",
        "BIND",
        "REBIND",
        "UNBIND",
        "ACL",
        "REPORT",
        "MKACTIVITY",
        "CHECKOUT",
        "MERGE",
        "M-SEARCH",
        "NOTIFY",
        "SUBSCRIBE",
        "UNSUBSCRIBE",
        "PURGE",
        "MKCALENDAR",
        "LINK",
        "UNLINK",
        "SOURCE",
        "QUERY",
    ]
)
MAX_LINE = 8190  # the request line, and each header line; a longer one is refused as not valid HTTP
MAX_HEAD = 4 * MAX_LINE  # the request line and all headers together
READ_CHUNK = 65536
IDLE_S = 75.0  # a kept-alive connection with no request for this long is closed


class HttpError(Exception):
    """An answer the HTTP layer gives before a handler runs (no such route, wrong method)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class BodyTooLarge(Exception):
    """The body is over the server's cap (declared or as it arrives)."""


class BadHttp(Exception):
    """What arrived is not HTTP h11 accepts, or names a method no standard defines."""

    def __init__(self, message: str, *, unknown_method: bool = False) -> None:
        super().__init__(message)
        self.unknown_method = unknown_method


class Headers(Mapping[str, str]):
    """Request headers by case-insensitive name; bytes that are not UTF-8 stay as surrogate escapes."""

    def __init__(self, raw: Iterable[tuple[bytes, bytes]]) -> None:
        self._by_name: dict[str, str] = {}
        for name, value in raw:
            key = name.decode("ascii", "surrogateescape").lower()
            text = value.decode("utf-8", "surrogateescape")
            self._by_name[key] = f"{self._by_name[key]}, {text}" if key in self._by_name else text

    def __getitem__(self, name: str) -> str:
        return self._by_name[name.lower()]

    def __iter__(self) -> Any:
        return iter(self._by_name)

    def __len__(self) -> int:
        return len(self._by_name)


@dataclass
class Request:
    method: str
    path: str  # percent-decoded
    raw_path: str  # as sent: routes match on it, so an encoded "/" stays inside its segment
    query: dict[str, str]  # the first value of each name
    headers: Headers
    match_info: dict[str, str] = field(default_factory=dict)  # the route's `{name}` parts, decoded
    content_length: int | None = None
    _body: Callable[[int | None], Awaitable[bytes]] | None = None

    async def read(self, cap: int | None = None) -> bytes:
        """The whole body (b"" without one); raises BodyTooLarge past `cap`, or the server's cap without one
        (a route that takes files sets a larger one)."""
        if self._body is None:
            return b""
        return await self._body(cap)


class Response:
    """An answer: its body as bytes (`text` is encoded in `charset`), sent with its length."""

    def __init__(
        self,
        *,
        status: int = 200,
        text: str | None = None,
        body: bytes = b"",
        content_type: str = "text/plain",
        charset: str | None = "utf-8",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.status = status
        self.body = text.encode(charset or "utf-8") if text is not None else body
        self.content_type = content_type
        self.charset = charset
        self.headers = dict(headers or {})
        self.close = False  # close the connection once sent


def json_response(data: object, *, status: int = 200) -> Response:
    return Response(status=status, text=json.dumps(data), content_type="application/json")


Handler = Callable[[Request], Awaitable[Response]]
Middleware = Callable[[Request, Handler], Awaitable[Response]]


@dataclass(frozen=True, slots=True)
class _Route:
    method: str
    path: str
    pattern: re.Pattern[str]
    handler: Handler


_PART = re.compile(r"\{(?P<name>\w+)(?::(?P<regex>[^{}]+))?\}")


class Router:
    """Routes in the order they were added; `{name}` matches one path segment (before decoding, so an
    encoded slash stays inside its segment)."""

    def __init__(self) -> None:
        self._routes: list[_Route] = []

    def add_get(self, path: str, handler: Handler) -> None:
        self._add("GET", path, handler)

    def add_post(self, path: str, handler: Handler) -> None:
        self._add("POST", path, handler)

    def add_put(self, path: str, handler: Handler) -> None:
        self._add("PUT", path, handler)

    def add_delete(self, path: str, handler: Handler) -> None:
        self._add("DELETE", path, handler)

    def _add(self, method: str, path: str, handler: Handler) -> None:
        """`{name}` is one segment; `{name:regex}` what the regex matches (e.g. `[\\s\\S]+`, slashes too)."""
        regex, shown, at = "", "", 0
        for part in _PART.finditer(path):
            regex += re.escape(path[at : part.start()]) + f"(?P<{part['name']}>{part['regex'] or '[^/]+'})"
            shown += path[at : part.start()] + "{" + part["name"] + "}"
            at = part.end()
        regex += re.escape(path[at:])
        shown += path[at:]
        self._routes.append(_Route(method, shown, re.compile(regex), handler))

    def table(self) -> list[tuple[str, str]]:
        """Every (method, path pattern) answered; a GET route answers HEAD too."""
        found = [(r.method, r.path) for r in self._routes]
        return found + [("HEAD", path) for method, path in found if method == "GET"]

    def resolve(self, method: str, raw_path: str) -> tuple[Handler, dict[str, str]]:
        """The handler and decoded `{name}` values; HttpError 404 or 405 when there is none."""
        wanted = "GET" if method == "HEAD" else method
        path_found = False
        for route in self._routes:
            found = route.pattern.fullmatch(raw_path)
            if found is None:
                continue
            path_found = True
            if route.method == wanted:
                return route.handler, {k: unquote(v) for k, v in found.groupdict().items()}
        if path_found:
            raise HttpError(405, "Method Not Allowed")
        raise HttpError(404, "Not Found")


ErrorAnswer = Callable[[BadHttp], Response]


class HttpServer:
    """Serves a Router on 127.0.0.1 through middlewares (the first given is the outermost).

    `bad_http` words the answer to what is not HTTP; `linger_s` is how long a connection keeps reading a
    body its handler left unread, so the client can finish sending and read the answer."""

    def __init__(
        self,
        router: Router,
        *,
        middlewares: Iterable[Middleware] = (),
        max_body: int,
        bad_http: ErrorAnswer,
        linger_s: float,
    ) -> None:
        self._router = router
        # Built once: the outermost middleware first, the router innermost.
        self.handle: Handler = self._routed
        for middleware in reversed(list(middlewares)):
            self.handle = _wrapped(middleware, self.handle)
        self._max_body = max_body
        self._bad_http = bad_http
        self._linger_s = linger_s
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, port: int) -> int:
        """Listen on 127.0.0.1:`port` (0: any free one); the port listened on."""
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", port)
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening and end every connection now, a request in progress too."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if server is not None:
            await server.wait_closed()

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await _Connection(self, reader, writer).serve()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _routed(self, request: Request) -> Response:
        handler, request.match_info = self._router.resolve(request.method, request.raw_path)
        return await handler(request)


def _wrapped(middleware: Middleware, inner: Handler) -> Handler:
    async def call(request: Request) -> Response:
        return await middleware(request, inner)

    return call


class _Connection:
    """One client connection: requests one after another, each answered before the next is read."""

    def __init__(
        self, server: HttpServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self._server = server
        self._reader = reader
        self._writer = writer
        self._h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)

    async def serve(self) -> None:
        while True:
            try:
                event = await self._next_event(idle_s=IDLE_S)
            except BadHttp as exc:
                await self._refuse(exc)
                return
            except TimeoutError:
                return
            if not isinstance(event, h11.Request):
                return  # the client closed (ConnectionClosed) or nothing more can come
            try:
                request = self._request(event)
            except BadHttp as exc:
                await self._refuse(exc)
                return
            try:
                response = await self._server.handle(request)
            except Exception:  # the middlewares answer what handlers raise; this is the last resort
                log.exception("API request failed: %s %s", request.method, request.path)
                response = Response(status=500, text="Internal Server Error")
            unread = self._h11.their_state is h11.SEND_BODY
            if unread:
                response.close = True
            await self._send(response, head_only=request.method == "HEAD")
            if unread:
                await self._linger()
                return
            if response.close or self._h11.our_state is not h11.DONE:
                return
            try:
                self._h11.start_next_cycle()
            except h11.ProtocolError:
                return

    def _request(self, event: h11.Request) -> Request:
        method = event.method.decode("ascii", "surrogateescape")
        if method not in KNOWN_METHODS:
            raise BadHttp(f"unknown method {method!r}", unknown_method=True)
        # h11 bounds only a head still arriving; one that came whole is checked here.
        if len(event.method) + len(event.target) + len(" HTTP/1.1") > MAX_LINE:
            raise BadHttp(f"the request line is longer than {MAX_LINE} bytes")
        for name, value in event.headers:
            if len(name) + len(value) + 2 > MAX_LINE:
                raise BadHttp(f"the header {name.decode('ascii', 'replace')} is longer than {MAX_LINE} bytes")
        target = event.target.decode("ascii", "surrogateescape")
        raw_path, _, raw_query = target.partition("?")
        headers = Headers(event.headers)
        length = headers.get("content-length")  # h11 checked it is a number
        request = Request(
            method=method,
            path=unquote(raw_path),
            raw_path=raw_path,
            query=_first_values(raw_query),
            headers=headers,
            content_length=int(length) if length is not None else None,
        )
        request._body = self._reader_for(request)
        return request

    def _reader_for(self, request: Request) -> Callable[[int | None], Awaitable[bytes]]:
        cached: list[bytes] = []

        async def read(cap: int | None) -> bytes:
            if cached:
                return cached[0]
            limit = self._server._max_body if cap is None else cap
            if request.content_length is not None and request.content_length > limit:
                raise BodyTooLarge
            chunks: list[bytes] = []
            size = 0
            while True:
                event = await self._next_event(idle_s=None)
                if isinstance(event, h11.Data):
                    size += len(event.data)
                    if size > limit:
                        raise BodyTooLarge
                    chunks.append(bytes(event.data))
                elif isinstance(event, h11.EndOfMessage):
                    cached.append(b"".join(chunks))
                    return cached[0]
                else:
                    raise ConnectionError("the client left while sending the body")

        return read

    async def _next_event(self, *, idle_s: float | None) -> Any:
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise BadHttp(str(exc)) from None
            if event is not h11.NEED_DATA:
                return event
            if idle_s is None:
                data = await self._reader.read(READ_CHUNK)
            else:
                async with asyncio.timeout(idle_s):
                    data = await self._reader.read(READ_CHUNK)
            self._h11.receive_data(data)

    async def _send(self, response: Response, *, head_only: bool = False) -> None:
        content_type = response.content_type
        if response.charset:
            content_type += f"; charset={response.charset}"
        headers = [
            ("Content-Type", content_type),
            ("Content-Length", str(len(response.body))),
            *response.headers.items(),
        ]
        if response.close:
            headers.append(("Connection", "close"))
        data = self._h11.send(h11.Response(status_code=response.status, headers=headers)) or b""
        if response.body and not head_only:
            data += self._h11.send(h11.Data(data=response.body)) or b""
        data += self._h11.send(h11.EndOfMessage()) or b""
        self._writer.write(data)
        await self._writer.drain()

    async def _refuse(self, exc: BadHttp) -> None:
        if self._h11.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
            return
        response = self._server._bad_http(exc)
        response.close = True
        # h11 would refuse to answer a request it could not parse; the answer is written by hand instead.
        head = f"HTTP/1.1 {response.status} {http.HTTPStatus(response.status).phrase}\r\n"
        content_type = response.content_type + (f"; charset={response.charset}" if response.charset else "")
        head += f"Content-Type: {content_type}\r\nContent-Length: {len(response.body)}\r\n"
        head += "Connection: close\r\n\r\n"
        self._writer.write(head.encode("ascii") + response.body)
        await self._writer.drain()

    async def _linger(self) -> None:
        """Read and drop what the client still sends, for a while, so it can finish and read the answer."""
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(self._server._linger_s):
                while await self._reader.read(READ_CHUNK):
                    pass


def _first_values(raw_query: str) -> dict[str, str]:
    query: dict[str, str] = {}
    for name, value in parse_qsl(raw_query, keep_blank_values=True):
        query.setdefault(name, value)
    return query

"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1 for tests and benchmarks.

Tests push `Reply` values into a FIFO; each `POST /v1/chat/completions` takes the next one (or asks
`responder`, or falls back to `default_text`) and answers over real HTTP, streamed as SSE when the
request says `"stream": true`. Every chat request is recorded with its body and timings so tests can
assert what the agent sent and benchmarks can measure the gap between a reply and the next request.

    async with ScriptedModelServer() as server:
        server.push(Reply.tool_calls([ToolCallSpec("bash", {"command": "ls"})]))
        server.push(Reply.text("done"))
        ...  # point the code under test at server.base_url
        await server.wait_for_requests(2)

A reply may reason first, as DeepSeek's reasoner and other thinking models do: `Reply.text("done",
reasoning="The listing says it all.")` streams the reasoning as `reasoning_content` deltas before the answer.

Standalone (benchmarks, manual runs): `python -m tests.fakes.model_server --port 0 --latency 0.1`
prints its base URL on one line and serves `echo_responder` until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self

from aiohttp import web

__all__ = [
    "RecordedRequest",
    "Reply",
    "Responder",
    "ScriptedModelServer",
    "ToolCallSpec",
    "echo_responder",
    "main",
]

JsonDict = dict[str, Any]
ReplyKind = Literal["text", "tool_calls", "error", "hang", "disconnect"]

# OpenAI's own `type`/`code` pairs, so client code that branches on them sees familiar values.
_ERROR_KINDS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("invalid_request_error", "model_not_found"),
    408: ("timeout_error", "timeout"),
    409: ("invalid_request_error", "conflict"),
    422: ("invalid_request_error", "unprocessable_entity"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


@dataclass(frozen=True)
class ToolCallSpec:
    """One function call the scripted model makes.

    `arguments` is a dict (sent as its JSON) or a raw string sent verbatim, which lets tests script
    malformed JSON arguments.
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments), ensure_ascii=False)


@dataclass(frozen=True)
class Reply:
    """What the server does with one chat completion request. Build it with the classmethods."""

    kind: ReplyKind
    content: str = ""
    calls: tuple[ToolCallSpec, ...] = ()
    chunks: int = 3
    latency_s: float = 0.0
    chunk_delay_s: float = 0.0
    # None estimates (prompt, completion) tokens from the sizes, so cost code always sees numbers.
    usage: tuple[int, int] | None = None
    cached_tokens: int = 0  # reported as prompt_tokens_details.cached_tokens when set
    finish_reason: str = "stop"
    status: int = 200
    message: str = ""
    retry_after: float | None = None
    # What a reasoning model thinks before it answers, streamed as `reasoning_content` deltas first.
    reasoning: str = ""

    @classmethod
    def text(
        cls,
        content: str,
        *,
        chunks: int = 3,
        latency_s: float = 0.0,
        chunk_delay_s: float = 0.0,
        usage: tuple[int, int] | None = None,
        finish_reason: str = "stop",
        reasoning: str = "",
    ) -> Reply:
        """A text answer, streamed as `chunks` roughly equal content deltas (after as many
        `reasoning_content` deltas when `reasoning` is given, as DeepSeek's reasoner does)."""
        if chunks < 1:
            raise ValueError("chunks must be at least 1")
        return cls(
            kind="text",
            content=content,
            chunks=chunks,
            latency_s=latency_s,
            chunk_delay_s=chunk_delay_s,
            usage=usage,
            finish_reason=finish_reason,
            reasoning=reasoning,
        )

    @classmethod
    def tool_calls(
        cls,
        calls: Sequence[ToolCallSpec],
        *,
        text: str = "",
        latency_s: float = 0.0,
        chunk_delay_s: float = 0.0,
        usage: tuple[int, int] | None = None,
        reasoning: str = "",
    ) -> Reply:
        """One or more parallel tool calls, optionally preceded by some text (and by `reasoning`
        deltas before everything, when given)."""
        if not calls:
            raise ValueError("a tool_calls reply needs at least one ToolCallSpec")
        return cls(
            kind="tool_calls",
            content=text,
            calls=tuple(calls),
            latency_s=latency_s,
            chunk_delay_s=chunk_delay_s,
            usage=usage,
            finish_reason="tool_calls",
            reasoning=reasoning,
        )

    @classmethod
    def error(
        cls,
        status: int,
        *,
        message: str | None = None,
        retry_after: float | None = None,
        latency_s: float = 0.0,
    ) -> Reply:
        """An HTTP error status with an OpenAI-style JSON error body (and `Retry-After` when given)."""
        if status < 400:
            raise ValueError(f"an error reply needs a 4xx or 5xx status, not {status}")
        return cls(
            kind="error",
            status=status,
            message=message if message is not None else f"scripted error {status}",
            retry_after=retry_after,
            latency_s=latency_s,
        )

    @classmethod
    def hang(cls) -> Reply:
        """Accept the request and never answer, until the client goes away or the server stops."""
        return cls(kind="hang")

    @classmethod
    def disconnect(cls, *, latency_s: float = 0.0) -> Reply:
        """Drop the connection without any response, as a network failure would."""
        return cls(kind="disconnect", latency_s=latency_s)


Responder = Callable[[JsonDict], Reply | None]


@dataclass
class RecordedRequest:
    """One chat completion request as the server saw it.

    Times are `time.monotonic()` seconds, so a benchmark's step gap is
    `requests[i + 1].received_at - requests[i].responded_at`.
    """

    body: JsonDict
    received_at: float
    # When the last byte of the reply was written; None while in flight, or for hang/disconnect.
    responded_at: float | None = None
    # When the server noticed the client went away before the reply was complete.
    disconnected_at: float | None = None
    # Lower-cased names, so lookups don't depend on how the client spelled them.
    headers: dict[str, str] = field(default_factory=dict)
    reply: Reply | None = None

    @property
    def messages(self) -> list[JsonDict]:
        messages = self.body.get("messages")
        return list(messages) if isinstance(messages, list) else []


class ScriptedModelServer:
    """An OpenAI-compatible Chat Completions server answering from a script. See the module docstring."""

    def __init__(
        self,
        *,
        port: int = 0,
        default_text: str = "ok",
        responder: Responder | None = None,
        models: Sequence[str] = ("fake-model",),
    ) -> None:
        self.default_text = default_text
        self.responder = responder
        self.models = list(models)
        self.requests: list[RecordedRequest] = []
        self._script: deque[Reply] = deque()
        self._wanted_port = port
        self._port: int | None = None
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()
        # Replaced on every change, so waiters wake without polling and without holding a lock.
        self._changed = asyncio.Event()
        self._served = 0

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("ScriptedModelServer is already running")
        self._stopping = asyncio.Event()
        self._changed = asyncio.Event()
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_get("/v1/models", self._list_models)
        # handler_cancellation: a client that gives up must end its hanging or streaming handler,
        # which is what cancel tests observe. A short shutdown_timeout is only a backstop: our
        # handlers already finish as soon as `_stopping` is set.
        runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, "127.0.0.1", self._wanted_port)
            await site.start()
            self._port = int(runner.addresses[0][1])
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._stopping.set()
        await runner.cleanup()
        self._port = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("ScriptedModelServer is not running; call start() first")
        return self._port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- scripting -----------------------------------------------------------------------------

    def push(self, reply: Reply) -> None:
        self._script.append(reply)

    def push_many(self, replies: Iterable[Reply]) -> None:
        self._script.extend(replies)

    @property
    def pending_replies(self) -> int:
        """Scripted replies not yet taken; tests assert 0 to prove the code made every expected call."""
        return len(self._script)

    def reset(self) -> None:
        """Forget recorded requests and pending scripted replies; keeps `responder` and `default_text`."""
        self.requests.clear()
        self._script.clear()
        self._notify()

    # -- inspection ----------------------------------------------------------------------------

    @property
    def last_request(self) -> RecordedRequest:
        if not self.requests:
            raise IndexError("no chat completion request has been received")
        return self.requests[-1]

    def messages_of(self, index: int) -> list[JsonDict]:
        """The `messages` list of request `index` (negative indexes count from the end)."""
        return self.requests[index].messages

    # A `timeout` argument (not asyncio.timeout at the call site) keeps the error message specific.
    async def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Return the recorded requests once at least `n` have arrived."""
        try:
            async with asyncio.timeout(timeout):
                await self._wait_for(lambda: len(self.requests) >= n)
        except TimeoutError:
            raise TimeoutError(
                f"expected at least {n} chat completion request(s) within {timeout}s, "
                f"got {len(self.requests)}"
            ) from None
        return list(self.requests)

    async def wait_until(
        self,
        predicate: Callable[[], bool],
        *,
        timeout: float = 5.0,
        what: str = "",
    ) -> None:
        """Wait until `predicate()` holds; it is re-checked whenever a request arrives, ends or drops."""
        try:
            async with asyncio.timeout(timeout):
                await self._wait_for(predicate)
        except TimeoutError:
            raise TimeoutError(f"condition {what or predicate!r} not met within {timeout}s") from None

    async def _wait_for(self, predicate: Callable[[], bool]) -> None:
        while not predicate():
            await self._changed.wait()

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    # -- HTTP handlers -------------------------------------------------------------------------

    async def _list_models(self, request: web.Request) -> web.StreamResponse:
        created = int(time.time())
        data = [
            {"id": m, "object": "model", "created": created, "owned_by": "errand-tests"} for m in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        # Taken before reading the body: for step-gap figures, arrival is when the request started.
        received_at = time.monotonic()
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return _error_response(400, f"request body is not valid JSON: {exc}")
        if not isinstance(body, dict):
            return _error_response(400, "request body must be a JSON object")

        reply = self._next_reply(body)
        record = RecordedRequest(
            body=body,
            received_at=received_at,
            headers={k.lower(): v for k, v in request.headers.items()},
            reply=reply,
        )
        # Taking the reply and recording happen with no await between them, so request i always
        # gets the i-th scripted reply even when requests run concurrently.
        self.requests.append(record)
        self._served += 1
        serial = self._served
        self._notify()
        try:
            return await self._serve(request, body, reply, record, serial)
        except asyncio.CancelledError:
            if not self._stopping.is_set():
                record.disconnected_at = time.monotonic()
                self._notify()
            raise

    def _next_reply(self, body: JsonDict) -> Reply:
        if self._script:
            return self._script.popleft()
        if self.responder is not None:
            try:
                reply = self.responder(body)
            except Exception:
                # The test's own responder is broken: surface it in the client's error message.
                return Reply.error(500, message="responder raised:\n" + traceback.format_exc())
            if reply is not None:
                return reply
        return Reply.text(self.default_text)

    async def _serve(
        self, request: web.Request, body: JsonDict, reply: Reply, record: RecordedRequest, serial: int
    ) -> web.StreamResponse:
        if reply.kind == "hang":
            await self._stopping.wait()
            return _abort(request)
        if not await self._pause(reply.latency_s) or reply.kind == "disconnect":
            return _abort(request)
        if reply.kind == "error":
            error = _error_response(reply.status, reply.message, retry_after=reply.retry_after)
            return await self._send_whole(request, error, record)

        completion = _Completion(body=body, reply=reply, serial=serial)
        if body.get("stream"):
            return await self._serve_stream(request, completion, record)
        return await self._send_whole(request, web.json_response(completion.full_response()), record)

    async def _send_whole(
        self, request: web.Request, resp: web.Response, record: RecordedRequest
    ) -> web.StreamResponse:
        # Written here rather than by aiohttp after we return, so responded_at is the real write time.
        try:
            await resp.prepare(request)
            await resp.write_eof()
        except ConnectionError:
            record.disconnected_at = time.monotonic()
        else:
            record.responded_at = time.monotonic()
        self._notify()
        return resp

    async def _serve_stream(
        self, request: web.Request, completion: _Completion, record: RecordedRequest
    ) -> web.StreamResponse:
        resp = web.StreamResponse(
            status=200,
            headers={"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"},
        )
        try:
            await resp.prepare(request)
            for i, chunk in enumerate(completion.stream_chunks()):
                if i > 0 and not await self._pause(completion.reply.chunk_delay_s):
                    return _abort(request)
                await resp.write(b"data: " + _dumps(chunk) + b"\n\n")
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
        except ConnectionError:
            record.disconnected_at = time.monotonic()
            self._notify()
            return resp
        record.responded_at = time.monotonic()
        self._notify()
        return resp

    async def _pause(self, seconds: float) -> bool:
        """Sleep for injected latency, but wake early on stop. Returns False if the server is stopping."""
        if seconds > 0 and not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await self._stopping.wait()
        return not self._stopping.is_set()


@dataclass
class _Completion:
    """Renders one text/tool-call reply in the Chat Completions wire format."""

    body: JsonDict
    reply: Reply
    serial: int
    created: int = field(default_factory=lambda: int(time.time()))

    @property
    def id(self) -> str:
        return f"chatcmpl-fake{self.serial}"

    @property
    def model(self) -> str:
        model = self.body.get("model")
        return model if isinstance(model, str) and model else "fake-model"

    def call_id(self, index: int) -> str:
        spec = self.reply.calls[index]
        # Deterministic ids let tests assert the id the tool result must refer back to.
        return spec.id if spec.id is not None else f"call_{self.serial}_{index}"

    def usage(self) -> JsonDict:
        if self.reply.usage is not None:
            prompt, completion = self.reply.usage
        else:
            messages_size = len(json.dumps(self.body.get("messages", []), ensure_ascii=False))
            output_size = (
                len(self.reply.reasoning)
                + len(self.reply.content)
                + sum(len(c.name) + len(c.arguments_json()) for c in self.reply.calls)
            )
            prompt, completion = max(1, messages_size // 4), max(1, output_size // 4)
        found: JsonDict = {"prompt_tokens": prompt, "completion_tokens": completion}
        found["total_tokens"] = prompt + completion
        if self.reply.cached_tokens:
            found["prompt_tokens_details"] = {"cached_tokens": self.reply.cached_tokens}
        return found

    def full_response(self) -> JsonDict:
        message: JsonDict = {"role": "assistant", "content": self.reply.content, "refusal": None}
        if self.reply.calls:
            message["content"] = self.reply.content or None
            message["tool_calls"] = [
                {
                    "id": self.call_id(i),
                    "type": "function",
                    "function": {"name": spec.name, "arguments": spec.arguments_json()},
                }
                for i, spec in enumerate(self.reply.calls)
            ]
        if self.reply.reasoning:
            message["reasoning_content"] = self.reply.reasoning
        return {
            "id": self.id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": self.reply.finish_reason, "logprobs": None}
            ],
            "usage": self.usage(),
        }

    def stream_chunks(self) -> list[JsonDict]:
        deltas: list[JsonDict] = []
        if self.reply.content or not self.reply.calls:
            deltas.extend({"content": piece} for piece in _split(self.reply.content, self.reply.chunks))
        for i, spec in enumerate(self.reply.calls):
            head = {
                "index": i,
                "id": self.call_id(i),
                "type": "function",
                "function": {"name": spec.name, "arguments": ""},
            }
            deltas.append({"tool_calls": [head]})
            # At least two fragments, so clients must really accumulate arguments across chunks.
            arguments = spec.arguments_json()
            for piece in _split(arguments, max(2, min(3, len(arguments)))):
                deltas.append({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        if self.reply.calls and not self.reply.content:
            deltas[0]["content"] = None
        if self.reply.reasoning:
            # DeepSeek's reasoner streams its thinking first, each delta with `content` null.
            thinking = [
                {"content": None, "reasoning_content": piece}
                for piece in _split(self.reply.reasoning, self.reply.chunks)
            ]
            deltas[:0] = thinking
        # OpenAI announces the role once, on the first delta.
        deltas[0] = {"role": "assistant", **deltas[0]}

        options = self.body.get("stream_options")
        include_usage = isinstance(options, dict) and bool(options.get("include_usage"))
        chunks = [
            self._chunk([{"index": 0, "delta": d, "finish_reason": None, "logprobs": None}]) for d in deltas
        ]
        chunks.append(
            self._chunk(
                [{"index": 0, "delta": {}, "finish_reason": self.reply.finish_reason, "logprobs": None}]
            )
        )
        if include_usage:
            for chunk in chunks:
                chunk["usage"] = None
            chunks.append(self._chunk([]) | {"usage": self.usage()})
        return chunks

    def _chunk(self, choices: list[JsonDict]) -> JsonDict:
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": choices,
        }


def _split(text: str, pieces: int) -> list[str]:
    """Split `text` into `pieces` nearly equal parts (fewer if it is too short; [""] for "")."""
    pieces = max(1, min(pieces, len(text)))
    size, extra = divmod(len(text), pieces)
    parts: list[str] = []
    start = 0
    for i in range(pieces):
        end = start + size + (1 if i < extra else 0)
        parts.append(text[start:end])
        start = end
    return parts


def _dumps(value: JsonDict) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _error_response(status: int, message: str, *, retry_after: float | None = None) -> web.Response:
    error_type, code = _ERROR_KINDS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", "")
    )
    headers: dict[str, str] = {}
    if retry_after is not None:
        headers["Retry-After"] = f"{retry_after:g}"
    body = {"error": {"message": message, "type": error_type, "param": None, "code": code or str(status)}}
    return web.json_response(body, status=status, headers=headers)


def _abort(request: web.Request) -> web.StreamResponse:
    if request.transport is not None:
        request.transport.abort()
    # aiohttp cannot write this to the aborted transport and treats that as a client disconnect.
    return web.Response(status=200)


# -- standalone process ---------------------------------------------------------------------------


def _message_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def echo_responder(*, latency_s: float = 0.0, chunks: int = 3) -> Responder:
    """A responder for benchmarks and manual runs.

    A last user message containing `TOOL:<command>` gets a `bash` tool call running the rest of that
    line; anything else (including a tool result) gets `echo: <last user text>`, which ends the turn.
    """

    def respond(body: JsonDict) -> Reply:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        last = messages[-1] if messages else {}
        if last.get("role") == "user":
            text = _message_text(last)
            marker = text.find("TOOL:")
            if marker >= 0:
                command = text[marker + len("TOOL:") :].split("\n", 1)[0].strip()
                return Reply.tool_calls([ToolCallSpec("bash", {"command": command})], latency_s=latency_s)
        last_user = next((_message_text(m) for m in reversed(messages) if m.get("role") == "user"), "")
        return Reply.text(f"echo: {last_user}", chunks=chunks, latency_s=latency_s)

    return respond


async def _serve_until_signalled(server: ScriptedModelServer) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except NotImplementedError:  # Windows: no loop signal handlers
            signal.signal(sig, lambda *_: loop.call_soon_threadsafe(stop.set))
    async with server:
        print(server.base_url, flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fakes.model_server",
        description="Serve a scripted OpenAI-compatible model on 127.0.0.1: echo, or bash on TOOL:<command>.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on; 0 picks a free one")
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds before the first byte of each reply"
    )
    parser.add_argument("--chunks", type=int, default=3, help="content deltas per streamed text reply")
    args = parser.parse_args(argv)
    server = ScriptedModelServer(
        port=args.port, responder=echo_responder(latency_s=args.latency, chunks=args.chunks)
    )
    asyncio.run(_serve_until_signalled(server))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A streaming client for OpenAI-compatible Chat Completions, speaking our history's messages.

Why not the openai SDK (through pydantic-ai's OpenAIChatModel)? Measured here, its per-request parameter
transform costs 15-30 ms per step, growing with the history, and importing it costs 0.7 s; the host's step
gap target is 10 ms. The wire format is small and stable, so we speak it directly with httpx, from and to
the records of `messages.py`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from core.agent.http_warmup import shared_ssl_context
from core.agent.messages import (
    ModelMessage,
    ModelResponse,
    Reasoning,
    ReplyText,
    ResponsePart,
    ToolCall,
    ToolDefinition,
    Usage,
)
from core.agent.model_config import ModelConfig
from core.agent.wire_format import EncodedHistory
from core.version import __version__

TIMEOUT = httpx.Timeout(connect=10.0, read=180.0, write=30.0, pool=30.0)


class EndpointError(Exception):
    """The endpoint answered with an HTTP error status."""

    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
        self.retry_after = retry_after


class MalformedStreamError(Exception):
    """The endpoint's stream was not the Chat Completions format."""


@dataclass
class _ToolCallDraft:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class _Accumulator:
    """Builds one `ModelResponse` from streamed chunks."""

    model: str
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _ToolCallDraft] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    finish_reason: str | None = None
    response_id: str | None = None

    def feed(self, chunk: dict[str, Any], on_text: Callable[[str], None]) -> None:
        self.response_id = self.response_id or chunk.get("id")
        self.model = chunk.get("model") or self.model
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.input_tokens = int(usage.get("prompt_tokens") or 0)
            self.output_tokens = int(usage.get("completion_tokens") or 0)
            self.cache_read_tokens = min(_cached_tokens(usage), self.input_tokens)
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.text.append(content)
                on_text(content)
            # DeepSeek, Qwen, llama.cpp and older vLLM say `reasoning_content`; OpenRouter and newer vLLM
            # `reasoning`. A server in between may send both with the same text: take one, never both.
            # Not `on_text`: the live reply is the answer, and the thinking is not.
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if thought and isinstance(thought, str):
                self.reasoning.append(thought)
            for call in delta.get("tool_calls") or []:
                draft = self.calls.setdefault(int(call.get("index", 0)), _ToolCallDraft())
                draft.id = call.get("id") or draft.id
                function = call.get("function") or {}
                draft.name = function.get("name") or draft.name
                if function.get("arguments"):
                    draft.arguments.append(function["arguments"])
            self.finish_reason = choice.get("finish_reason") or self.finish_reason

    def response(self) -> ModelResponse:
        parts: list[ResponsePart] = []
        if self.reasoning:
            parts.append(Reasoning("".join(self.reasoning)))
        if self.text:
            parts.append(ReplyText("".join(self.text)))
        for index in sorted(self.calls):
            draft = self.calls[index]
            parts.append(
                ToolCall(
                    tool_call_id=draft.id or f"call_{index}",
                    tool_name=draft.name,
                    arguments="".join(draft.arguments) or "{}",
                )
            )
        return ModelResponse(
            parts=tuple(parts),
            usage=Usage(self.input_tokens, self.output_tokens, self.cache_read_tokens),
            model_name=self.model,
            response_id=self.response_id,
            finish_reason=_finish_reason(self.finish_reason),
        )


def _cached_tokens(usage: dict[str, Any]) -> int:
    """Prompt-cache hits: OpenAI and most compatible servers say `prompt_tokens_details.cached_tokens`,
    DeepSeek says `prompt_cache_hit_tokens`. Priced lower, so the cost estimate needs them."""
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict) and isinstance(details.get("cached_tokens"), int):
        return max(0, int(details["cached_tokens"]))
    hit = usage.get("prompt_cache_hit_tokens")
    return max(0, hit) if isinstance(hit, int) else 0


def _finish_reason(raw: str | None) -> str | None:
    return {
        "stop": "stop",
        "length": "length",
        "tool_calls": "tool_call",
        "content_filter": "content_filter",
    }.get(raw or "")


def _error_message(body: bytes) -> str:
    try:
        data = json.loads(body)
    except ValueError:
        return body.decode("utf-8", "replace")[:300] or "no details"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:300]
    if isinstance(error, str):
        return error[:300]
    return json.dumps(data)[:300]


def _retry_after(headers: httpx.Headers) -> float | None:
    raw = headers.get("retry-after")
    try:
        return float(raw) if raw else None
    except ValueError:
        return None


class ChatCompletionsClient:
    """One connection pool per endpoint; `stream` makes one streamed request and returns the response.

    The request is built here and handed to `httpx.AsyncClient.send`: the client's own `stream()` merges
    URLs, headers, cookies and parameters for every request and sniffs the charset for text lines, about
    0.25 ms of every step on this machine (`bench/bench_speed.py`), none of it needed by a model endpoint.
    What the client does that matters stays: the proxy from the environment, time-outs and the pool."""

    def __init__(self, config: ModelConfig, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.config = config
        self._headers = [
            ("Content-Type", "application/json"),
            ("Accept", "text/event-stream"),
            ("User-Agent", f"errand/{__version__}"),
        ]
        if config.api_key:
            self._headers.append(("Authorization", f"Bearer {config.api_key}"))
        self._http = httpx.AsyncClient(timeout=TIMEOUT, transport=transport, verify=shared_ssl_context())
        self._url: httpx.URL | None = None

    def _endpoint(self) -> httpx.URL:
        # Parsed on first use, so a base URL that does not parse fails a request (with the reason), not the
        # bot's creation.
        if self._url is None:
            self._url = httpx.URL(self.config.base_url.rstrip("/") + "/chat/completions")
        return self._url

    async def aclose(self) -> None:
        await self._http.aclose()

    async def stream(
        self,
        messages: Sequence[ModelMessage],
        tools: Sequence[ToolDefinition],
        on_text: Callable[[str], None],
        encoded: EncodedHistory | None = None,
    ) -> ModelResponse:
        """`encoded`: the session's history as sent last time, so only what is new is encoded."""
        url = self._endpoint()
        encoded = encoded or EncodedHistory()
        head = json.dumps(
            {"model": self.config.model, "stream": True, "stream_options": {"include_usage": True}},
            ensure_ascii=False,
        )
        body = f'{head[:-1]}, "messages": {encoded.messages_json(messages)}'
        if tools:
            body += f', "tools": {encoded.tools_json(tools)}'
        content = (body + "}").encode()
        acc = _Accumulator(model=self.config.model)
        request = httpx.Request("POST", url, headers=self._headers, content=content)
        resp = await self._http.send(request, stream=True)
        try:
            if resp.status_code >= 400:
                raise EndpointError(
                    resp.status_code, _error_message(await resp.aread()), _retry_after(resp.headers)
                )
            async for line in sse_lines(resp.aiter_bytes()):
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    # Not `break`: reading on to the end of the body lets httpcore's own stream
                    # generators finish on the loop instead of being closed later by the GC.
                    continue
                try:
                    chunk = json.loads(data)
                except ValueError as exc:
                    raise MalformedStreamError(f"unreadable stream chunk: {data[:200]!r}") from exc
                if isinstance(chunk, dict) and "error" in chunk:
                    raise EndpointError(500, _error_message(data.encode()))
                if isinstance(chunk, dict):
                    acc.feed(chunk, on_text)
        finally:
            await resp.aclose()
        return acc.response()


async def sse_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The lines of an event stream, without their line ends (LF or CRLF). Split on bytes, so a character
    cut between two chunks is decoded whole."""
    pending = b""
    async for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.removesuffix(b"\r").decode("utf-8", "replace")
    if pending:
        yield pending.removesuffix(b"\r").decode("utf-8", "replace")

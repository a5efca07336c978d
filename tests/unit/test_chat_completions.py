"""Mapping history to the Chat Completions wire format, and building responses from chunks."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
import pytest

from core.agent.chat_completions import ChatCompletionsClient, EndpointError, sse_lines
from core.agent.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ReplyText,
    ToolCall,
    ToolDefinition,
    ToolReturn,
    UserText,
)
from core.agent.model_config import ModelConfig
from core.agent.wire_format import to_wire_messages, to_wire_tools


def test_history_maps_to_wire_messages_with_the_latest_instructions_first() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=(UserText("list files"),), instructions="old instructions"),
        ModelResponse(parts=(ReplyText("Looking."), ToolCall("c1", "bash", '{"command":"ls"}'))),
        ModelRequest(parts=(ToolReturn("c1", "bash", "a.txt"),), instructions="new instructions"),
        ModelResponse(parts=()),  # an empty response (cancelled before any text) is not sent
        ModelRequest(parts=(UserText("thanks"),)),
    ]
    wire = to_wire_messages(history)
    assert wire[0] == {"role": "system", "content": "new instructions"}
    assert wire[1] == {"role": "user", "content": "list files"}
    assert wire[2]["role"] == "assistant" and wire[2]["content"] == "Looking."
    assert wire[2]["tool_calls"] == [
        {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": '{"command":"ls"}'}}
    ]
    assert wire[3] == {"role": "tool", "tool_call_id": "c1", "content": "a.txt"}
    assert wire[4] == {"role": "user", "content": "thanks"}
    assert len(wire) == 5


def test_tools_map_to_function_definitions() -> None:
    schema = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    tool = ToolDefinition(name="bash", description="Run a command", parameters=schema)
    assert to_wire_tools([tool]) == [
        {
            "type": "function",
            "function": {"name": "bash", "description": "Run a command", "parameters": schema},
        }
    ]


def _sse(*chunks: dict[str, object]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


async def test_a_stream_builds_text_tool_calls_and_usage() -> None:
    body = _sse(
        {"id": "r1", "model": "m", "choices": [{"delta": {"role": "assistant", "content": "Hel"}}]},
        {"choices": [{"delta": {"content": "lo"}}]},
        {
            "choices": [
                {
                    "delta": {
                        "tool_calls": [
                            {"index": 0, "id": "c9", "function": {"name": "grep", "arguments": '{"pat'}}
                        ]
                    }
                }
            ]
        },
        {
            "choices": [
                {
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": 'tern": "x"}'}}]},
                    "finish_reason": "tool_calls",
                }
            ]
        },
        {"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7}},
    )
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body))
    client = ChatCompletionsClient(ModelConfig("http://model.test/v1", "m", "key"), transport=transport)
    deltas: list[str] = []
    response = await client.stream([ModelRequest(parts=(UserText("hi"),))], [], deltas.append)
    await client.aclose()
    assert deltas == ["Hel", "lo"]
    assert response.text == "Hello"
    call = response.tool_calls[0]
    assert (call.tool_name, call.tool_call_id, call.arguments_object()) == ("grep", "c9", {"pattern": "x"})
    assert (response.usage.input_tokens, response.usage.output_tokens) == (11, 7)


async def test_an_error_status_carries_the_servers_message_and_retry_after() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert request.headers["Authorization"] == "Bearer key"
        return httpx.Response(429, json={"error": {"message": "slow down"}}, headers={"Retry-After": "3"})

    client = ChatCompletionsClient(
        ModelConfig("http://model.test/v1", "m", "key"), transport=httpx.MockTransport(handler)
    )
    with pytest.raises(EndpointError) as raised:
        await client.stream([ModelRequest(parts=(UserText("hi"),))], [], lambda _t: None)
    await client.aclose()
    assert (raised.value.status, raised.value.message, raised.value.retry_after) == (429, "slow down", 3.0)


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


async def test_stream_lines_end_at_lf_or_crlf_and_a_character_split_between_chunks_stays_whole() -> None:
    # "你" is three bytes in UTF-8; the network may cut a chunk anywhere, even inside it.
    encoded = 'data: {"a": "你"}\r\n\r\ndata: [DONE]\n'.encode()
    cut = encoded.index("你".encode()) + 1
    lines = [line async for line in sse_lines(_chunks(encoded[:cut], encoded[cut:]))]
    assert lines == ['data: {"a": "你"}', "", "data: [DONE]"]


async def test_a_last_line_without_a_line_end_is_still_read() -> None:
    assert [line async for line in sse_lines(_chunks(b"data: x\n", b"data: y"))] == ["data: x", "data: y"]


async def test_a_request_says_who_sends_it_and_carries_the_key() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=_sse({"choices": [{"delta": {"content": "ok"}}]}))

    client = ChatCompletionsClient(
        ModelConfig("http://model.test/v1/", "m", "key"), transport=httpx.MockTransport(handler)
    )
    response = await client.stream([ModelRequest(parts=(UserText("hi"),))], [], lambda _t: None)
    await client.aclose()
    assert response.text == "ok"
    (request,) = seen
    assert str(request.url) == "http://model.test/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer key"
    assert request.headers["User-Agent"].startswith("errand/")
    assert json.loads(request.content)["messages"] == [{"role": "user", "content": "hi"}]

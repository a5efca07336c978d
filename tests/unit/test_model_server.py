"""The scripted model server speaks Chat Completions well enough for the real openai SDK."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest
from openai.types.chat import ChatCompletionMessageFunctionToolCall, ChatCompletionMessageParam

from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec, echo_responder

REPO_ROOT = Path(__file__).resolve().parents[2]
USER_HI: list[ChatCompletionMessageParam] = [{"role": "user", "content": "hi"}]


@pytest.fixture
async def server() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as s:
        yield s


@pytest.fixture
async def client(server: ScriptedModelServer) -> AsyncIterator[openai.AsyncOpenAI]:
    c = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    yield c
    await c.close()


# -- openai SDK ------------------------------------------------------------------------------------


async def test_openai_streamed_text_arrives_as_ordered_deltas_with_usage(server, client):
    server.push(Reply.text("The quick brown fox", chunks=4, usage=(11, 7)))

    stream = await client.chat.completions.create(
        model="some-model",
        messages=USER_HI,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]

    deltas = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(deltas) == 4
    assert "".join(deltas) == "The quick brown fox"
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == [
        "stop"
    ]
    assert {c.model for c in chunks} == {"some-model"}
    assert len({c.id for c in chunks}) == 1
    usage_chunks = [c for c in chunks if c.usage is not None]
    assert len(usage_chunks) == 1
    assert usage_chunks[0] is chunks[-1]
    assert chunks[-1].choices == []
    assert (usage_chunks[0].usage.prompt_tokens, usage_chunks[0].usage.completion_tokens) == (11, 7)
    assert usage_chunks[0].usage.total_tokens == 18


async def test_openai_stream_without_include_usage_sends_no_usage(server, client):
    server.push(Reply.text("abc"))

    stream = await client.chat.completions.create(model="m", messages=USER_HI, stream=True)
    chunks = [chunk async for chunk in stream]

    assert all(c.usage is None for c in chunks)
    assert all(c.choices for c in chunks)


async def test_openai_streamed_parallel_tool_calls_reassemble(server, client):
    server.push(
        Reply.tool_calls(
            [
                ToolCallSpec("bash", {"command": "ls -la"}, id="call_a"),
                ToolCallSpec("read_file", {"path": "notes.md", "limit": 10}),
            ],
            usage=(20, 5),
        )
    )

    stream = await client.chat.completions.create(
        model="m", messages=USER_HI, stream=True, stream_options={"include_usage": True}
    )
    names: dict[int, str] = {}
    ids: dict[int, str] = {}
    fragments: dict[int, list[str]] = {}
    finish_reasons = []
    usage = None
    async for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            if choice.finish_reason:
                finish_reasons.append(choice.finish_reason)
            for call in choice.delta.tool_calls or []:
                if call.id:
                    ids[call.index] = call.id
                if call.function and call.function.name:
                    names[call.index] = call.function.name
                if call.function and call.function.arguments:
                    fragments.setdefault(call.index, []).append(call.function.arguments)

    assert names == {0: "bash", 1: "read_file"}
    assert ids[0] == "call_a"
    assert ids[1].startswith("call_")
    assert all(len(parts) >= 2 for parts in fragments.values())
    assert json.loads("".join(fragments[0])) == {"command": "ls -la"}
    assert json.loads("".join(fragments[1])) == {"path": "notes.md", "limit": 10}
    assert finish_reasons == ["tool_calls"]
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens) == (20, 5)


async def test_openai_non_streaming_text_and_tool_calls(server, client):
    server.push_many(
        [
            Reply.text("plain answer", usage=(3, 2)),
            Reply.tool_calls([ToolCallSpec("bash", '{"command": "pwd"}')], text="Let me look."),
        ]
    )

    text = await client.chat.completions.create(model="m", messages=USER_HI)
    tools = await client.chat.completions.create(model="m", messages=USER_HI)

    assert text.object == "chat.completion"
    assert text.choices[0].message.content == "plain answer"
    assert text.choices[0].finish_reason == "stop"
    assert text.usage is not None
    assert (text.usage.prompt_tokens, text.usage.completion_tokens, text.usage.total_tokens) == (3, 2, 5)

    message = tools.choices[0].message
    assert tools.choices[0].finish_reason == "tool_calls"
    assert message.content == "Let me look."
    assert message.tool_calls is not None
    call = message.tool_calls[0]
    assert call.type == "function"
    assert call.function.name == "bash"
    assert json.loads(call.function.arguments) == {"command": "pwd"}
    assert tools.usage is not None
    assert tools.usage.prompt_tokens > 0
    assert tools.usage.completion_tokens > 0


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
async def test_openai_error_status_reaches_client(server, client, status, error_class, stream):
    server.push(Reply.error(status, message="scripted failure", retry_after=2))

    with pytest.raises(error_class) as caught:
        await client.chat.completions.create(model="m", messages=USER_HI, stream=stream)

    assert caught.value.status_code == status
    assert caught.value.response.headers["retry-after"] == "2"
    body = caught.value.response.json()
    assert body["error"]["message"] == "scripted failure"
    assert set(body["error"]) >= {"message", "type", "code"}
    assert server.last_request.responded_at is not None


async def test_openai_disconnect_is_a_connection_error_and_server_recovers(server, client):
    server.push(Reply.disconnect())

    with pytest.raises(openai.APIConnectionError):
        await client.chat.completions.create(model="m", messages=USER_HI)

    answer = await client.chat.completions.create(model="m", messages=USER_HI)
    assert answer.choices[0].message.content == "ok"
    assert server.requests[0].responded_at is None


async def test_hang_is_cancelled_by_client_then_server_answers_and_stops_cleanly():
    server = ScriptedModelServer()
    await server.start()
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    try:
        server.push(Reply.hang())
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(
                client.chat.completions.create(model="m", messages=USER_HI, stream=True), timeout=0.2
            )
        # The server sees the client go away, not just the client giving up.
        await server.wait_until(lambda: server.requests[0].disconnected_at is not None, what="disconnect")
        assert server.requests[0].responded_at is None

        answer = await client.chat.completions.create(model="m", messages=USER_HI)
        assert answer.choices[0].message.content == "ok"
    finally:
        await client.close()
    await asyncio.wait_for(server.stop(), timeout=2.0)
    with pytest.raises(RuntimeError):
        _ = server.base_url


async def test_stop_does_not_wait_for_a_hanging_request():
    server = ScriptedModelServer()
    await server.start()
    client = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    try:
        server.push_many([Reply.hang(), Reply.text("slow", latency_s=30.0)])
        hanging = asyncio.create_task(client.chat.completions.create(model="m", messages=USER_HI))
        slow = asyncio.create_task(client.chat.completions.create(model="m", messages=USER_HI))
        await server.wait_for_requests(2)

        await asyncio.wait_for(server.stop(), timeout=2.0)

        for task in (hanging, slow):
            with pytest.raises(openai.APIConnectionError):
                await task
    finally:
        await client.close()


async def test_requests_are_recorded_in_order_with_bodies(server, client):
    for word in ("one", "two", "three"):
        await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": word}], temperature=0.5
        )

    recorded = await server.wait_for_requests(3)

    assert [server.messages_of(i)[-1]["content"] for i in range(3)] == ["one", "two", "three"]
    assert server.last_request is recorded[-1]
    assert server.last_request.body["temperature"] == 0.5
    assert server.last_request.headers["authorization"] == "Bearer test"
    for request in recorded:
        assert request.responded_at is not None
        assert request.responded_at >= request.received_at
    assert recorded[0].received_at <= recorded[1].received_at <= recorded[2].received_at

    server.push(Reply.text("unused"))
    server.reset()
    assert server.requests == []
    assert server.pending_replies == 0
    with pytest.raises(IndexError):
        _ = server.last_request


async def test_concurrent_requests_take_scripted_replies_in_arrival_order(server, client):
    server.push_many([Reply.text(f"reply {i}") for i in range(5)])

    answers = await asyncio.gather(
        *(
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": str(i)}])
            for i in range(5)
        )
    )

    by_request = {
        request.messages[-1]["content"]: request.reply.content for request in server.requests if request.reply
    }
    for i, answer in enumerate(answers):
        assert answer.choices[0].message.content == by_request[str(i)]
    assert sorted(by_request.values()) == [f"reply {i}" for i in range(5)]


async def test_wait_for_requests_times_out_with_a_clear_message(server):
    with pytest.raises(TimeoutError, match=r"at least 1 chat completion request.*got 0"):
        await server.wait_for_requests(1, timeout=0.05)


async def test_unscripted_requests_use_responder_then_default_text():
    async with ScriptedModelServer(default_text="fine") as server:
        c = openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
        try:
            first = await c.chat.completions.create(model="m", messages=USER_HI)
            assert first.choices[0].message.content == "fine"

            def shout(body):
                text = body["messages"][-1]["content"]
                return Reply.text(text.upper()) if text != "pass" else None

            server.responder = shout
            server.push(Reply.text("scripted first"))
            scripted = await c.chat.completions.create(model="m", messages=USER_HI)
            shouted = await c.chat.completions.create(model="m", messages=USER_HI)
            passed = await c.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "pass"}]
            )
        finally:
            await c.close()

    assert scripted.choices[0].message.content == "scripted first"
    assert shouted.choices[0].message.content == "HI"
    assert passed.choices[0].message.content == "fine"


async def test_broken_responder_becomes_a_500_naming_the_error(server, client):
    def broken(body):
        raise KeyError("no such thing")

    server.responder = broken
    with pytest.raises(openai.InternalServerError, match="no such thing"):
        await client.chat.completions.create(model="m", messages=USER_HI)


async def test_models_endpoint_lists_models(client):
    page = await client.models.list()
    assert [m.id for m in page.data] == ["fake-model"]


def test_reply_constructors_reject_nonsense():
    with pytest.raises(ValueError):
        Reply.text("x", chunks=0)
    with pytest.raises(ValueError):
        Reply.tool_calls([])
    with pytest.raises(ValueError):
        Reply.error(200)


# -- standalone process -----------------------------------------------------------------------------


def test_echo_responder_echoes_or_calls_bash():
    respond = echo_responder(latency_s=0.25)

    tool = respond({"messages": [{"role": "user", "content": "please TOOL:ls -la /tmp\nthanks"}]})
    echo = respond(
        {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "TOOL:ls"}]},
                {"role": "assistant", "content": None, "tool_calls": []},
                {"role": "tool", "tool_call_id": "c", "content": "a b"},
            ]
        }
    )
    plain = respond({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hello"}]})

    assert tool is not None
    assert tool.kind == "tool_calls"
    assert tool.calls == (ToolCallSpec("bash", {"command": "ls -la /tmp"}),)
    assert tool.latency_s == 0.25
    assert echo is not None
    assert (echo.kind, echo.content) == ("text", "echo: TOOL:ls")
    assert plain is not None
    assert plain.content == "echo: hello"


@pytest.mark.slow
async def test_standalone_process_serves_and_exits_on_sigterm():
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.fakes.model_server",
        "--port",
        "0",
        "--latency",
        "0",
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=20.0)
        base_url = line.decode().strip()
        assert base_url.startswith("http://127.0.0.1:")
        assert base_url.endswith("/v1")

        async with openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0) as client:
            echo = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hello there"}]
            )
            tool = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "TOOL:echo hi"}]
            )
        assert echo.choices[0].message.content == "echo: hello there"
        calls = tool.choices[0].message.tool_calls
        assert calls is not None
        assert isinstance(calls[0], ChatCompletionMessageFunctionToolCall)
        assert calls[0].function.name == "bash"
        assert json.loads(calls[0].function.arguments) == {"command": "echo hi"}

        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=10.0) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

"""A reasoning model's thinking (`reasoning_content`, or OpenRouter's `reasoning`): read from the stream apart
from the answer, kept in the history, never sent back to the server, and shown as one folded activity step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from core.activity_steps import MAX_REASONING, ActivityLog, ActivityStep
from core.agent import events as ev
from core.agent import history_format
from core.agent.chat_completions import ChatCompletionsClient
from core.agent.history import HistoryStore
from core.agent.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ReplyText,
    ToolCall,
    ToolReturn,
    Usage,
    UserText,
)
from core.agent.model_config import ModelConfig
from core.agent.wire_format import EncodedHistory, to_wire_messages
from core.export import blocks

THOUGHT = "The user wants the file count. ls, then count."


def _sse(*deltas: dict[str, Any]) -> bytes:
    chunks: list[dict[str, Any]] = [{"id": "r1", "model": "m", "choices": [{"delta": d}]} for d in deltas]
    chunks.append({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 40}})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


async def _stream(body: bytes) -> tuple[ModelResponse, list[str]]:
    """The response a stream builds, and what the live reply was shown meanwhile."""
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=body))
    client = ChatCompletionsClient(ModelConfig("http://model.test/v1", "m", "key"), transport=transport)
    shown: list[str] = []
    try:
        response = await client.stream([ModelRequest(parts=(UserText("how many files?"),))], [], shown.append)
    finally:
        await client.aclose()
    return response, shown


# ---- the stream ------------------------------------------------------------------------------------------


async def test_reasoning_content_is_kept_before_the_answer_and_never_shown_as_the_reply() -> None:
    response, shown = await _stream(
        _sse(
            {"role": "assistant", "content": None, "reasoning_content": "The user wants "},
            {"content": None, "reasoning_content": "the file count. ls, then count."},
            {"content": "There are ", "reasoning_content": None},
            {"content": "3 files."},
        )
    )
    assert shown == ["There are ", "3 files."]  # the live reply is the answer only
    assert response.parts == (
        Reasoning("The user wants the file count. ls, then count."),
        ReplyText("There are 3 files."),
    )
    assert response.text == "There are 3 files."
    assert response.reasoning == "The user wants the file count. ls, then count."


async def test_openrouters_reasoning_field_is_read_as_well() -> None:
    response, shown = await _stream(
        _sse(
            {"role": "assistant", "content": "", "reasoning": "Think "},
            {"content": "", "reasoning": "twice.", "reasoning_details": [{"type": "reasoning.text"}]},
            {"content": "Done."},
        )
    )
    assert response.reasoning == "Think twice."
    assert response.text == "Done." and shown == ["Done."]


async def test_a_server_that_sends_both_names_has_its_thinking_kept_once() -> None:
    response, _ = await _stream(
        _sse({"reasoning_content": "Once.", "reasoning": "Once."}, {"content": "ok"}),
    )
    assert response.reasoning == "Once."


async def test_reasoning_comes_first_beside_text_and_tool_calls() -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "bash", "arguments": '{"command": "ls"}'}}
    response, shown = await _stream(
        _sse(
            {"reasoning_content": THOUGHT},
            {"content": "Looking."},
            {"tool_calls": [call]},
        )
    )
    assert response.parts == (
        Reasoning(THOUGHT),
        ReplyText("Looking."),
        ToolCall("c1", "bash", '{"command": "ls"}'),
    )
    assert response.text == "Looking." and [c.tool_name for c in response.tool_calls] == ["bash"]
    assert shown == ["Looking."]


async def test_without_reasoning_a_response_is_what_it_always_was() -> None:
    call = {"index": 0, "id": "c1", "function": {"name": "bash", "arguments": "{}"}}
    response, _ = await _stream(
        _sse({"content": "Hi", "reasoning_content": None}, {"reasoning": None}, {"tool_calls": [call]})
    )
    assert response.parts == (ReplyText("Hi"), ToolCall("c1", "bash", "{}"))
    assert response.reasoning is None


# ---- the history -----------------------------------------------------------------------------------------


def _reasoned() -> ModelResponse:
    return ModelResponse(
        parts=(Reasoning(THOUGHT), ReplyText("Counting."), ToolCall("c1", "bash", '{"command": "ls"}')),
        usage=Usage(10, 40),
        model_name="deepseek-reasoner",
    )


async def test_reasoning_is_written_to_the_history_and_read_back_after_a_restart(tmp_path: Path) -> None:
    messages: list[ModelMessage] = [ModelRequest(parts=(UserText("how many files?"),)), _reasoned()]
    history = HistoryStore(tmp_path)
    try:
        history.append_now("s1", messages)
    finally:
        history.close()
    again = HistoryStore(tmp_path)
    try:
        loaded = await again.load("s1")
    finally:
        again.close()
    assert loaded == messages
    response = loaded[1]
    assert isinstance(response, ModelResponse) and response.reasoning == THOUGHT


def test_reasoning_is_a_version_2_part_of_its_own_and_lines_without_it_read_as_before() -> None:
    line = json.loads(history_format.encode(_reasoned()))
    assert line["v"] == 2
    assert line["parts"][0] == {"type": "reasoning", "text": THOUGHT}
    plain = b'{"v":2,"kind":"response","parts":[{"type":"text","text":"Hi"}],"usage":{"in":1,"out":2}}\n'
    (read,) = history_format.decode(plain)
    assert isinstance(read, ModelResponse)
    assert read.parts == (ReplyText("Hi"),) and read.reasoning is None


# ---- what goes back to the server ------------------------------------------------------------------------


def test_a_reasoned_response_goes_back_as_an_assistant_message_without_its_reasoning() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=(UserText("how many files?"),), instructions="Be brief."),
        _reasoned(),
        ModelRequest(parts=(ToolReturn("c1", "bash", "a b c"),)),
    ]
    wire = to_wire_messages(history)
    assistant = wire[2]
    # DeepSeek answers 400 to a history that carries reasoning_content back.
    assert set(assistant) == {"role", "content", "tool_calls"}
    assert assistant["content"] == "Counting."
    assert THOUGHT not in json.dumps(wire)
    assert THOUGHT not in EncodedHistory().messages_json(history)


def test_a_response_that_only_reasoned_sends_nothing_back() -> None:
    history: list[ModelMessage] = [
        ModelRequest(parts=(UserText("hi"),)),
        ModelResponse(parts=(Reasoning("Nothing to say."),)),
    ]
    assert to_wire_messages(history) == [{"role": "user", "content": "hi"}]


async def test_the_next_request_after_a_reasoned_reply_does_not_carry_the_reasoning() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        if len(bodies) == 1:
            return httpx.Response(200, content=_sse({"reasoning_content": THOUGHT}, {"content": "Hello."}))
        return httpx.Response(200, content=_sse({"content": "ok"}))

    client = ChatCompletionsClient(
        ModelConfig("http://model.test/v1", "m", "key"), transport=httpx.MockTransport(handler)
    )
    encoded = EncodedHistory()
    history: list[ModelMessage] = [ModelRequest(parts=(UserText("hi"),))]
    try:
        history.append(await client.stream(history, [], lambda _t: None, encoded))
        history.append(ModelRequest(parts=(UserText("and now?"),)))
        await client.stream(history, [], lambda _t: None, encoded)
    finally:
        await client.aclose()
    sent = bodies[1]["messages"]
    assert sent[1] == {"role": "assistant", "content": "Hello."}
    assert THOUGHT not in json.dumps(sent)


# ---- the activity step -----------------------------------------------------------------------------------


def _answer(reasoning: str, text: str = "3 files.") -> ev.AssistantMessage:
    return ev.AssistantMessage(
        "s", "u", 1, text, "deepseek-reasoner", ev.Usage(10, 40), 2.0, 0, reasoning=reasoning
    )


def test_a_response_that_reasoned_gets_a_reasoning_step_before_its_model_step() -> None:
    log = ActivityLog()
    assert log.feed(_answer(f"\n{THOUGHT}\n"))
    thought, model = log.steps
    assert (thought.kind, thought.detail, thought.chars, thought.ok) == (
        "reasoning",
        THOUGHT,
        len(THOUGHT),
        True,
    )
    assert (model.kind, model.title, model.detail) == ("model", "deepseek-reasoner", "3 files.")


def test_a_long_reasoning_keeps_its_start_and_its_whole_length() -> None:
    log = ActivityLog()
    log.feed(_answer("x" * (MAX_REASONING + 1234)))
    thought = log.steps[0]
    assert thought.detail == "x" * MAX_REASONING
    assert thought.chars == MAX_REASONING + 1234


def test_a_response_without_reasoning_makes_only_its_model_step_stored_as_before() -> None:
    log = ActivityLog()
    log.feed(_answer(""))
    log.feed(_answer("  \n"))
    assert [s.kind for s in log.steps] == ["model", "model"]
    assert all("chars" not in row for row in log.to_json())


def test_a_stored_reasoning_step_reads_back_as_it_was() -> None:
    log = ActivityLog()
    log.feed(_answer("y" * (MAX_REASONING + 5)))
    stored = json.loads(json.dumps(log.to_json()))
    assert stored[0]["kind"] == "reasoning" and stored[0]["chars"] == MAX_REASONING + 5
    assert tuple(ActivityStep.from_json(row) for row in stored) == log.steps


def test_an_export_names_the_reasoning_step_and_fences_its_text() -> None:
    step = ActivityStep(kind="reasoning", title="", detail=THOUGHT, chars=len(THOUGHT))
    zh = "\n".join(blocks.steps_section([step], 0, "zh", "###"))
    en = "\n".join(blocks.steps_section([step], 0, "en", "###"))
    assert "1. 思考" in zh and "1. reasoning" in en
    assert THOUGHT in zh and THOUGHT in en

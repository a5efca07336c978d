"""A turn's history as the JSON its requests send, encoded once per message (core.agent.wire_format)."""

from __future__ import annotations

import json

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
from core.agent.wire_format import EncodedHistory, to_wire_messages, to_wire_tools


def _step(n: int) -> list[ModelMessage]:
    return [
        ModelResponse(parts=(ToolCall(f"c{n}", "bash", json.dumps({"command": f"echo {n}"})),)),
        ModelRequest(parts=(ToolReturn(f"c{n}", "bash", f"输出 {n}\n"),), instructions=f"instructions {n}"),
    ]


def test_what_is_sent_at_every_step_is_the_whole_history_as_it_stands_then() -> None:
    encoded = EncodedHistory()
    history: list[ModelMessage] = [ModelRequest(parts=(UserText("go"),), instructions="instructions 0")]
    for n in range(5):
        assert json.loads(encoded.messages_json(history)) == to_wire_messages(history)
        history += _step(n)
    assert json.loads(encoded.messages_json(history)) == to_wire_messages(history)
    # The latest instructions lead, once.
    assert json.loads(encoded.messages_json(history))[0] == {"role": "system", "content": "instructions 4"}


def test_a_history_that_changed_under_it_is_sent_as_it_now_is() -> None:
    encoded = EncodedHistory()
    first: list[ModelMessage] = [ModelRequest(parts=(UserText("one"),)), *_step(1)]
    encoded.messages_json(first)
    # The same text in new objects (a history reloaded from disk), and one message replaced mid-way.
    second: list[ModelMessage] = [
        ModelRequest(parts=(UserText("one"),)),
        ModelResponse(parts=(ReplyText("said instead"),)),
        first[2],
    ]
    assert json.loads(encoded.messages_json(second)) == to_wire_messages(second)
    assert json.loads(encoded.messages_json(second[:1])) == to_wire_messages(second[:1])


def test_a_response_with_nothing_in_it_sends_nothing_and_commas_stay_right() -> None:
    encoded = EncodedHistory()
    history: list[ModelMessage] = [
        ModelRequest(parts=(UserText("a"),)),
        ModelResponse(parts=()),
        ModelRequest(parts=(UserText("b"),)),
    ]
    assert json.loads(encoded.messages_json(history)) == [
        {"role": "user", "content": "a"},
        {"role": "user", "content": "b"},
    ]
    assert encoded.messages_json([]) == "[]"


def test_the_tool_list_is_sent_as_mapped_and_a_new_list_replaces_the_kept_one() -> None:
    encoded = EncodedHistory()
    tools = [ToolDefinition(name="bash", description="Run", parameters={"type": "object"})]
    assert json.loads(encoded.tools_json(tools)) == to_wire_tools(tools)
    other = [ToolDefinition(name="grep", description="Find", parameters={"type": "object"})]
    assert json.loads(encoded.tools_json(other)) == to_wire_tools(other)

"""Our history's messages as the Chat Completions wire format (`messages` and `tools` of a request).

Every step sends the whole history again, so `EncodedHistory` keeps a turn's messages as the JSON they
were sent as: a step encodes only what it added. Encoding the whole history at every step grew with it:
about 0.3 ms per step after 100 tool calls with short outputs, milliseconds with long ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from core.agent.messages import ModelMessage, ModelRequest, ToolDefinition, UserText


def to_wire_messages(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """History -> Chat Completions `messages`, led by the latest instructions as system."""
    instructions = latest_instructions(messages)
    out: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []
    for message in messages:
        out.extend(wire_messages(message))
    return out


def latest_instructions(messages: Sequence[ModelMessage]) -> str | None:
    return next(
        (m.instructions for m in reversed(messages) if isinstance(m, ModelRequest) and m.instructions), None
    )


def wire_messages(message: ModelMessage) -> list[dict[str, Any]]:
    """One history message as the wire messages it stands for: a request's parts are one each (user text,
    tool results); a response is one assistant message, or none when it said and called nothing."""
    if isinstance(message, ModelRequest):
        return [
            {"role": "user", "content": part.text}
            if isinstance(part, UserText)
            else {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.content}
            for part in message.parts
        ]
    text = message.text
    calls = message.tool_calls
    if not text and not calls:
        return []
    wire: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        wire["tool_calls"] = [
            {
                "id": c.tool_call_id,
                "type": "function",
                "function": {"name": c.tool_name, "arguments": _wire_arguments(c.arguments)},
            }
            for c in calls
        ]
    return [wire]


@lru_cache(maxsize=4096)  # every step sends the whole history again: check each call's arguments once
def _wire_arguments(arguments: str) -> str:
    """A call's arguments as sent back with the history. Arguments that are not a JSON object (the model
    wrote them broken, and was told so) go wrapped in one: some servers refuse a history that holds them."""
    try:
        if isinstance(json.loads(arguments), dict):
            return arguments
    except ValueError:
        pass
    return json.dumps({"INVALID_JSON": arguments}, ensure_ascii=False)


def to_wire_tools(tools: Sequence[ToolDefinition]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


class EncodedHistory:
    """A history's wire JSON, kept between the requests of a turn. History messages are immutable and the
    history only grows within a turn, so a message that is the same object as last time is sent as the
    same text; anything from the first message that differs on is encoded again."""

    def __init__(self) -> None:
        self._messages: list[ModelMessage] = []
        self._encoded: list[str] = []
        self._joined = ""  # the non-empty encodings, comma-joined: one copy per step, not a walk
        self._tools: tuple[Sequence[ToolDefinition], str] | None = None

    def messages_json(self, messages: Sequence[ModelMessage]) -> str:
        """The JSON text of `to_wire_messages(messages)`."""
        same = 0
        for kept, message in zip(self._messages, messages, strict=False):
            if kept is not message:
                break
            same += 1
        if same < len(self._messages):
            del self._messages[same:], self._encoded[same:]
            self._joined = ",".join(e for e in self._encoded if e)
        for message in messages[same:]:
            encoded = ",".join(_dumps(wire) for wire in wire_messages(message))
            self._messages.append(message)
            self._encoded.append(encoded)
            if encoded:
                self._joined = f"{self._joined},{encoded}" if self._joined else encoded
        instructions = latest_instructions(messages)
        if not instructions:
            return f"[{self._joined}]"
        system = _dumps({"role": "system", "content": instructions})
        return f"[{system},{self._joined}]" if self._joined else f"[{system}]"

    def tools_json(self, tools: Sequence[ToolDefinition]) -> str:
        """The JSON text of `to_wire_tools(tools)`; a session's tool list is built once, so it is kept."""
        if self._tools is None or self._tools[0] is not tools:
            self._tools = (tools, _dumps(to_wire_tools(tools)))
        return self._tools[1]

    def clear(self) -> None:
        """Let go of the kept text (a turn ended: an idle session should not hold its history twice)."""
        self._messages.clear()
        self._encoded.clear()
        self._joined = ""
        self._tools = None

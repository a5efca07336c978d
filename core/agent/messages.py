"""The messages of a session's history: what was asked of the model and what it answered.

A request carries the person's words and the results of the tools the model called; a response carries the
model's text, the tools it calls and, from a model that shows it, its reasoning. They are plain frozen
records, cheap to build and to import: the runtime owns the turn loop and the wire format
(`chat_completions.py`), and their form on disk is `history_format.py`'s
(docs/architecture.md#session-history).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class UserText:
    """Words for the model in the person's turn: what they said, a steer, or a note the host added."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolReturn:
    """A tool's output, answering the call with the same id."""

    tool_call_id: str
    tool_name: str
    content: str


RequestPart = UserText | ToolReturn


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request to the model. `instructions` is the system prompt it was sent with (the latest one
    leads the next request); `input_ids` are the inputs whose words it carries (docs/recovery.md)."""

    parts: tuple[RequestPart, ...]
    instructions: str | None = None
    input_ids: tuple[str, ...] = ()

    @property
    def user_text(self) -> str:
        return "\n".join(p.text for p in self.parts if isinstance(p, UserText))


@dataclass(frozen=True, slots=True)
class Reasoning:
    """What the model thought before it answered (`reasoning_content`), as the server streamed it. Kept in
    the history and shown in the activity steps, never sent back: it is not the answer, and some servers
    refuse a history that carries it (docs/architecture.md#session-history)."""

    text: str


@dataclass(frozen=True, slots=True)
class ReplyText:
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for. `arguments` is the JSON text as the model wrote it: it may be invalid,
    and the session answers that with an error the model can act on."""

    tool_call_id: str
    tool_name: str
    arguments: str = "{}"

    def arguments_object(self) -> dict[str, Any]:
        """The arguments as a JSON object; ValueError when they are not one."""
        value = json.loads(self.arguments or "{}")
        if not isinstance(value, dict):
            raise ValueError("the arguments are not a JSON object")
        return value


ResponsePart = Reasoning | ReplyText | ToolCall


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ModelResponse:
    parts: tuple[ResponsePart, ...]
    usage: Usage = field(default_factory=Usage)
    model_name: str | None = None
    response_id: str | None = None
    finish_reason: str | None = None

    @property
    def text(self) -> str | None:
        """The answer's text; None when it has none (only tool calls)."""
        texts = [p.text for p in self.parts if isinstance(p, ReplyText)]
        return "".join(texts) if texts else None

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [p for p in self.parts if isinstance(p, ToolCall)]

    @property
    def reasoning(self) -> str | None:
        """The model's reasoning before it answered; None when it showed none."""
        texts = [p.text for p in self.parts if isinstance(p, Reasoning)]
        return "".join(texts) if texts else None


ModelMessage = ModelRequest | ModelResponse


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as the model is told about it: its name, what it does, and its arguments' JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]

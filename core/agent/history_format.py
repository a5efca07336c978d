"""How a history message is written as one JSON line, and read back (docs/architecture.md#session-history).

Version 2 is ours: one object per line, `{"v": 2, "kind": "request" | "response", ...}` with short,
stable field names. Histories written before it hold one JSON array per line in pydantic-ai's message
format (`"part_kind"` on each part); they are read as they are and never rewritten, so a history may mix
both forms, old lines first.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from core.agent.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    Reasoning,
    ReplyText,
    RequestPart,
    ResponsePart,
    ToolCall,
    ToolReturn,
    Usage,
    UserText,
)

log = logging.getLogger(__name__)

VERSION = 2


class UnreadableLine(ValueError):
    """A history line that is neither version 2 nor the earlier format (cut short by a crash, or edited)."""


def encode(message: ModelMessage) -> bytes:
    """The message as one line, newline included."""
    return json.dumps(_to_json(message), ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> list[ModelMessage]:
    """The messages one line holds: one for version 2, one or more for the earlier format."""
    try:
        data = json.loads(line)
        if isinstance(data, dict):
            if data.get("v") != VERSION:
                raise UnreadableLine(f"unknown history version {data.get('v')!r}")
            return [_from_json(data)]
        if isinstance(data, list):
            return [_from_pydantic_ai(item) for item in data]
    except UnreadableLine:
        raise
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UnreadableLine(str(exc)) from exc
    raise UnreadableLine("a history line must be a JSON object or array")


def _to_json(message: ModelMessage) -> dict[str, Any]:
    if isinstance(message, ModelRequest):
        request: dict[str, Any] = {
            "v": VERSION,
            "kind": "request",
            "parts": [_request_part(p) for p in message.parts],
        }
        if message.instructions is not None:
            request["instructions"] = message.instructions
        if message.input_ids:
            request["input_ids"] = list(message.input_ids)
        return request
    usage = message.usage
    return {
        "v": VERSION,
        "kind": "response",
        "parts": [_response_part(p) for p in message.parts],
        "usage": {
            "in": usage.input_tokens,
            "out": usage.output_tokens,
            "cache_read": usage.cache_read_tokens,
        },
        "model": message.model_name,
        "response_id": message.response_id,
        "finish": message.finish_reason,
    }


def _request_part(part: RequestPart) -> dict[str, Any]:
    if isinstance(part, UserText):
        return {"type": "user", "text": part.text}
    return {"type": "tool_return", "id": part.tool_call_id, "name": part.tool_name, "content": part.content}


def _response_part(part: ResponsePart) -> dict[str, Any]:
    if isinstance(part, ReplyText):
        return {"type": "text", "text": part.text}
    if isinstance(part, Reasoning):
        return {"type": "reasoning", "text": part.text}
    return {"type": "tool_call", "id": part.tool_call_id, "name": part.tool_name, "arguments": part.arguments}


def _from_json(data: dict[str, Any]) -> ModelMessage:
    kind = data["kind"]
    if kind == "request":
        return ModelRequest(
            parts=tuple(_request_part_from(p) for p in data["parts"]),
            instructions=_optional_str(data.get("instructions")),
            input_ids=tuple(str(i) for i in data.get("input_ids", ())),
        )
    if kind == "response":
        usage = data.get("usage") or {}
        return ModelResponse(
            parts=tuple(_response_part_from(p) for p in data["parts"]),
            usage=Usage(int(usage.get("in", 0)), int(usage.get("out", 0)), int(usage.get("cache_read", 0))),
            model_name=_optional_str(data.get("model")),
            response_id=_optional_str(data.get("response_id")),
            finish_reason=_optional_str(data.get("finish")),
        )
    raise UnreadableLine(f"unknown message kind {kind!r}")


def _request_part_from(part: dict[str, Any]) -> RequestPart:
    if part["type"] == "user":
        return UserText(str(part["text"]))
    if part["type"] == "tool_return":
        return ToolReturn(str(part["id"]), str(part["name"]), str(part["content"]))
    raise UnreadableLine(f"unknown request part {part['type']!r}")


def _response_part_from(part: dict[str, Any]) -> ResponsePart:
    if part["type"] == "text":
        return ReplyText(str(part["text"]))
    if part["type"] == "reasoning":
        return Reasoning(str(part["text"]))
    if part["type"] == "tool_call":
        return ToolCall(str(part["id"]), str(part["name"]), str(part["arguments"]))
    raise UnreadableLine(f"unknown response part {part['type']!r}")


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)


# ---- the earlier format (pydantic-ai's, written before version 2) ------------------------------------------


def _from_pydantic_ai(data: dict[str, Any]) -> ModelMessage:
    kind = data["kind"]
    if kind == "request":
        metadata = data.get("metadata") or {}
        return ModelRequest(
            parts=tuple(p for p in (_old_request_part(p) for p in data["parts"]) if p is not None),
            instructions=_optional_str(data.get("instructions")),
            input_ids=tuple(str(i) for i in metadata.get("input_ids", ())),
        )
    if kind == "response":
        usage = data.get("usage") or {}
        return ModelResponse(
            parts=tuple(p for p in (_old_response_part(p) for p in data["parts"]) if p is not None),
            usage=Usage(
                int(usage.get("input_tokens", 0)),
                int(usage.get("output_tokens", 0)),
                int(usage.get("cache_read_tokens", 0)),
            ),
            model_name=_optional_str(data.get("model_name")),
            response_id=_optional_str(data.get("provider_response_id")),
            finish_reason=_optional_str(data.get("finish_reason")),
        )
    raise UnreadableLine(f"unknown message kind {kind!r}")


def _old_request_part(part: dict[str, Any]) -> RequestPart | None:
    kind = part["part_kind"]
    if kind == "user-prompt":
        content = part["content"]
        if isinstance(content, list):  # text and media items; only the text was ever sent
            content = "\n".join(item for item in content if isinstance(item, str))
        return UserText(str(content))
    if kind == "tool-return":
        content = part["content"]
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        return ToolReturn(str(part["tool_call_id"]), str(part["tool_name"]), text)
    # Errand never wrote other parts (system prompts went in `instructions`); skip rather than lose the line.
    log.warning("skipping a %r part in an old history line", kind)
    return None


def _old_response_part(part: dict[str, Any]) -> ResponsePart | None:
    kind = part["part_kind"]
    if kind == "text":
        return ReplyText(str(part["content"]))
    if kind == "tool-call":
        args = part.get("args")
        arguments = args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False)
        return ToolCall(str(part["tool_call_id"]), str(part["tool_name"]), arguments)
    log.warning("skipping a %r part in an old history line", kind)
    return None

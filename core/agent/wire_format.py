"""Our history's messages as the Chat Completions wire format (`messages` and `tools` of a request).

Every step sends the whole history again, so `EncodedHistory` keeps a turn's messages as the JSON they
were sent as: a step encodes only what it added. Encoding the whole history at every step grew with it:
about 0.3 ms per step after 100 tool calls with short outputs, milliseconds with long ones.

For a model that takes images, a person's words that name images (`[image: inbox/…]`) go as content parts:
the text, then each image as a `data:` URL (docs/models.md#images). The files are read before the request,
in a worker thread (`EncodedHistory.prepare`); without images every message is sent as it always was.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.agent.images import ImageCache, ImageText, has_image_marker, load_images
from core.agent.messages import ModelMessage, ModelRequest, ToolDefinition, UserText


def to_wire_messages(
    messages: Sequence[ModelMessage], images: Mapping[str, ImageText] | None = None
) -> list[dict[str, Any]]:
    """History -> Chat Completions `messages`, led by the latest instructions as system. `images`: the user
    texts that name images, as `load_images` read them (for a model that takes images)."""
    instructions = latest_instructions(messages)
    out: list[dict[str, Any]] = [{"role": "system", "content": instructions}] if instructions else []
    for message in messages:
        out.extend(wire_messages(message, images))
    return out


def latest_instructions(messages: Sequence[ModelMessage]) -> str | None:
    return next(
        (m.instructions for m in reversed(messages) if isinstance(m, ModelRequest) and m.instructions), None
    )


def wire_messages(
    message: ModelMessage, images: Mapping[str, ImageText] | None = None
) -> list[dict[str, Any]]:
    """One history message as the wire messages it stands for: a request's parts are one each (user text,
    tool results); a response is one assistant message, or none when it said and called nothing. A user
    text found in `images` goes as its text with notes, and as content parts when it has images."""
    if isinstance(message, ModelRequest):
        if images:
            return [
                _user_wire(part.text, images)
                if isinstance(part, UserText)
                else {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.content}
                for part in message.parts
            ]
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


def _user_wire(text: str, images: Mapping[str, ImageText]) -> dict[str, Any]:
    found = images.get(text)
    if found is None:
        return {"role": "user", "content": text}
    if not found.urls:
        return {"role": "user", "content": found.text}  # only notes: why each image is not shown
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": found.text},
            *({"type": "image_url", "image_url": {"url": url}} for url in found.urls),
        ],
    }


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
    same text; anything from the first message that differs on is encoded again.

    With `images` on, `prepare` reads the images the messages about to be encoded name (from `workspace`'s
    inbox, in a worker thread) before `messages_json` encodes them; messages already encoded keep theirs."""

    def __init__(self, workspace: Path | None = None, *, images: bool = False) -> None:
        self._messages: list[ModelMessage] = []
        self._encoded: list[str] = []
        self._joined = ""  # the non-empty encodings, comma-joined: one copy per step, not a walk
        self._tools: tuple[Sequence[ToolDefinition], str] | None = None
        self._workspace = workspace
        self._images_on = images and workspace is not None
        self._images: dict[str, ImageText] = {}  # this turn's user texts that name images, as read
        # Kept across turns (each turn encodes its history again), small and keyed by size and mtime.
        self._cache = ImageCache()

    def take_images(self, workspace: Path | None, images: bool) -> None:
        """Show images from now on, or stop (the bot's model changed). Kept text encoded the other way is
        dropped, so the next request is encoded the new way throughout."""
        on = images and workspace is not None
        if on == self._images_on and workspace == self._workspace:
            return
        self._workspace, self._images_on = workspace, on
        self.clear()
        if not on:
            self._cache = ImageCache()  # nothing will ask for them again

    async def prepare(self, messages: Sequence[ModelMessage]) -> None:
        """Read, off the loop, the images named by the user texts `messages_json` will encode next. Costs
        nothing without images, or when no new text names one."""
        if not self._images_on:
            return
        same = self._same_prefix(messages)
        texts: dict[str, None] = {}  # in order, once each
        for message in messages[same:]:
            if isinstance(message, ModelRequest):
                for part in message.parts:
                    if (
                        isinstance(part, UserText)
                        and part.text not in self._images
                        and has_image_marker(part.text)
                    ):
                        texts[part.text] = None
        if not texts:
            return
        assert self._workspace is not None
        found = await asyncio.to_thread(load_images, list(texts), self._workspace, self._cache)
        self._images.update(found)

    def _same_prefix(self, messages: Sequence[ModelMessage]) -> int:
        same = 0
        for kept, message in zip(self._messages, messages, strict=False):
            if kept is not message:
                break
            same += 1
        return same

    def messages_json(self, messages: Sequence[ModelMessage]) -> str:
        """The JSON text of `to_wire_messages(messages, images)`, with the images `prepare` read."""
        same = self._same_prefix(messages)
        if same < len(self._messages):
            del self._messages[same:], self._encoded[same:]
            self._joined = ",".join(e for e in self._encoded if e)
        images = self._images or None
        for message in messages[same:]:
            encoded = ",".join(_dumps(wire) for wire in wire_messages(message, images))
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
        self._images = {}

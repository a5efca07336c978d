"""What became of an input after a crash, read from the session's history alone.

The history holds every request before it is sent and every answer once it arrived (`session.py`), so
after a restart an input the session took is in one of three places: its turn finished (the answer is in
the history even if the host never stored it as a reply), its last request is unanswered at the end of the
history (asking again repeats nothing), or its turn stopped inside a tool (asking again could repeat what
the tool did, so a person decides).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.agent.messages import ModelMessage, ModelRequest, ModelResponse

TailState = Literal["not_taken", "answered", "unanswered", "cut_in_tool"]


@dataclass(frozen=True, slots=True)
class InputTail:
    state: TailState
    text: str = ""  # the turn's answer, its steps' texts joined as a reply shows them ("answered")


def input_ids_of(message: ModelMessage) -> list[str]:
    return list(message.input_ids) if isinstance(message, ModelRequest) else []


def tail_of(history: list[ModelMessage], input_id: str) -> InputTail:
    start = next((n for n, m in enumerate(history) if input_id in input_ids_of(m)), None)
    if start is None:
        return InputTail("not_taken")
    texts: list[str] = []
    for message in history[start + 1 :]:
        if input_ids_of(message):
            # Another input came next (a new turn, or a steer into this one) before this one was answered.
            return InputTail("cut_in_tool")
        if isinstance(message, ModelResponse):
            if message.text:
                texts.append(message.text)
            if not message.tool_calls:
                return InputTail("answered", "\n\n".join(texts))
    if isinstance(history[-1], ModelRequest):
        return InputTail("unanswered")
    return InputTail("cut_in_tool")

"""What a search finds, as the UI and the API read it. Plain immutable values; never ORM objects."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

HitKind = Literal["message", "task", "rule"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One message, task or rule holding every word looked for. `snippet` is one line of its text around
    the first match; `spans` are (start, end) offsets of the matched words within it, to emphasise."""

    kind: HitKind
    title: str  # where it came from: the conversation's title, the task's or the rule's
    snippet: str
    spans: tuple[tuple[int, int], ...]
    at: float  # when it was said, or last changed
    bot_id: str
    conversation_id: str = ""  # a message's conversation; a task's or rule's conversation it reports to
    message_id: int = 0
    task_id: str = ""
    rule_id: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "title": self.title,
            "snippet": self.snippet,
            "spans": [list(span) for span in self.spans],
            "at": self.at,
            "botId": self.bot_id,
            "conversationId": self.conversation_id,
            "messageId": self.message_id or None,
            "taskId": self.task_id or None,
            "ruleId": self.rule_id or None,
        }

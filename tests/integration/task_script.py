"""Scripting the fake model per session: chat requests and each task's requests get their own replies."""

from __future__ import annotations

import re
from collections import defaultdict, deque
from collections.abc import Iterable
from typing import Any

from tests.fakes.model_server import Reply, ToolCallSpec

TASK_MARK = re.compile(r"You are working on a background task for the user: (.+?)\.\n")
# A rule run's session is keyed "rule:<title>".
RULE_MARK = re.compile(r"You are running a standing rule for the user: (.+?)\.\n")
# A goal task's judge turn is keyed "judge:<title>"; a planned task's planner and merger turns
# "plan:<title>" and "merge:<title>".
HOST_TURNS = {
    "judge": re.compile(r"You are judging a background task for the user: (.+?)\.\n"),
    "plan": re.compile(r"You are planning a background task for the user: (.+?)\.\n"),
    "merge": re.compile(r"You are merging the results of a background task for the user: (.+?)\.\n"),
}


def report(state: str, summary: str = "did it", **fields: Any) -> Reply:
    return Reply.tool_calls([ToolCallSpec("task_report", {"state": state, "summary": summary, **fields})])


def bash(command: str, **fields: Any) -> Reply:
    return Reply.tool_calls([ToolCallSpec("bash", {"command": command, **fields})])


class SessionScript:
    """A responder for ScriptedModelServer: replies are queued per task title (or "chat")."""

    def __init__(self) -> None:
        self.queues: dict[str, deque[Reply]] = defaultdict(deque)
        self.requests: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.fallback = Reply.text("ok")

    def add(self, who: str, replies: Iterable[Reply]) -> None:
        self.queues[who].extend(replies)

    @staticmethod
    def who(body: dict[str, Any]) -> str:
        system = next(
            (m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "system"), ""
        )
        found = TASK_MARK.search(system)
        if found is None and (rule := RULE_MARK.search(system)) is not None:
            return f"rule:{rule.group(1)}"
        for turn, mark in HOST_TURNS.items():
            if found is None and (host_turn := mark.search(system)) is not None:
                return f"{turn}:{host_turn.group(1)}"
        return found.group(1) if found else "chat"

    def __call__(self, body: dict[str, Any]) -> Reply:
        who = self.who(body)
        self.requests[who].append(body)
        queue = self.queues.get(who)
        return queue.popleft() if queue else self.fallback

    def user_texts(self, who: str, index: int) -> list[str]:
        return [
            str(m.get("content")) for m in self.requests[who][index]["messages"] if m.get("role") == "user"
        ]

    def tool_names(self, who: str, index: int = 0) -> list[str]:
        return sorted(t["function"]["name"] for t in self.requests[who][index].get("tools", []))

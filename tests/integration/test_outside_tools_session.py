"""A session's tools from outside (MCP servers, skills) as the turn loop follows them: what they add to the
system prompt reaches the next request, and a stop while a turn waits for them (before its first request)
loses nothing: the person's message is taken and kept, as in a turn stopped during its model request, and
the interrupted calls of an earlier turn are still answered in the next request (the model server refuses
a history without them)."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Sequence
from pathlib import Path

from core.agent import events as ev
from core.agent.runtime import AgentRuntime
from core.agent.session_spec import SessionSpec
from core.agent.tool_api import ToolSpec
from core.clock import SystemClock
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.conftest import OpenSession
from tests.integration.test_agent_runtime import Recorder, tool_messages


class GatedTools:
    """Outside tools whose wait before a turn blocks while `gate` is clear; `section` is their prompt text."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.gate.set()
        self.waiting = asyncio.Event()
        self.section = ""

    def version(self) -> Hashable:
        return self.section

    def tools(self) -> Sequence[ToolSpec]:
        return ()

    def prompt_sections(self) -> Sequence[str]:
        return (self.section,) if self.section else ()

    async def settle(self, now: float) -> None:
        self.waiting.set()
        await self.gate.wait()


class GatedSource:
    def __init__(self, tools: GatedTools) -> None:
        self.tools = tools

    async def for_session(self, spec: SessionSpec) -> GatedTools:
        return self.tools


async def test_a_stop_while_the_turn_waits_for_outside_tools_loses_neither_the_message_nor_owed_answers(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer, open_session: OpenSession
) -> None:
    outside = GatedTools()
    rt = AgentRuntime(
        sessions_dir=tmp_path / "sessions", clock=SystemClock(), home=home, outside_tools=GatedSource(outside)
    )
    try:
        rec = Recorder(rt)
        model_server.push(Reply.tool_calls([ToolCallSpec("bash", {"command": "sleep 300"})]))
        session = await open_session(rt=rt)
        session.prompt("long tool", "in-1")
        await rec.wait_for(ev.ToolCall)
        await asyncio.wait_for(session.cancel(), timeout=5)  # its call is owed an "interrupted" answer

        outside.gate.clear()
        outside.waiting.clear()
        session.prompt("next", "in-2")
        await asyncio.wait_for(outside.waiting.wait(), timeout=5)
        await asyncio.wait_for(session.cancel(), timeout=5)
        ended = await rec.wait_for(ev.TurnEnded, count=2)
        assert ended[-1].outcome == "cancelled"
        assert "in-2" in [e.input_id for e in rec.of(ev.InputTaken)]  # not left queued forever
        assert len(model_server.requests) == 1  # nothing was asked while it waited

        outside.gate.set()
        outside.section = "Skills: - charts: Draw charts."
        model_server.push(Reply.text("ok"))
        session.prompt("again", "in-3")
        ended = await rec.wait_for(ev.TurnEnded, count=3)
        assert ended[-1].outcome == "done", ended[-1].error
        [answered] = tool_messages(model_server, 1)
        assert "Interrupted" in answered["content"]
        said = [m["content"] for m in model_server.messages_of(1) if m["role"] == "user"]
        assert said == ["long tool", "next", "again"]
        system = model_server.messages_of(1)[0]
        assert system["role"] == "system" and system["content"].endswith("Skills: - charts: Draw charts.")
    finally:
        await rt.close()

"""The agent runtime against the scripted model server over real HTTP."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from core.agent import events as ev
from core.agent.runtime import AgentRuntime
from core.clock import SystemClock
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.conftest import OpenSession


class Recorder:
    """Collects a runtime's events and waits for the one a test needs."""

    def __init__(self, runtime: AgentRuntime) -> None:
        self.events: list[ev.AgentEvent] = []
        self._changed = asyncio.Event()
        runtime.subscribe(self._on)

    def _on(self, event: ev.AgentEvent) -> None:
        self.events.append(event)
        self._changed.set()

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    async def wait_for(self, kind: type[Any], count: int = 1, timeout: float = 10.0) -> list[Any]:
        async with asyncio.timeout(timeout):
            while len(self.of(kind)) < count:
                self._changed.clear()
                await self._changed.wait()
        return self.of(kind)


def tool_messages(server: ScriptedModelServer, index: int) -> list[dict[str, Any]]:
    return [m for m in server.messages_of(index) if m.get("role") == "tool"]


async def test_a_turn_with_a_tool_call_runs_end_to_end(
    runtime, model_server, open_session: OpenSession
) -> None:
    rec = Recorder(runtime)
    model_server.push_many(
        [
            Reply.tool_calls([ToolCallSpec("bash", {"command": "echo hello-from-bash"})]),
            Reply.text("The command printed hello-from-bash."),
        ]
    )
    session = await open_session()
    session.prompt("run echo", "in-1")
    ended = (await rec.wait_for(ev.TurnEnded))[0]

    assert ended.outcome == "done"
    result = rec.of(ev.ToolResult)[0]
    assert result.name == "bash" and result.ok and "hello-from-bash" in result.output
    # The tool's output went back to the model in the second request.
    assert "hello-from-bash" in tool_messages(model_server, 1)[0]["content"]
    assert [e.input_id for e in rec.of(ev.InputTaken)] == ["in-1"]
    assert rec.of(ev.AssistantMessage)[-1].text == "The command printed hello-from-bash."
    assert all(m.usage.output_tokens > 0 for m in rec.of(ev.AssistantMessage))
    await session.wait_idle(5)
    assert session.status == "idle"


async def test_streamed_deltas_arrive_in_order(runtime, model_server, open_session: OpenSession) -> None:
    rec = Recorder(runtime)
    text = "One, two, three, four, five, six, seven."
    model_server.push(Reply.text(text, chunks=6))
    session = await open_session()
    session.prompt("count")
    await rec.wait_for(ev.TurnEnded)
    deltas = [d.text for d in rec.of(ev.TextDelta)]
    assert len(deltas) >= 3
    assert "".join(deltas) == text


async def test_cancel_stops_a_hanging_turn_and_the_session_stays_usable(
    runtime, model_server, open_session: OpenSession
) -> None:
    rec = Recorder(runtime)
    model_server.push(Reply.hang())
    session = await open_session()
    session.prompt("this will hang")
    await model_server.wait_for_requests(1)

    await asyncio.wait_for(session.cancel(), timeout=2.0)
    assert rec.of(ev.TurnEnded)[-1].outcome == "cancelled"
    await session.wait_idle(5)

    model_server.push(Reply.text("back again"))
    session.prompt("are you there?")
    ended = await rec.wait_for(ev.TurnEnded, count=2)
    assert ended[-1].outcome == "done"
    # The cancelled prompt stays in history: the model sees both questions.
    contents = [m.get("content") for m in model_server.messages_of(1) if m.get("role") == "user"]
    assert contents == ["this will hang", "are you there?"]


async def test_cancel_during_a_tool_kills_it_and_answers_the_call_as_interrupted(
    runtime, model_server, open_session: OpenSession, tmp_path: Path
) -> None:
    rec = Recorder(runtime)
    model_server.push(Reply.tool_calls([ToolCallSpec("bash", {"command": "sleep 300"})]))
    session = await open_session()
    session.prompt("long tool")
    await rec.wait_for(ev.ToolCall)
    await asyncio.wait_for(session.cancel(), timeout=2.0)
    # The stopped call still ends, so what it may have done is on record (docs/audit.md).
    [ended] = rec.of(ev.ToolResult)
    assert (ended.name, ended.ok, ended.stopped) == ("bash", False, True)

    model_server.push(Reply.text("ok"))
    session.prompt("next")
    await rec.wait_for(ev.TurnEnded, count=2)
    tool_msg = tool_messages(model_server, 1)[0]
    assert "Interrupted" in tool_msg["content"]


async def test_steer_lands_at_the_next_step(
    runtime, model_server, open_session: OpenSession, tmp_path: Path
) -> None:
    rec = Recorder(runtime)
    gate = tmp_path / "workspace" / "go"
    model_server.push_many(
        [
            # The tool waits for a file the test creates after steering, so the steer arrives mid-step.
            Reply.tool_calls(
                [ToolCallSpec("bash", {"command": f"while [ ! -f {gate} ]; do sleep 0.01; done; echo gate"})]
            ),
            Reply.text("switched to English"),
        ]
    )
    session = await open_session()
    session.prompt("write a report")
    await rec.wait_for(ev.ToolCall)
    session.steer("actually, in English please", "steer-1")
    gate.write_text("go")
    await rec.wait_for(ev.TurnEnded)

    assert len(rec.of(ev.TurnStarted)) == 1  # the steer joined the running turn
    second = model_server.messages_of(1)
    assert second[-1] == {"role": "user", "content": "actually, in English please"}
    assert second[-2]["role"] == "tool"
    assert [e.input_id for e in rec.of(ev.InputTaken)][-1] == "steer-1"


async def test_history_survives_a_new_runtime_on_the_same_data_dir(
    tmp_path: Path, home: Path, model_server, open_session: OpenSession
) -> None:
    first = AgentRuntime(sessions_dir=tmp_path / "sessions", clock=SystemClock(), home=home)
    rec = Recorder(first)
    model_server.push(Reply.text("I will remember 42."))
    session = await open_session("chat-c_persist", rt=first)
    session.prompt("remember the number 42", "m1")
    await rec.wait_for(ev.TurnEnded)
    await first.close()

    second = AgentRuntime(sessions_dir=tmp_path / "sessions", clock=SystemClock(), home=home)
    try:
        rec2 = Recorder(second)
        model_server.push(Reply.text("It was 42."))
        resumed = await open_session("chat-c_persist", rt=second)
        assert resumed.has_taken("m1")
        resumed.prompt("which number?")
        await rec2.wait_for(ev.TurnEnded)
        seen = [(m["role"], m.get("content")) for m in model_server.messages_of(1) if m["role"] != "system"]
        assert seen == [
            ("user", "remember the number 42"),
            ("assistant", "I will remember 42."),
            ("user", "which number?"),
        ]
    finally:
        await second.close()


async def test_a_background_job_wakes_its_session(runtime, model_server, open_session: OpenSession) -> None:
    rec = Recorder(runtime)
    model_server.push_many(
        [
            Reply.tool_calls(
                [ToolCallSpec("bash", {"command": "echo bg-finished", "run_in_background": True})]
            ),
            Reply.text("Started it in the background."),
            Reply.text("The background job is done."),
        ]
    )
    session = await open_session()
    session.prompt("run it in the background")
    await rec.wait_for(ev.JobEnded)
    ended = await rec.wait_for(ev.TurnEnded, count=2)

    assert [e.outcome for e in ended] == ["done", "done"]
    assert len(rec.of(ev.TurnStarted)) == 2  # the job's end opened a new turn
    wake_request = model_server.messages_of(2)
    assert "bg-finished" in wake_request[-1]["content"]
    assert rec.of(ev.JobEnded)[0].exit_code == 0


async def test_path_guard_refuses_writes_outside_the_workspace_and_reading_credentials(
    runtime, model_server, open_session: OpenSession, tmp_path: Path, home: Path
) -> None:
    rec = Recorder(runtime)
    outside = tmp_path / "outside.txt"
    model_server.push_many(
        [
            Reply.tool_calls(
                [
                    ToolCallSpec("write_file", {"path": str(outside), "content": "x"}),
                    ToolCallSpec("read_file", {"path": str(home / ".ssh" / "id_rsa")}),
                    ToolCallSpec("write_file", {"path": "inside.txt", "content": "fine"}),
                ]
            ),
            Reply.text("done"),
        ]
    )
    session = await open_session()
    session.prompt("try it")
    await rec.wait_for(ev.TurnEnded)

    results = rec.of(ev.ToolResult)
    assert [r.ok for r in results] == [False, False, True]
    assert "outside the workspace" in results[0].output
    assert "credential" in results[1].output
    assert not outside.exists()
    assert (tmp_path / "workspace" / "inside.txt").read_text() == "fine"
    assert "PRIVATE KEY" not in str(model_server.messages_of(1))


async def test_invalid_tool_arguments_go_back_to_the_model_as_a_tool_error(
    runtime, model_server, open_session: OpenSession
) -> None:
    rec = Recorder(runtime)
    model_server.push_many(
        [
            Reply.tool_calls([ToolCallSpec("bash", {"timeout_s": "soon"}), ToolCallSpec("nope", {})]),
            Reply.text("sorry"),
        ]
    )
    session = await open_session()
    session.prompt("x")
    ended = (await rec.wait_for(ev.TurnEnded))[0]
    assert ended.outcome == "done"
    first, second = (m["content"] for m in tool_messages(model_server, 1))
    assert "invalid arguments for bash" in first and "command" in first
    assert "no tool named 'nope'" in second


async def test_rate_limit_then_success_is_retried(runtime, model_server, open_session: OpenSession) -> None:
    rec = Recorder(runtime)
    model_server.push_many([Reply.error(429), Reply.error(503), Reply.text("finally")])
    session = await open_session()
    session.prompt("hi")
    ended = (await rec.wait_for(ev.TurnEnded))[0]
    assert ended.outcome == "done"
    assert len(model_server.requests) == 3
    assert rec.of(ev.AssistantMessage)[0].text == "finally"


async def test_an_unreachable_endpoint_ends_the_turn_with_an_error_naming_it(
    runtime, open_session: OpenSession
) -> None:
    rec = Recorder(runtime)
    dead = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
    session = await open_session(base_url=dead)
    session.prompt("hello")
    ended = (await rec.wait_for(ev.TurnEnded))[0]
    assert ended.outcome == "error"
    assert dead in ended.error and "base URL" in ended.error


async def test_a_rejected_key_is_not_retried_and_says_what_to_fix(
    runtime, model_server, open_session: OpenSession
) -> None:
    rec = Recorder(runtime)
    model_server.push(Reply.error(401, message="invalid api key"))
    session = await open_session()
    session.prompt("hello")
    ended = (await rec.wait_for(ev.TurnEnded))[0]
    assert ended.outcome == "error"
    assert "rejected the API key" in ended.error
    assert len(model_server.requests) == 1


async def test_a_session_offers_only_its_allowed_tools_and_carries_its_prompt_sections(
    runtime, model_server, tmp_path: Path
) -> None:
    from core.agent.model_config import ModelConfig
    from core.agent.sandbox import Permission, Preset
    from core.agent.session_spec import SessionSpec

    rec = Recorder(runtime)
    model_server.push_many(
        [Reply.tool_calls([ToolCallSpec("write_file", {"path": "x.txt", "content": "no"})]), Reply.text("ok")]
    )
    workspace = tmp_path / "ws-limited"
    spec = SessionSpec(
        session_id="task-t_limited",
        kind="task",
        bot_id="b",
        cwd=workspace,
        model=ModelConfig(model_server.base_url, "fake-model", "k"),
        permission=Permission(Preset.WORKSPACE_WRITE, workspace),
        prompt_sections=("Task brief: count the files.",),
        allowed_tools=frozenset({"read_file", "list_files"}),
    )
    session = await runtime.open_session(spec)
    session.prompt("go")
    await rec.wait_for(ev.TurnEnded)

    first = model_server.requests[0].body
    assert sorted(t["function"]["name"] for t in first["tools"]) == ["list_files", "read_file"]
    assert "Task brief: count the files." in first["messages"][0]["content"]
    # A tool the session does not have is refused even if the model calls it.
    assert "no tool named 'write_file'" in tool_messages(model_server, 1)[0]["content"]
    assert not (workspace / "x.txt").exists()

"""An input counts as taken only once the history holding it is on disk (docs/recovery.md): a crash during
the model call leaves it owed, and asking again repeats nothing."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from core.agent import events as ev
from core.agent.runtime import AgentRuntime
from core.agent.turn_tail import InputTail
from core.clock import SystemClock
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.conftest import OpenSession
from tests.integration.test_agent_runtime import Recorder

OLD_HISTORY = Path(__file__).parents[1] / "data" / "history_pydantic_ai" / "chat-c_gen"


@asynccontextmanager
async def crash_and_restart(tmp_path: Path, home: Path) -> AsyncIterator[tuple[AgentRuntime, AgentRuntime]]:
    """A runtime that "dies" (it is never closed before the next one opens the same sessions dir, as after
    a SIGKILL) and the runtime of the next start."""
    first = AgentRuntime(sessions_dir=tmp_path / "sessions", clock=SystemClock(), home=home)
    second = AgentRuntime(sessions_dir=tmp_path / "sessions", clock=SystemClock(), home=home)
    try:
        yield first, second
    finally:
        await second.close()
        await first.close()


def _history_texts(path: Path) -> list[str]:
    texts = []
    for line in path.read_text().splitlines():
        message = json.loads(line)
        texts += [str(p["text"]) for p in message["parts"] if p["type"] == "user"]
    return texts


async def test_an_input_is_on_disk_before_it_is_announced_taken(
    tmp_path: Path, runtime: AgentRuntime, model_server: ScriptedModelServer, open_session: OpenSession
) -> None:
    on_disk_when_taken: list[list[str]] = []
    history = tmp_path / "sessions" / "chat-c_test" / "history.jsonl"

    def look(event: ev.AgentEvent) -> None:
        if isinstance(event, ev.InputTaken):
            on_disk_when_taken.append(_history_texts(history) if history.exists() else [])

    runtime.subscribe(look)
    rec = Recorder(runtime)
    model_server.push(Reply.text("hi"))
    session = await open_session()
    session.prompt("hello there", "m1")
    await rec.wait_for(ev.TurnEnded)
    assert on_disk_when_taken == [["hello there"]]


async def test_a_runtime_that_died_during_the_model_call_still_owes_the_input_and_asks_once_more(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer, open_session: OpenSession
) -> None:
    async with crash_and_restart(tmp_path, home) as (first, second):
        model_server.push(Reply.hang())
        session = await open_session("chat-c_crash", rt=first)
        session.prompt("what is 6 x 7?", "m1")
        await model_server.wait_for_requests(1)

        rec = Recorder(second)
        reopened = await open_session("chat-c_crash", rt=second)
        assert reopened.has_taken("m1")
        assert reopened.tail_of("m1").state == "unanswered"
        model_server.push(Reply.text("42"))
        assert reopened.resume()
        await rec.wait_for(ev.TurnEnded)
        assert [e.input_id for e in rec.of(ev.InputTaken)] == ["m1"]  # whoever waits on m1 follows it
        asked = [m for m in model_server.messages_of(1) if m["role"] == "user"]
        assert asked == [{"role": "user", "content": "what is 6 x 7?"}]
        assert reopened.tail_of("m1").state == "answered"
        assert reopened.tail_of("m1").text == "42"


async def test_a_tool_result_written_before_the_crash_is_not_run_again(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer, open_session: OpenSession
) -> None:
    async with crash_and_restart(tmp_path, home) as (first, second):
        model_server.push_many(
            [Reply.tool_calls([ToolCallSpec("bash", {"command": "echo once >> ran.txt"})]), Reply.hang()]
        )
        session = await open_session("chat-c_tool", rt=first)
        session.prompt("do it", "m1")
        await model_server.wait_for_requests(2)

        rec = Recorder(second)
        reopened = await open_session("chat-c_tool", rt=second)
        assert reopened.tail_of("m1").state == "unanswered"
        model_server.push(Reply.text("done"))
        reopened.resume()
        await rec.wait_for(ev.TurnEnded)
        assert rec.of(ev.ToolCall) == []
        assert model_server.messages_of(2)[-1]["role"] == "tool"
        assert (tmp_path / "workspace" / "ran.txt").read_text() == "once\n"


async def test_a_turn_stopped_inside_a_tool_is_not_resumed(
    tmp_path: Path, runtime: AgentRuntime, model_server: ScriptedModelServer, open_session: OpenSession
) -> None:
    rec = Recorder(runtime)
    model_server.push(Reply.tool_calls([ToolCallSpec("bash", {"command": "sleep 300"})]))
    session = await open_session()
    session.prompt("long one", "m1")
    await rec.wait_for(ev.ToolCall)
    await session.cancel()
    # In memory the interrupted call is answered at the next turn; on disk the history ends in the call.
    assert session.tail_of("m1").state == "cut_in_tool"
    assert not session.resume()


async def test_the_same_input_handed_over_twice_reaches_the_model_once(
    runtime: AgentRuntime, model_server: ScriptedModelServer, open_session: OpenSession
) -> None:
    rec = Recorder(runtime)
    model_server.push_many([Reply.text("one"), Reply.text("two")])
    session = await open_session()
    session.prompt("the brief", "i1")
    session.steer("the brief", "i1")  # a second caller hands over the same input meanwhile
    session.prompt("the brief", "i1")
    await rec.wait_for(ev.TurnEnded)
    await session.wait_idle(5)
    session.prompt("the brief", "i1")  # and again after it was taken
    await session.wait_idle(5)
    assert len(model_server.requests) == 1
    assert [m["content"] for m in model_server.messages_of(0) if m["role"] == "user"] == ["the brief"]


async def test_a_session_written_by_the_version_before_resumes_where_it_stopped(
    tmp_path: Path, runtime: AgentRuntime, model_server: ScriptedModelServer, open_session: OpenSession
) -> None:
    # A real history of Errand 0.1 (pydantic-ai's format) that ends in a request a crash left unanswered.
    old = OLD_HISTORY
    shutil.copytree(old, tmp_path / "sessions" / "chat-c_gen")
    rec = Recorder(runtime)
    session = await open_session("chat-c_gen")
    assert [session.has_taken(f"m{n}") for n in range(1, 6)] == [True] * 5
    assert session.unanswered_inputs() == ["m5"]
    model_server.push_many(
        [Reply.tool_calls([ToolCallSpec("read_file", {"path": "notes.txt"})]), Reply.text("Milk and eggs.")]
    )
    (tmp_path / "workspace" / "notes.txt").write_text("milk\neggs\n")
    assert session.resume()
    await rec.wait_for(ev.TurnEnded)
    sent = model_server.messages_of(0)
    assert [m["role"] for m in sent].count("tool") == 4  # the old turns' results went along
    assert sent[-1] == {"role": "user", "content": "and one more?"}
    assert session.tail_of("m5") == InputTail("answered", "Milk and eggs.")
    # The steps of this turn went to disk in the new format after the old lines, and read back whole.
    reopened = AgentRuntime(sessions_dir=tmp_path / "sessions", clock=SystemClock(), home=tmp_path / "home")
    try:
        again = await reopened.history.load("chat-c_gen")
        assert again == session.history
        assert len(again) == 17
    finally:
        await reopened.close()

"""A reasoning model end to end (the real host or runtime, the scripted model streaming `reasoning_content`
over HTTP): the thinking is a step of the reply or the run, never the answer, never sent back to the model,
and still there after a restart."""

from __future__ import annotations

import json
from pathlib import Path

from core.agent import events as ev
from core.agent.messages import ModelResponse
from core.agent.runtime import AgentRuntime
from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.conftest import OpenSession
from tests.integration.host_fixtures import make_host, running_api
from tests.integration.task_script import SessionScript
from tests.integration.test_agent_runtime import Recorder
from tests.integration.test_chat_api import new_conversation, wait_for_roles
from tests.integration.test_tasks import new_task, wait_stage

THOUGHT = "Six times seven. Let bash check it rather than guess."


def sent_back(server: ScriptedModelServer) -> str:
    """Everything the host sent the model after its first request, as one text."""
    return json.dumps([r.messages for r in server.requests[1:]], ensure_ascii=False)


async def test_a_session_keeps_the_models_thinking_apart_from_its_answer(
    runtime: AgentRuntime, model_server: ScriptedModelServer, open_session: OpenSession
) -> None:
    rec = Recorder(runtime)
    model_server.push_many(
        [
            Reply.tool_calls([ToolCallSpec("bash", {"command": "echo 42"})], reasoning=THOUGHT),
            Reply.text("It is 42.", reasoning="The tool said 42."),
        ]
    )
    session = await open_session()
    session.prompt("what is 6*7?", "in-1")
    await rec.wait_for(ev.TurnEnded)

    first, second = rec.of(ev.AssistantMessage)
    assert (first.reasoning, first.text) == (THOUGHT, "")
    assert (second.reasoning, second.text) == ("The tool said 42.", "It is 42.")
    assert "".join(d.text for d in rec.of(ev.TextDelta)) == "It is 42."  # the live reply: the answer only
    assert THOUGHT not in sent_back(model_server)
    assert all("reasoning_content" not in m for r in model_server.requests for m in r.messages)
    responses = [m for m in session.history if isinstance(m, ModelResponse)]
    assert [r.reasoning for r in responses] == [THOUGHT, "The tool said 42."]


async def test_a_chat_reply_shows_what_the_model_thought_as_its_first_step(
    host: Host, model_server: ScriptedModelServer
) -> None:
    model_server.push_many(
        [
            Reply.tool_calls([ToolCallSpec("bash", {"command": "echo 42"})], reasoning=THOUGHT),
            Reply.text("The answer is 42."),
        ]
    )
    async with running_api(host) as client:
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "what is 6*7?"})
        _, reply = await wait_for_roles(host, client, cid, ["user", "assistant"])
        assert reply["text"] == "The answer is 42."
        assert [s["kind"] for s in reply["steps"]] == ["reasoning", "model", "tool", "model"]
        thought = reply["steps"][0]
        assert (thought["detail"], thought["chars"]) == (THOUGHT, len(THOUGHT))
        assert THOUGHT not in sent_back(model_server)


async def test_a_task_runs_steps_keep_the_thinking_across_a_restart(
    host: Host, script: SessionScript, tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    long_thought = "Plan. " * 1000  # 6,000 characters: the step keeps the start and says how long it was
    script.add(
        "Count files",
        [
            Reply.tool_calls([ToolCallSpec("bash", {"command": "echo 3 files"})], reasoning=long_thought),
            Reply.tool_calls(
                [ToolCallSpec("task_report", {"state": "done", "summary": "3 files", "message": "3 files."})],
                reasoning="Report it.",
            ),
            Reply.text("Reported."),
        ],
    )
    async with running_api(host) as client:
        task = await new_task(client, "Count files")
        done = await wait_stage(host, client, task["id"], "ready")
        route = f"/api/tasks/{task['id']}/runs/{done['runs'][0]['id']}/activity"
        steps = (await client.get(route)).json()["steps"]
        assert [s["kind"] for s in steps][:5] == ["reasoning", "model", "tool", "reasoning", "model"]
        assert steps[0]["chars"] == len(long_thought.strip())
        assert steps[0]["detail"] == long_thought.strip()[:4000]
        assert steps[3]["detail"] == "Report it."
        asked = script.requests["Count files"]
        assert all("Plan. Plan." not in json.dumps(body["messages"]) for body in asked)

    again = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(again) as client:
        after = (await client.get(route)).json()["steps"]
        assert after == steps

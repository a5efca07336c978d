"""A planned task survives a SIGKILL of a real `errand serve` during its second wave
(docs/plans.md#after-a-crash): the plan is not made again, the finished subtask is kept, only the
unfinished one runs again (with the recovery note), and the merged result comes once."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.integration.task_script import SessionScript, bash, report
from tests.serve_process import api_client, read_until_listening, serve_env, serve_process

pytestmark = pytest.mark.slow
GOAL = "Price then compare"
PLAN = {
    "subtasks": [
        {"id": "prices", "title": "Collect prices", "brief": "Collect the prices into prices.txt."},
        {"id": "compare", "title": "Compare them", "brief": "Compare the prices.", "dependsOn": ["prices"]},
    ]
}
MERGED = {"message": "Compared: B is cheapest.", "summary": "prices, then the comparison"}
GATE = "gate"
WAIT_AT_GATE = bash(f"while [ ! -f {GATE} ]; do sleep 0.05; done; echo compared")


async def detail(client: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    return dict((await client.get(f"/api/tasks/{task_id}")).json())


async def test_a_sigkill_in_the_second_wave_runs_only_the_unfinished_subtask_again(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    script = SessionScript()
    model_server.responder = script
    script.add(f"plan:{GOAL}", [Reply.text(json.dumps(PLAN))])
    script.add(
        "Collect prices",
        [
            bash("echo 'A 3, B 2' > prices.txt"),
            report("done", "collected", message="A 3, B 2."),
            Reply.text("ok"),
        ],
    )
    script.add("Compare them", [WAIT_AT_GATE])
    data_dir = tmp_path / "data"
    env = serve_env(model_server, home)
    env.update(ERRAND_GATHER_S="0")

    async with serve_process(data_dir, env, log=tmp_path / "serve.log") as proc:
        await read_until_listening(proc)
        async with api_client(data_dir) as client:
            bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
            r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
            assert r.status_code == 200, r.text
            r = await client.post("/api/tasks", json={"text": GOAL, "plan": True})
            assert r.status_code == 201, r.text
            task_id = r.json()["id"]
            conversation = r.json()["conversationId"]
            # The second wave works: the comparison asked the model and waits at its gate.
            await model_server.wait_until(lambda: len(script.requests["Compare them"]) >= 1, timeout=30)
            before = await detail(client, task_id)
        proc.kill()
        await proc.wait()
    [prices, compare] = before["plan"]["subtasks"]
    assert (prices["stage"], compare["stage"]) == ("ready", "working")
    asked = {who: len(bodies) for who, bodies in script.requests.items()}

    script.add(
        "Compare them", [WAIT_AT_GATE, report("done", "compared", message="B is cheapest."), Reply.text("ok")]
    )
    script.add(f"merge:{GOAL}", [Reply.text(json.dumps(MERGED))])
    async with serve_process(data_dir, env, log=tmp_path / "serve.log") as proc:
        await read_until_listening(proc)
        await model_server.wait_until(
            lambda: len(script.requests["Compare them"]) > asked["Compare them"], timeout=30
        )
        await asyncio.to_thread((Path(compare["folder"]) / GATE).write_text, "go")
        async with api_client(data_dir) as client:
            async with asyncio.timeout(40):
                while (now := await detail(client, task_id))["stage"] != "ready":
                    await client.get(f"/api/conversations/{conversation}/messages", params={"wait": 1})
            said = (await client.get(f"/api/conversations/{conversation}/messages")).json()["messages"]
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=15) == 0

    # The plan was kept and the finished subtask not run again.
    assert len(script.requests[f"plan:{GOAL}"]) == asked[f"plan:{GOAL}"] == 1
    assert len(script.requests["Collect prices"]) == asked["Collect prices"]
    recovered = script.user_texts("Compare them", asked["Compare them"])
    assert any("restarted" in text.lower() for text in recovered), recovered
    runs = {s["id"]: s["runs"] for s in now["plan"]["subtasks"]}
    assert runs == {"prices": 1, "compare": 2}
    assert [(r["cause"], r["outcome"]) for r in now["runs"]] == [
        ("launch", "interrupted"),
        ("recover", "done"),
    ]
    texts = [m["text"] for m in said if m["role"] != "user"]
    assert texts.count(MERGED["message"]) == 1 and len(texts) == 1, texts

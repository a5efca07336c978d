"""What a task's detail says about its working run (issue 17), end to end over the real host and the
scripted model: that it waits on the model (also after its first steps), whether its model has a price from
the start, and a failed model call's reason in the person's language."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from core.clock import FakeClock
from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.integration.host_fixtures import make_host, running_api
from tests.integration.task_script import SessionScript, bash
from tests.integration.test_tasks import messages, new_task, wait_stage
from tests.waiting import wait_until

START = 1_790_000_000.0


async def detail(client: httpx.AsyncClient, task_id: str, lang: str = "en") -> dict[str, Any]:
    r = await client.get(f"/api/tasks/{task_id}", params={"lang": lang})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def waiting_after_a_step(host: Host, task_id: str) -> bool:
    run_id = host.tasks.runner.active_run(task_id)
    if run_id is None:
        return False
    steps = host.tasks.runner.live_steps(run_id) or []
    tool_done = any(step.get("kind") == "tool" for step in steps)
    return tool_done and host.tasks.runner.model_wait_since(run_id) is not None


async def test_a_run_waiting_on_a_slow_model_after_its_first_step_says_since_when(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer, script: SessionScript
) -> None:
    clock = FakeClock(start=START)
    host = make_host(tmp_path / "data", model_server.base_url, home=home, clock=clock)
    script.add("Count files", [bash("echo counting"), Reply.hang()])
    async with running_api(host) as client:
        task = await new_task(client, "Count files")
        await wait_until(
            host.bus, lambda: waiting_after_a_step(host, task["id"]), timeout=10, what="the second request"
        )
        run = (await detail(client, task["id"]))["runs"][0]
        assert run["state"] == "running" and run["steps"] >= 2
        assert run["modelWaitSince"] == START  # the host's clock when the request went out

        await client.post(f"/api/tasks/{task['id']}/stop")
        stopped = (await detail(client, task["id"]))["runs"][0]
        assert stopped["modelWaitSince"] is None


async def test_a_working_task_on_an_unpriced_model_says_so_before_any_call_is_counted(
    host: Host, script: SessionScript
) -> None:
    script.add("Local work", [Reply.hang()])  # the scripted model is on 127.0.0.1: a local model, no price
    async with running_api(host) as client:
        task = await new_task(client, "Local work")

        async def working() -> bool:
            return host.tasks.runner.active_run(task["id"]) is not None

        await wait_until(host.bus, working, timeout=10, what="the run to start")
        shown = await detail(client, task["id"])
        assert shown["modelPriced"] is False and shown["unpricedCalls"] == 0
        listed = (await client.get("/api/tasks")).json()["tasks"]
        assert [t["modelPriced"] for t in listed] == [False]
        await client.post(f"/api/tasks/{task['id']}/stop")
        assert (await detail(client, task["id"]))["modelPriced"] is None  # no run works: not known


async def test_a_working_task_on_a_model_with_the_users_price_is_priced(
    host: Host, script: SessionScript
) -> None:
    script.add("Priced work", [Reply.hang()])
    async with running_api(host) as client:
        await host.prices.set(
            "fake-model",
            {"input": "1", "output": "2", "cacheRead": "0.5", "cacheWrite": "1", "currency": "USD"},
        )
        task = await new_task(client, "Priced work")

        async def working() -> bool:
            return host.tasks.runner.active_run(task["id"]) is not None

        await wait_until(host.bus, working, timeout=10, what="the run to start")
        assert (await detail(client, task["id"]))["modelPriced"] is True
        await client.post(f"/api/tasks/{task['id']}/stop")


async def test_a_rejected_key_is_said_in_chinese_to_a_chinese_conversation_and_detail(
    host: Host, script: SessionScript, tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    script.add("查 GPU 价格", [Reply.error(401)])
    async with running_api(host) as client:
        task = await new_task(client, "查 GPU 价格")
        await wait_stage(host, client, task["id"], "failed")
        zh = await detail(client, task["id"], "zh")
        assert "拒绝了 API Key" in zh["runs"][0]["error"]
        assert zh["latestLine"].startswith("模型服务")
        en = await detail(client, task["id"], "en")
        assert "rejected the API key" in en["runs"][0]["error"]
        cid = task["conversationId"]

        async def told() -> bool:
            return any("拒绝了 API Key" in m["text"] for m in await messages(client, cid))

        await wait_until(host.bus, told, timeout=10, what="the failure in the conversation, in Chinese")
        texts = [m["text"] for m in await messages(client, cid)]
        assert not any("rejected the API key" in text for text in texts)

    # The reason in each language is stored with the run: after a restart it still reads in Chinese.
    again = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(again) as client:
        zh = await detail(client, task["id"], "zh")
        assert "拒绝了 API Key" in zh["runs"][0]["error"]
        assert zh["latestLine"].startswith("模型服务")

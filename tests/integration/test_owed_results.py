"""A run's result is owed from the moment the run ends: the delivery commits with the run's end, so a host
that dies right after it still delivers the result, once, on its next start (docs/recovery.md)."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.orm import Session

from core.host import Host
from core.store import deliveries as delivery_rows
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.integration.host_fixtures import make_host, running_api
from tests.integration.task_script import SessionScript, bash, report
from tests.integration.test_tasks import messages, new_task, wait_stage
from tests.waiting import wait_until


async def test_a_result_whose_host_died_before_sending_it_is_delivered_once_on_the_next_start(
    tmp_path: Path, model_server: ScriptedModelServer, script: SessionScript, home: Path
) -> None:
    data_dir = tmp_path / "data"
    first = make_host(data_dir, model_server.base_url, home=home)
    script.add(
        "Count the files",
        [bash("ls | wc -l"), report("done", message="There are 3 files."), Reply.text("ok")],
    )

    async def never_sends() -> int:
        return 0

    async def never_pushes(**_: object) -> bool:
        return False

    async with running_api(first) as client:
        # The host dies right after committing the run's end: nothing the outbox would do next happens.
        first.outbox.flush = never_sends  # type: ignore[method-assign]
        first.outbox.push = never_pushes  # type: ignore[method-assign]
        task = await new_task(client, "Count the files")
        done = await wait_stage(first, client, task["id"], "ready")
        run_id = done["runs"][-1]["id"]
        owed = await first.db.read(lambda s: delivery_rows.get_delivery(s, f"{run_id}:result"))
        assert owed is not None and owed.status == "pending" and owed.text == "There are 3 files."
        assert "There are 3 files." not in [m["text"] for m in await messages(client, task["conversationId"])]

    second: Host = make_host(data_dir, model_server.base_url, home=home)
    async with running_api(second) as client:
        shown = [m["text"] for m in await messages(client, task["conversationId"])]
        sent = await second.db.read(lambda s: delivery_rows.get_delivery(s, f"{run_id}:result"))
    assert shown.count("There are 3 files.") == 1
    assert sent is not None and sent.status == "sent"


async def test_a_chat_reply_in_the_history_but_not_in_the_conversation_is_restored_without_asking_again(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    data_dir = tmp_path / "data"
    first = make_host(data_dir, model_server.base_url, home=home)
    model_server.push(Reply.text("Paris."))
    async with running_api(first) as client:
        cid = (await client.post("/api/conversations", json={})).json()["id"]
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "Capital of France?"})
        await wait_until(first.bus, lambda: _replied(client, cid), what="the reply")

        # The host died after the answer reached the history and before the reply was stored.
        def lose_reply(s: Session) -> None:
            s.execute(text("delete from messages where role = 'assistant'"))
            s.execute(text("update messages set state = 'taken' where role = 'user'"))

        await first.db.write(lose_reply)

    second = make_host(data_dir, model_server.base_url, home=home)
    async with running_api(second) as client:
        shown = [(m["role"], m["text"]) for m in await messages(client, cid)]
        states = [m["state"] for m in await messages(client, cid) if m["role"] == "user"]
    assert shown == [("user", "Capital of France?"), ("assistant", "Paris.")]
    assert states == ["answered"]
    assert len(model_server.requests) == 1


async def _replied(client: httpx.AsyncClient, cid: str) -> bool:
    return any(m["role"] == "assistant" for m in await messages(client, cid))


async def test_a_follow_up_arriving_as_its_run_ends_gets_a_run_of_its_own(
    tmp_path: Path, model_server: ScriptedModelServer, script: SessionScript, home: Path
) -> None:
    host = make_host(tmp_path / "data", model_server.base_url, home=home)
    script.add("Sum it", [report("done", message="It is 10."), Reply.text("ok")])
    script.add("Sum it", [report("done", message="Doubled: 20."), Reply.text("ok")])
    async with running_api(host) as client:
        task = await new_task(client, "Sum it")
        done = await wait_stage(host, client, task["id"], "ready")
        ended_run = done["runs"][-1]["id"]
        # The follow-up read the run as working just before it ended.
        host.tasks.runner.active_run = lambda task_id: ended_run  # type: ignore[method-assign]
        r = await client.post(f"/api/tasks/{task['id']}/continue", json={"text": "Now double it."})
        del host.tasks.runner.active_run
        assert r.json()["result"] == "resumed"

        async def answered() -> bool:
            return [x["outcome"] for x in (await client.get(f"/api/tasks/{task['id']}")).json()["runs"]] == [
                "done",
                "done",
            ]

        await wait_until(host.bus, answered, what="a second run for the follow-up")
    assert any("Now double it." in t for t in script.user_texts("Sum it", -1))

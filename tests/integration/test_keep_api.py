"""保留 over the API (docs/retention.md#keep): the folder's deletion date goes and the idle days start
again."""

from __future__ import annotations

import httpx
import pytest

from core.clock import FakeClock
from core.host import Host
from core.store import runs as run_rows
from core.store import tasks as task_rows
from core.store.tasks import TaskRecord
from tests.fakes.model_server import Reply
from tests.integration.task_script import SessionScript, report
from tests.integration.test_tasks import new_task, wait_stage


async def test_keep_clears_the_cleanup_date_and_restarts_the_idle_days(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript, clock: FakeClock
) -> None:
    script.add("Sort photos", [report("done", "sorted", message="Sorted."), Reply.text("ok")])
    task = await new_task(client, "Sort photos")
    await wait_stage(rules_host, client, task["id"], "ready")
    clock.advance(28 * 86_400)
    dated = clock.time() + 3 * 86_400
    await rules_host.db.write(
        lambda s: task_rows.update_task(s, task["id"], now=clock.time(), cleanup_at=dated)
    )
    shown = (await client.get(f"/api/tasks/{task['id']}")).json()
    assert shown["cleanupAt"] == dated

    r = await client.post(f"/api/tasks/{task['id']}/keep")
    assert r.status_code == 200, r.text
    kept = r.json()
    assert kept["cleanupAt"] == 0
    assert kept["idleSince"] == clock.time()
    assert (await client.post("/api/tasks/t_000000000000/keep")).status_code == 404


async def test_a_follow_up_loses_to_an_archive_that_lands_after_it_read_the_task(
    rules_host: Host,
    client: httpx.AsyncClient,
    script: SessionScript,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script.add("Sort photos", [report("done", "sorted", message="Sorted."), Reply.text("ok")])
    task = await new_task(client, "Sort photos")
    await wait_stage(rules_host, client, task["id"], "ready")
    service = rules_host.tasks
    before = await service.reads.task(task["id"])  # what the follow-up read, just before the pass archived it

    async def stale_read(_task_id: str) -> TaskRecord:
        return before

    await rules_host.db.write(
        lambda s: task_rows.update_task(
            s, task["id"], now=clock.time(), archived_at=clock.time(), end_reason="archived"
        )
    )
    monkeypatch.setattr(service.reads, "task", stale_read)
    r = await client.post(f"/api/tasks/{task['id']}/continue", json={"text": "one more thing"})
    assert r.status_code == 409 and "archived" in r.json()["error"]["message"]
    runs = await rules_host.db.read(lambda s: run_rows.runs_of_task(s, task["id"]))
    assert len(runs) == 1  # no new run on a hidden task

"""保留 over the API (P3 §10 `/keep`): the folder's deletion date goes and the idle days start again."""

from __future__ import annotations

import httpx

from core.clock import FakeClock
from core.host import Host
from core.store import tasks as task_rows
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

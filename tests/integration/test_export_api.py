"""Markdown export over the API (docs/retention.md#markdown-export): a task with three runs and a rule's run
log, checked for content and for redaction, and the refusals."""

from __future__ import annotations

import httpx

from core.host import Host
from tests.fakes.model_server import Reply, ToolCallSpec
from tests.integration.host_fixtures import running_api
from tests.integration.rule_api import run_now, wait_ended
from tests.integration.task_script import SessionScript, report
from tests.integration.test_tasks import new_task, wait_stage
from tests.waiting import wait_until

SECRET = "sk-proj-Zq8xT4mW9rB2nC7vK1pL5sD3fG6hJ0aE"


async def export(client: httpx.AsyncClient, path: str, lang: str = "en") -> str:
    r = await client.get(path, params={"lang": lang})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/markdown")
    assert "attachment" in r.headers["content-disposition"]
    return r.text


async def test_a_task_with_three_runs_exports_every_run_and_no_secret(
    host: Host, script: SessionScript
) -> None:
    script.add(
        "Check the deploy",
        [
            Reply.tool_calls([ToolCallSpec("bash", {"command": f"echo OPENAI_API_KEY={SECRET}"})]),
            report("failed", "could not log in", message="The dashboard wants a login."),
            Reply.text("Reported."),
            report("done", "looked again", message="Deploy 41 is healthy."),
            Reply.text("Reported."),
            report("done", "third look", message="Still healthy, and the logs are clean."),
            Reply.text("Reported."),
        ],
    )
    async with running_api(host) as client:
        task = await new_task(client, f"Check the deploy\nThe token is {SECRET}")
        await wait_stage(host, client, task["id"], "failed")
        await client.post(f"/api/tasks/{task['id']}/continue", json={"text": "try the public status page"})
        await wait_stage(host, client, task["id"], "ready")
        await client.post(f"/api/tasks/{task['id']}/continue", json={"text": "and the logs"})

        async def three() -> bool:
            detail = (await client.get(f"/api/tasks/{task['id']}")).json()
            return [r["outcome"] for r in detail["runs"]] == ["failed", "done", "done"]

        await wait_until(host.bus, three, what="three ended runs")
        text = await export(client, f"/api/tasks/{task['id']}/export")
        zh = await export(client, f"/api/tasks/{task['id']}/export", lang="zh")

    assert text.startswith("# Check the deploy")
    assert "The dashboard wants a login." in text
    assert "Deploy 41 is healthy." in text and "Still healthy, and the logs are clean." in text
    assert text.count("\n## Run ") == 3
    assert "echo OPENAI_API_KEY=" in text  # the step is there, its secret is not
    assert SECRET not in text and SECRET not in zh
    assert "## 第 1 次" in zh and "## 第 3 次" in zh


async def test_a_rules_run_log_exports_with_its_words_and_schedule(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    body = {
        "title": "X price",
        "instruction": "看看 X 的价格,低于 200 告诉我",
        "schedule": {"kind": "daily", "time": "08:00", "tz": "Asia/Shanghai"},
    }
    rule = (await client.post("/api/rules", json=body)).json()
    script.add("rule:X price", [report("done", "checked", message="X 降价了,现在 ¥199"), Reply.text("ok")])
    await run_now(client, rule["id"])
    await wait_ended(rules_host, client, rule["id"])
    text = await export(client, f"/api/rules/{rule['id']}/export", lang="zh")
    assert text.startswith("# X price")
    assert "看看 X 的价格,低于 200 告诉我" in text
    assert "每天 08:00" in text
    assert "X 降价了,现在 ¥199" in text


async def test_export_refuses_unknown_ids_and_languages(host: Host) -> None:
    async with running_api(host) as client:
        assert (await client.get("/api/tasks/t_000000000000/export")).status_code == 404
        assert (await client.get("/api/rules/ru_000000000000/export")).status_code == 404
        task = await new_task(client, "Anything")
        r = await client.get(f"/api/tasks/{task['id']}/export", params={"lang": "fr"})
        assert r.status_code == 400 and "lang" in r.json()["error"]["message"]

"""Cost controls end to end (docs/cost.md): the real host, a real SQLite file and the scripted model over
HTTP.

The scripted model is priced with an override of $4 per million input tokens (nothing for output), so a
response that reports 100,000 prompt tokens costs exactly $0.40."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest

from core.clock import FakeClock
from core.cost.balance import BalanceReading, read_balance
from core.host import Host
from core.store import rules as rule_rows
from tests.fakes.balance_server import FakeBalanceServer
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.host_fixtures import make_host, running_api
from tests.integration.rule_api import messages, run_log, run_now, wait_ended
from tests.integration.task_script import SessionScript
from tests.integration.test_tasks import get_task, new_task, wait_stage
from tests.waiting import wait_until

PRICE = {"input": 4, "output": 0, "cacheRead": 0, "cacheWrite": 0, "currency": "USD"}
FORTY_CENTS = (100_000, 0)


def step(command: str, usage: tuple[int, int] = FORTY_CENTS) -> Reply:
    return Reply.tool_calls([ToolCallSpec("bash", {"command": command})], usage=usage)


def reported(state: str, message: str = "", usage: tuple[int, int] = (10, 0)) -> Reply:
    fields = {"state": state, "summary": "did it", **({"message": message} if message else {})}
    return Reply.tool_calls([ToolCallSpec("task_report", fields)], usage=usage)


async def price_the_model(client: httpx.AsyncClient) -> None:
    r = await client.put("/api/prices/fake-model", json=PRICE)
    assert r.status_code == 200, r.text


async def attention(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    return list((await client.get("/api/attention", params={"lang": "en"})).json()["items"])


async def test_a_task_stops_at_its_budget_asks_and_goes_on_when_given_more(
    host: Host, script: SessionScript
) -> None:
    """A $1 budget at $0.40 a step: the third step crosses it (docs/cost.md#task-budget)."""
    script.add(
        "Compile the report",
        [step("echo one"), step("echo two"), step("echo three"), reported("done", "The report is ready.")],
    )
    async with running_api(host) as client:
        await price_the_model(client)
        task = await new_task(client, "Compile the report")
        stopped = await wait_stage(host, client, task["id"], "needs-you/budget")
        assert stopped["spentUsd"] == pytest.approx(1.20)
        assert stopped["budgetUsd"] == 1.0
        assert [r["outcome"] for r in stopped["runs"]] == ["budget"]
        assert stopped["runs"][0]["costUsd"] == pytest.approx(1.20)
        # No fourth request: the turn was cancelled at the budget.
        assert len(script.requests["Compile the report"]) == 3

        item_id = f"task_budget:{task['id']}"
        items = {i["id"]: i for i in await attention(client)}
        assert items[item_id]["options"] == ["Continue", "Stop"]
        cid = task["conversationId"]

        async def asked() -> bool:
            return any("used about $1.20" in m["text"] for m in await messages(client, cid))

        await wait_until(host.bus, asked, what="the budget question in the conversation")

        r = await client.post(f"/api/attention/{item_id}/answer", json={"answer": "1"})
        assert r.status_code == 200, r.text
        assert r.json()["result"] == "added"
        done = await wait_stage(host, client, task["id"], "ready")
        assert done["budgetUsd"] == pytest.approx(2.0)
        assert [r["outcome"] for r in done["runs"]] == ["budget", "done"]
        assert done["runs"][1]["cause"] == "continue"
        assert item_id not in {i["id"] for i in await attention(client)}
        # The session stayed usable: the continuing run picked up where the first left off.
        assert any("raised this task's budget" in t for t in script.user_texts("Compile the report", 3))


async def test_a_written_amount_adds_that_much_and_stop_stops(host: Host, script: SessionScript) -> None:
    script.add("Scan the logs", [step("ls"), step("ls"), step("ls"), step("ls"), step("ls"), step("ls")])
    async with running_api(host) as client:
        await price_the_model(client)
        task = await new_task(client, "Scan the logs")
        await wait_stage(host, client, task["id"], "needs-you/budget")
        item_id = f"task_budget:{task['id']}"
        r = await client.post(f"/api/attention/{item_id}/answer", json={"answer": "再给 0.5 美元"})
        assert r.status_code == 200, r.text
        # $1.20 spent, $1.50 budget: one more $0.40 step crosses it again and it asks again.
        again = await wait_stage(host, client, task["id"], "needs-you/budget")
        assert again["budgetUsd"] == pytest.approx(1.5)
        assert again["spentUsd"] == pytest.approx(1.6)
        # A total sets the budget: $2.00, so one more $0.40 step and it asks again.
        r = await client.post(f"/api/attention/{item_id}/answer", json={"answer": "加到 2 美元"})
        assert r.status_code == 200, r.text
        third = await wait_stage(host, client, task["id"], "needs-you/budget")
        assert third["budgetUsd"] == pytest.approx(2.0)
        assert third["spentUsd"] == pytest.approx(2.0)
        r = await client.post(f"/api/attention/{item_id}/answer", json={"answer": "不用了,谢谢"})
        assert r.json()["result"] == "stopped"
        assert (await get_task(client, task["id"]))["stage"] == "stopped"


async def test_the_budget_route_raises_or_sets_and_refuses_bad_amounts_changing_nothing(
    host: Host, script: SessionScript
) -> None:
    script.add("Tidy notes", [step("echo a"), step("echo b"), step("echo c"), reported("done", "Tidied.")])
    async with running_api(host) as client:
        await price_the_model(client)
        task = await new_task(client, "Tidy notes", budgetUsd=0.5)
        stopped = await wait_stage(host, client, task["id"], "needs-you/budget")
        assert stopped["spentUsd"] == pytest.approx(0.8)
        for body, field in [
            ({"addUsd": 0}, "addUsd"),
            ({"addUsd": -1}, "addUsd"),
            ({"budgetUsd": 5000}, "budgetUsd"),
            ({"addUsd": 999.9}, "addUsd"),  # the total would pass $1,000
            ({"budgetUsd": 0.5}, "budgetUsd"),  # not above what is spent
            ({"addUsd": "one"}, "addUsd"),
            ({"addUsd": True}, "addUsd"),
            ({"addUsd": 10**400}, "addUsd"),  # valid JSON, no float
            ({}, "budget"),
            ({"addUsd": 1, "budgetUsd": 3}, "budget"),
            ({"addUsd": 1, "extra": 1}, "extra"),
        ]:
            r = await client.post(f"/api/tasks/{task['id']}/budget", json=body)
            assert r.status_code in (400, 422), (body, r.text)
            assert field in r.json()["error"]["message"], (body, r.text)
        unchanged = await get_task(client, task["id"])
        assert (unchanged["budgetUsd"], unchanged["stage"]) == (0.5, "needs-you/budget")
        missing = await client.post("/api/tasks/t_000000000000/budget", json={"addUsd": 1})
        assert missing.status_code == 404

        r = await client.post(f"/api/tasks/{task['id']}/budget", json={"budgetUsd": 3})
        assert r.status_code == 200, r.text
        assert r.json()["budgetUsd"] == 3.0
        done = await wait_stage(host, client, task["id"], "ready")
        assert done["latestLine"] == "Tidied."


async def test_two_raises_at_once_both_count(host: Host, script: SessionScript) -> None:
    script.add("Tidy notes", [step("echo a"), step("echo b"), step("echo c"), reported("done", "Tidied.")])
    async with running_api(host) as client:
        await price_the_model(client)
        task = await new_task(client, "Tidy notes", budgetUsd=0.5)
        await wait_stage(host, client, task["id"], "needs-you/budget")
        # 继续 pressed twice (or answered from two places) at the same moment: both dollars are added.
        await asyncio.gather(
            host.tasks.set_budget(task["id"], add_usd=1.0), host.tasks.set_budget(task["id"], add_usd=1.0)
        )
        assert (await get_task(client, task["id"]))["budgetUsd"] == pytest.approx(2.5)
        too_big = await client.post("/api/tasks", json={"text": "Big", "budgetUsd": 10**400})
        assert too_big.status_code in (400, 422) and "budgetUsd" in too_big.json()["error"]["message"]


async def test_an_unpriced_model_is_never_estimated_and_its_budget_never_triggers(
    host: Host, script: SessionScript
) -> None:
    script.add("Big job", [step("echo a", (900_000, 0)) for _ in range(4)] + [reported("done", "Done.")])
    async with running_api(host) as client:
        task = await new_task(client, "Big job", budgetUsd=0.01)
        done = await wait_stage(host, client, task["id"], "ready")
        assert done["spentUsd"] == 0
        # Four steps, the report, and the turn's closing reply: six responses, none of them priced.
        assert done["unpricedCalls"] == 6
        assert done["runs"][0]["unpricedCalls"] == 6


async def test_a_rule_run_over_its_budget_ends_budget_and_counts_as_a_failure(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript
) -> None:
    await price_the_model(client)
    rule = (
        await client.post(
            "/api/rules",
            json={"title": "Pricey", "instruction": "check X", "schedule": {"kind": "every", "minutes": 60}},
        )
    ).json()
    script.add("rule:Pricey", [step("curl x"), reported("done", "fine")])
    await run_now(client, rule["id"])
    log = await wait_ended(rules_host, client, rule["id"], lang="en")
    assert (log[0]["outcome"], log[0]["costUsd"]) == ("budget", pytest.approx(0.40))
    assert "$0.10" in log[0]["reason"]
    stored = await rules_host.db.read(lambda s: rule_rows.get_rule(s, rule["id"]))
    assert stored is not None and stored.failures_in_row == 1


async def test_a_rule_pauses_at_its_monthly_budget_and_resumes_on_the_first(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript, clock: FakeClock
) -> None:
    await price_the_model(client)
    zone = "Asia/Shanghai"
    body = {
        "title": "Watch X",
        "instruction": "看看 X 的价格",
        "schedule": {"kind": "every", "minutes": 60, "tz": zone},
    }
    rule = (await client.post("/api/rules", json=body)).json()
    # A small month so three runs reach it; each run costs $0.08 (under its own $0.10).
    await rules_host.db.write(
        lambda s: rule_rows.update_rule(s, rule["id"], now=clock.time(), month_budget_usd=0.2)
    )
    eight_cents = (20_000, 0)
    for n in range(3):
        closing = Reply.text("Reported.", usage=(1, 0))
        script.add("rule:Watch X", [reported("done", f"X is at {200 + n}", usage=eight_cents), closing])
        await run_now(client, rule["id"])
        await wait_ended(rules_host, client, rule["id"], count=n + 1)
    paused = (await client.get(f"/api/rules/{rule['id']}")).json()
    assert paused["pausedReason"] == "budget"
    assert paused["monthCostUsd"] == pytest.approx(0.24, abs=0.001)
    items = {i["id"]: i for i in await attention(client)}
    assert "monthly budget" in items[f"rule_paused:{rule['id']}"]["subject"]

    async def pushed_once() -> bool:
        said = [m["text"] for m in await messages(client, rule["conversationId"])]
        return sum("本月预算" in t for t in said) == 1

    await wait_until(rules_host.bus, pushed_once, what="one pushed line for the monthly budget")

    first = datetime.fromtimestamp(clock.time(), ZoneInfo(zone))
    year, month = (first.year + 1, 1) if first.month == 12 else (first.year, first.month + 1)
    the_first = datetime(year, month, 1, tzinfo=ZoneInfo(zone)).timestamp()
    clock.advance(the_first - clock.time() + 1)

    async def resumed() -> bool:
        view = (await client.get(f"/api/rules/{rule['id']}")).json()
        return bool(view["pausedReason"] == "" and view["monthCostUsd"] == 0)

    await wait_until(rules_host.bus, resumed, what="the rule resumed on the 1st")
    assert f"rule_paused:{rule['id']}" not in {i["id"] for i in await attention(client)}
    assert len(await run_log(client, rule["id"])) == 3


async def test_a_rule_failing_a_third_time_at_its_month_budget_pauses_for_the_budget(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript, clock: FakeClock
) -> None:
    await price_the_model(client)
    body = {"title": "Watch Y", "instruction": "看看 Y", "schedule": {"kind": "every", "minutes": 60}}
    rule = (await client.post("/api/rules", json=body)).json()
    await rules_host.db.write(
        lambda s: rule_rows.update_rule(s, rule["id"], now=clock.time(), month_budget_usd=0.24)
    )
    for n in range(3):  # three failures in a row, $0.08 each: the third reaches both limits
        closing = Reply.text("Reported.", usage=(1, 0))
        script.add("rule:Watch Y", [reported("failed", "the page didn't load", usage=(20_000, 0)), closing])
        await run_now(client, rule["id"])
        await wait_ended(rules_host, client, rule["id"], count=n + 1)
    # Paused for the budget, not for the failures: 重试 on a failure pause runs it at once, past the budget.
    paused = (await client.get(f"/api/rules/{rule['id']}")).json()
    assert paused["pausedReason"] == "budget"
    assert await rules_host.rules.resume(rule["id"]) == ""  # 继续 in needs-you: raised, nothing runs now
    assert len(await run_log(client, rule["id"])) == 3
    raised = (await client.get(f"/api/rules/{rule['id']}")).json()
    assert raised["monthBudgetUsd"] == pytest.approx(3.24)


# -- time caps -------------------------------------------------------------------------------------------


async def test_a_task_run_fails_after_4_hours_of_running_time(
    rules_host: Host, client: httpx.AsyncClient, script: SessionScript, clock: FakeClock
) -> None:
    script.add("Endless", [Reply.tool_calls([ToolCallSpec("bash", {"command": "sleep 30"})])])
    task = await new_task(client, "Endless")
    await wait_stage(rules_host, client, task["id"], "working")
    await wait_until(
        rules_host.bus, lambda: _true(len(script.requests["Endless"]) >= 1), what="the task's first request"
    )
    clock.advance(4 * 3600)
    failed = await wait_stage(rules_host, client, task["id"], "failed")
    assert failed["runs"][0]["error"] == "运行超过 4 小时,已停下"


async def test_a_rule_run_fails_after_15_minutes(
    rules_host: Host,
    client: httpx.AsyncClient,
    script: SessionScript,
    clock: FakeClock,
    model_server: ScriptedModelServer,
) -> None:
    body = {"title": "Slow", "instruction": "check X", "schedule": {"kind": "every", "minutes": 60}}
    rule = (await client.post("/api/rules", json=body)).json()
    script.add("rule:Slow", [Reply.tool_calls([ToolCallSpec("bash", {"command": "sleep 30"})])])
    await run_now(client, rule["id"])
    await model_server.wait_for_requests(1, timeout=10)
    clock.advance(15 * 60)
    log = await wait_ended(rules_host, client, rule["id"], lang="en")
    assert (log[0]["outcome"], log[0]["reason"]) == ("failed", "运行超过 15 分钟,已停下")


async def _true(value: bool) -> bool:
    return value


# -- the chat reserve ------------------------------------------------------------------------------------


async def test_below_the_reserve_tasks_wait_rules_skip_new_tasks_are_refused_and_one_row_says_so(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, script: SessionScript
) -> None:
    async with FakeBalanceServer() as balances, httpx.AsyncClient() as http:

        async def read(_base_url: str, key: str) -> BalanceReading:
            return await read_balance(http, balances.openrouter_base, key, provider="openrouter")

        host = make_host(tmp_path / "data", model_server.base_url, home=home, balance_read=read)
        balances.limit, balances.usage = 10.0, 1.0
        script.add(
            "Long research",
            [
                Reply.tool_calls([ToolCallSpec("bash", {"command": "sleep 30"})]),
                reported("done", "Found it."),
            ],
        )
        async with running_api(host) as client:
            task = await new_task(client, "Long research")
            await wait_until(
                host.bus, lambda: _true(len(script.requests["Long research"]) >= 1), what="the first request"
            )
            balances.usage = 9.0  # $1 of $10 left: under 20 %
            await host.reserve.refresh()
            parked = await wait_stage(host, client, task["id"], "working/queued")
            assert [r["outcome"] for r in parked["runs"]] == ["interrupted", ""]

            refused = await client.post("/api/tasks", json={"text": "Another one"})
            assert refused.status_code == 409
            assert "kept for chat" in refused.json()["error"]["message"]
            rows = [i for i in await attention(client) if i["kind"] == "reserve_low"]
            assert len(rows) == 1 and rows[0]["actions"] == ["open"]

            body = {"title": "Check", "instruction": "check X", "schedule": {"kind": "every", "minutes": 60}}
            rule = (await client.post("/api/rules", json=body)).json()
            await run_now(client, rule["id"])
            log = await wait_ended(host, client, rule["id"])
            assert (log[0]["outcome"], log[0]["line"]) == ("skipped", "跳过:机器人预算留给聊天")

            balances.usage = 2.0  # topped up
            await host.reserve.refresh()
            done = await wait_stage(host, client, task["id"], "ready")
            assert done["latestLine"] == "Found it."
            assert not [i for i in await attention(client) if i["kind"] == "reserve_low"]

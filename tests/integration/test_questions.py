"""Questions from tasks (docs/attention.md#questions): asked at once; with a default the run
goes on and an answer is steered in; finishing first withdraws it; without a default the task waits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from core.errors import InvalidInputError
from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.integration.host_fixtures import make_host, running_api
from tests.integration.task_script import SessionScript, bash, report
from tests.integration.test_tasks import get_task, messages, new_task, wait_stage
from tests.waiting import wait_until

PRICE_QUESTION = {"question": "包月价还是按小时价?", "options": ["包月价", "按小时价"]}


async def asked(host: Host, client: httpx.AsyncClient, cid: str, words: str) -> None:
    async def pushed() -> bool:
        return any(words in m["text"] for m in await messages(client, cid))

    await wait_until(host.bus, pushed, what=f"the question {words!r} in the conversation")


async def test_with_a_default_the_run_goes_on_and_the_answer_is_steered_in(
    host: Host, script: SessionScript
) -> None:
    script.add(
        "Compare GPU prices",
        [
            report("needs_you", "need the pricing basis", default="包月价", **PRICE_QUESTION),
            bash("while [ ! -f gate ]; do sleep 0.01; done; echo compared"),
            report("done", "compared hourly", message="按小时价比较好了。"),
        ],
    )
    async with running_api(host) as client:
        task = await new_task(client, "Compare GPU prices")
        cid = task["conversationId"]
        await asked(host, client, cid, "包月价还是按小时价?")
        detail = await wait_stage(host, client, task["id"], "working/asking")
        shown = [m["text"] for m in await messages(client, cid)][-1]
        assert "Options: 包月价 / 按小时价" in shown and "If you don't answer, I'll go with 包月价." in shown
        [question] = await host.tasks.open_questions()
        assert (question.default, len(question.code)) == ("包月价", 4)

        assert await host.tasks.answer(question.id, "2") == "steered"
        (Path(detail["folder"]) / "gate").write_text("go")
        done = await wait_stage(host, client, task["id"], "ready")
        assert [r["cause"] for r in done["runs"]] == ["launch"]  # one run: the answer joined it
        answered = [t for t in script.user_texts("Compare GPU prices", -1) if "The user answered" in t]
        assert len(answered) == 1 and "按小时价" in answered[0]
        assert await host.tasks.open_questions() == []


async def test_finishing_first_goes_with_the_default_and_withdraws_the_question(
    host: Host, script: SessionScript
) -> None:
    script.add(
        "Compare GPU prices",
        [
            report("needs_you", "need the pricing basis", default="包月价", **PRICE_QUESTION),
            report("done", "went monthly", message="按包月价比较的,要按小时价的话说一声。"),
        ],
    )
    async with running_api(host) as client:
        task = await new_task(client, "Compare GPU prices")
        await wait_stage(host, client, task["id"], "ready")
        assert await host.tasks.open_questions() == []
        questions = await host.db.read(_all_questions)
        assert questions[0]["decided_by"] == "default"
        # A late answer (e.g. quoting the question later) reaches the task and resumes it.
        script.add("Compare GPU prices", [report("done", "redone hourly", message="按小时价重新比较了。")])
        assert await host.tasks.answer(questions[0]["id"], "按小时价") == "resumed"
        done = await wait_stage(host, client, task["id"], "ready")
        assert [r["cause"] for r in done["runs"]] == ["launch", "answer"]
        late = [t for t in script.user_texts("Compare GPU prices", -1) if "asked earlier" in t]
        assert len(late) == 1 and "包月价" in late[0] and "按小时价" in late[0]


def _all_questions(s: Any) -> list[dict[str, Any]]:
    from sqlalchemy import select

    from core.store.models import ApprovalRow

    return [{"id": r.id, "decided_by": r.decided_by} for r in s.scalars(select(ApprovalRow))]


async def test_without_a_default_the_task_waits_across_a_restart_and_the_answer_resumes_it(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer, script: SessionScript
) -> None:
    login = {"question": "Which account should I log in with?", "options": ["Work", "Personal"]}
    script.add("Check billing", [report("needs_you", "need a login", **login)])
    host = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(host) as client:
        task = await new_task(client, "Check billing")
        await wait_stage(host, client, task["id"], "needs-you/answer")

    script.add("Check billing", [report("done", "checked", message="Billing is fine.")])
    again = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(again) as client:
        [question] = await again.tasks.open_questions()
        with pytest.raises(InvalidInputError, match="answer"):
            await again.tasks.answer(question.id, "   ")
        assert (await get_task(client, task["id"]))["stage"] == "needs-you/answer"
        assert await again.tasks.answer(question.id, "work") == "resumed"
        done = await wait_stage(again, client, task["id"], "ready")
        assert [r["cause"] for r in done["runs"]] == ["launch", "answer"]
        assert any("Answer: Work" in t for t in script.user_texts("Check billing", -1))


async def test_needs_you_lists_the_question_answering_it_resumes_the_task_and_the_item_goes_away(
    host: Host, script: SessionScript
) -> None:
    login = {"question": "Which account should I log in with?", "options": ["Work", "Personal"]}
    script.add("Check billing", [report("needs_you", "need a login", **login)])
    async with running_api(host) as client:
        assert (await client.get("/api/attention")).json() == {"items": [], "count": 0}
        task = await new_task(client, "Check billing")
        await wait_stage(host, client, task["id"], "needs-you/answer")
        items = (await client.get("/api/attention", params={"lang": "en"})).json()["items"]
        [item] = items
        assert (item["kind"], item["taskId"], item["options"]) == (
            "question",
            task["id"],
            ["Work", "Personal"],
        )
        assert item["line"] == "Which account should I log in with?" and "answer" in item["actions"]

        url = f"/api/attention/{item['id']}"
        assert (await client.post(f"{url}/approve")).status_code == 409
        assert (
            await client.post("/api/attention/question:q_nope/answer", json={"answer": "1"})
        ).status_code == 404
        assert (await client.post(f"{url}/answer", json={})).status_code == 422
        assert len((await client.get("/api/attention")).json()["items"]) == 1  # nothing changed

        script.add("Check billing", [report("done", "checked", message="Billing is fine.")])
        r = await client.post(f"{url}/answer", json={"answer": "2"})
        assert r.status_code == 200 and r.json()["result"] == "resumed"
        assert (await client.get("/api/attention")).json()["items"] == []
        await wait_stage(host, client, task["id"], "ready")
        assert any("Answer: Personal" in t for t in script.user_texts("Check billing", -1))


async def test_a_failed_task_is_in_needs_you_and_retry_starts_it_again(
    host: Host, script: SessionScript
) -> None:
    script.add("Fetch report", [report("failed", "site down", message="The site is down.")])
    async with running_api(host) as client:
        task = await new_task(client, "Fetch report")
        await wait_stage(host, client, task["id"], "failed")
        [item] = (await client.get("/api/attention")).json()["items"]
        assert (item["kind"], item["severity"]) == ("task_failed", "error")
        script.add("Fetch report", [report("done", "worked", message="Got the report.")])
        r = await client.post(f"/api/attention/{item['id']}/retry")
        assert r.status_code == 200
        done = await wait_stage(host, client, task["id"], "ready")
        assert [r["cause"] for r in done["runs"]] == ["launch", "retry"]
        assert (await client.get("/api/attention")).json()["items"] == []


async def test_a_recursive_delete_waits_for_approval_in_needs_you_and_runs_once_approved(
    host: Host, script: SessionScript
) -> None:
    script.add(
        "Clean build",
        [
            bash("mkdir -p build/x && rm -rf build && echo removed"),
            report("done", "cleaned", message="Removed build/."),
        ],
    )
    async with running_api(host) as client:
        task = await new_task(client, "Clean build")
        await wait_stage(host, client, task["id"], "needs-you/answer")
        [item] = (await client.get("/api/attention", params={"lang": "en"})).json()["items"]
        assert item["kind"] == "approval" and "rm -rf build" in item["line"]
        assert set(item["actions"]) >= {"approve", "deny"}
        detail = await get_task(client, task["id"])
        assert detail["stageLabel"] == "Waiting for your approval"
        r = await client.post(f"/api/attention/{item['id']}/approve")
        assert r.status_code == 200
        done = await wait_stage(host, client, task["id"], "ready")
        assert "removed" in script.requests["Clean build"][1]["messages"][-1]["content"]
        assert not (Path(done["folder"]) / "build").exists()
        assert (await client.get("/api/attention")).json()["items"] == []


async def test_a_denied_approval_goes_back_to_the_model_as_a_refusal(
    host: Host, script: SessionScript
) -> None:
    script.add(
        "Clean build",
        [
            bash("rm -rf build"),
            report("failed", "not allowed", message="I was not allowed to delete build/."),
        ],
    )
    async with running_api(host) as client:
        task = await new_task(client, "Clean build")
        await wait_stage(host, client, task["id"], "needs-you/answer")
        [item] = (await client.get("/api/attention")).json()["items"]
        assert (await client.post(f"/api/attention/{item['id']}/deny")).status_code == 200
        await wait_stage(host, client, task["id"], "failed")
        refusal = script.requests["Clean build"][1]["messages"][-1]["content"]
        assert "did not approve" in refusal


async def test_one_pushed_question_per_conversation_the_next_waits_until_the_first_is_answered(
    host: Host, script: SessionScript
) -> None:
    script.add("Plan trip", [report("needs_you", "dates?", question="Which weekend, the 6th or the 13th?")])
    script.add("Book dinner", [report("needs_you", "time?", question="Dinner at 7 or at 8?")])
    async with running_api(host) as client:
        trip = await new_task(client, "Plan trip")
        cid = trip["conversationId"]
        await wait_stage(host, client, trip["id"], "needs-you/answer")
        dinner = await new_task(client, "Book dinner", conversationId=cid)
        await wait_stage(host, client, dinner["id"], "needs-you/answer")
        texts = [m["text"] for m in await messages(client, cid)]
        assert any("Which weekend" in t for t in texts)
        assert not any("Dinner at 7" in t for t in texts)  # held: one open question at a time
        assert len((await client.get("/api/attention")).json()["items"]) == 2  # both wait in needs-you

        first = next(q for q in await host.tasks.open_questions() if "weekend" in q.text)
        script.add("Plan trip", [report("done", "booked", message="Trip planned.")])
        await host.tasks.answer(first.id, "the 13th")
        await asked(host, client, cid, "Dinner at 7 or at 8?")


async def _stuck_delivery(host: Host, client: httpx.AsyncClient) -> str:
    """A new conversation with one result whose retries are used up (held, channel down); its id."""
    from core.store import deliveries as delivery_rows

    cid: str = (await client.post("/api/conversations", json={})).json()["id"]
    bot = (await client.get("/api/bots")).json()["bots"][0]["id"]

    def stuck(s: Any) -> None:
        delivery_rows.insert_delivery(
            s, id="r_x:result", bot_id=bot, conversation_id=cid, purpose="result", text="hi", now=1.0
        )
        delivery_rows.set_delivery_status(s, "r_x:result", "held", held_reason="channel_down")

    await host.db.write(stuck)
    return cid


async def test_a_delivery_that_keeps_failing_shows_in_needs_you(host: Host, script: SessionScript) -> None:
    async with running_api(host) as client:
        cid = await _stuck_delivery(host, client)
        [item] = (await client.get("/api/attention")).json()["items"]
        assert (item["kind"], item["conversationId"]) == ("undelivered", cid)
        assert "open" in item["actions"]


async def test_a_stuck_delivery_that_goes_out_announces_that_needs_you_changed(host: Host) -> None:
    """The window's needs-you list re-reads on AttentionChanged; a delivery leaving its 没送达 row behind
    changes no task, so without it the row would stay on screen."""
    from core.changes import AttentionChanged

    async with running_api(host) as client:
        await _stuck_delivery(host, client)
        assert len((await client.get("/api/attention")).json()["items"]) == 1
        seen: list[object] = []
        host.bus.subscribe(seen.append)
        await host.outbox.flush()  # the channel is back: it goes out
        assert (await client.get("/api/attention")).json()["items"] == []
        assert AttentionChanged() in seen


async def test_an_approval_nobody_answers_in_12_hours_fails_the_task(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer, script: SessionScript
) -> None:
    from core.clock import FakeClock
    from tests.integration.test_tasks import advance_when_asleep

    clock = FakeClock()
    host = make_host(tmp_path / "data", model_server.base_url, home=home, clock=clock)
    script.add("Clean build", [bash("rm -rf build")])
    async with running_api(host) as client:
        task = await new_task(client, "Clean build")
        await wait_stage(host, client, task["id"], "needs-you/answer")
        await advance_when_asleep(clock, 12 * 3600)
        failed = await wait_stage(host, client, task["id"], "failed")
        assert failed["runs"][0]["error"] == "批准超时"
        kinds = [i["kind"] for i in (await client.get("/api/attention")).json()["items"]]
        assert kinds == ["task_failed"]  # the approval is gone, the failure waits


async def test_a_held_question_is_withdrawn_with_its_push_when_the_task_finishes_first(
    host: Host, script: SessionScript
) -> None:
    from sqlalchemy import select

    from core.store.models import DeliveryRow

    script.add("Plan trip", [report("needs_you", "dates?", question="Which weekend?")])
    script.add(
        "Book dinner",
        [
            report("needs_you", "time?", question="Dinner at 7 or 8?", options=["7", "8"], default="7"),
            report("done", "booked 7", message="Booked dinner at 7 (you can still change it)."),
        ],
    )
    async with running_api(host) as client:
        trip = await new_task(client, "Plan trip")
        cid = trip["conversationId"]
        await wait_stage(host, client, trip["id"], "needs-you/answer")
        dinner = await new_task(client, "Book dinner", conversationId=cid)
        await wait_stage(host, client, dinner["id"], "ready")
        texts = [m["text"] for m in await messages(client, cid)]
        assert not any("Dinner at 7 or 8?" in t for t in texts)  # held behind the trip question, then dropped
        assert any(t.startswith("Booked dinner at 7") for t in texts)

        def statuses(s: Any) -> dict[str, str]:
            return {r.id: f"{r.status}/{r.held_reason}" for r in s.scalars(select(DeliveryRow))}

        dropped = [v for k, v in (await host.db.read(statuses)).items() if v.startswith("dropped")]
        assert dropped == ["dropped/withdrawn"]
        # Answering the trip question later still works; the dinner question never comes back.
        [trip_q] = await host.tasks.open_questions()
        script.add("Plan trip", [report("done", "ok", message="Trip planned.")])
        await host.tasks.answer(trip_q.id, "the 13th")
        await wait_stage(host, client, trip["id"], "ready")
        assert not any("Dinner at 7 or 8?" in m["text"] for m in await messages(client, cid))


async def test_a_question_with_a_default_stays_open_across_a_restart_and_its_answer_reaches_the_recover_run(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer, script: SessionScript
) -> None:
    script.add(
        "Compare GPU prices",
        [
            report("needs_you", "basis?", default="包月价", **PRICE_QUESTION),
            bash("echo working"),
            Reply.hang(),
        ],
    )
    host = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(host) as client:
        task = await new_task(client, "Compare GPU prices")
        await model_server.wait_until(lambda: len(script.requests["Compare GPU prices"]) >= 3, timeout=10)
        folder = Path((await client.get(f"/api/tasks/{task['id']}")).json()["folder"])

    # The recover run can't finish before the answer is in: it waits for a gate opened after answering.
    script.add(
        "Compare GPU prices",
        [
            bash("while [ ! -f gate ]; do sleep 0.01; done; echo resumed"),
            report("done", "hourly", message="按小时价比较好了。"),
        ],
    )
    again = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(again) as client:
        [question] = await again.tasks.open_questions()
        assert question.default == "包月价"
        await again.tasks.answer(question.id, "按小时价")
        (folder / "gate").write_text("go")
        done = await wait_stage(again, client, task["id"], "ready")
        assert (done["runs"][0]["cause"], done["runs"][0]["outcome"]) == ("launch", "interrupted")
        assert any("按小时价" in t for b in script.requests["Compare GPU prices"][3:] for t in _users(b))


def _users(body: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in body["messages"] if m.get("role") == "user"]


async def test_a_task_waiting_for_approval_gives_its_slot_to_other_work(
    host: Host, script: SessionScript
) -> None:
    # Two background slots per bot: while A waits for a person, B and C both run.
    script.add("A cleans", [bash("rm -rf old"), report("done", "ok", message="A done.")])
    script.add("B works", [Reply.hang()])
    script.add("C works", [Reply.hang()])
    async with running_api(host) as client:
        a = await new_task(client, "A cleans")
        await wait_stage(host, client, a["id"], "needs-you/answer")
        b = await new_task(client, "B works")
        c = await new_task(client, "C works")

        async def both_running() -> bool:
            states = [(await get_task(client, t["id"]))["runs"][0]["state"] for t in (b, c)]
            return states == ["running", "running"]

        await wait_until(host.bus, both_running, what="B and C running while A waits")
        [item] = (await client.get("/api/attention")).json()["items"]
        await client.post(f"/api/attention/{item['id']}/approve")
        done = await wait_stage(host, client, a["id"], "ready")
        assert done["latestLine"] == "A done."


async def test_a_chat_turn_stuck_for_ten_minutes_shows_in_needs_you_until_dismissed(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer, script: SessionScript
) -> None:
    from core.clock import FakeClock

    clock = FakeClock()
    host = make_host(tmp_path / "data", model_server.base_url, home=home, clock=clock)
    script.add("chat", [Reply.hang()])
    async with running_api(host) as client:
        cid = (await client.post("/api/conversations", json={})).json()["id"]
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "hello?"})
        await model_server.wait_for_requests(1)
        clock.advance(9 * 60)
        assert (await client.get("/api/attention")).json()["items"] == []
        clock.advance(2 * 60)
        [item] = (await client.get("/api/attention")).json()["items"]
        assert (item["kind"], item["conversationId"]) == ("stuck_turn", cid)
        assert (await client.post(f"/api/attention/{item['id']}/dismiss")).status_code == 200
        assert (await client.get("/api/attention")).json()["items"] == []


async def test_the_pushed_question_carries_its_card_and_the_card_follows_the_answer(
    host: Host, script: SessionScript
) -> None:
    login = {"question": "Which account should I log in with?", "options": ["Work", "Personal"]}
    script.add("Check billing", [report("needs_you", "need a login", **login)])
    async with running_api(host) as client:
        task = await new_task(client, "Check billing")
        cid = task["conversationId"]
        await wait_stage(host, client, task["id"], "needs-you/answer")
        [asking] = [m for m in await messages(client, cid) if m["question"]]
        card = asking["question"]
        assert (card["kind"], card["options"], card["status"]) == ("question", ["Work", "Personal"], "open")
        script.add("Check billing", [report("done", "ok", message="Billing is fine.")])
        await client.post(f"/api/attention/question:{card['questionId']}/answer", json={"answer": "Work"})
        [asking] = [m for m in await messages(client, cid) if m["question"]]
        assert (asking["question"]["status"], asking["question"]["answer"]) == ("answered", "Work")


async def test_the_chat_agent_asks_the_user_and_its_turn_goes_on_with_the_answer(
    host: Host, script: SessionScript
) -> None:
    from tests.fakes.model_server import ToolCallSpec

    ask = {"question": "Delete the 3 old backups too?", "options": ["Yes", "No"]}
    script.add(
        "chat",
        [
            Reply.tool_calls([ToolCallSpec("ask_user_question", ask)]),
            Reply.text("OK, I will keep the backups."),
        ],
    )
    from core.changes import AttentionChanged, TaskChanged

    notices: list[object] = []
    host.bus.subscribe(notices.append)
    async with running_api(host) as client:
        cid = (await client.post("/api/conversations", json={})).json()["id"]
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "clean up my disk"})
        await asked(host, client, cid, "Delete the 3 old backups too?")
        [item] = (await client.get("/api/attention")).json()["items"]
        assert (item["kind"], item["conversationId"], item["options"]) == ("question", cid, ["Yes", "No"])
        # The window's needs-you list re-reads on this; no task changed.
        assert AttentionChanged() in notices and TaskChanged("") not in notices
        r = await client.post(f"/api/attention/{item['id']}/answer", json={"answer": "2"})
        assert r.status_code == 200

        async def replied() -> bool:
            return any(m["text"] == "OK, I will keep the backups." for m in await messages(client, cid))

        await wait_until(host.bus, replied, what="the chat reply after the answer")
        tool_reply = script.requests["chat"][1]["messages"][-1]["content"]
        assert tool_reply == "The user answered: No"
        [card] = [m["question"] for m in await messages(client, cid) if m["question"]]
        assert (card["status"], card["answer"]) == ("answered", "No")
        assert "ask_user_question" in script.tool_names("chat")

"""Chat end to end through the HTTP API: a real host, a real SQLite file, the scripted model over HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from core.host import Host
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import make_host, running_api
from tests.waiting import wait_until


async def messages(client: httpx.AsyncClient, cid: str) -> list[dict[str, Any]]:
    r = await client.get(f"/api/conversations/{cid}/messages")
    assert r.status_code == 200
    return list(r.json()["messages"])


async def wait_for_roles(
    host: Host, client: httpx.AsyncClient, cid: str, roles: list[str]
) -> list[dict[str, Any]]:
    async def done() -> bool:
        return [m["role"] for m in await messages(client, cid)] == roles

    await wait_until(host.bus, done, timeout=10, what=f"messages {roles} in {cid}")
    return await messages(client, cid)


async def new_conversation(client: httpx.AsyncClient) -> str:
    r = await client.post("/api/conversations", json={})
    assert r.status_code == 201
    return str(r.json()["id"])


async def test_a_message_gets_a_reply_with_its_activity_steps(
    host: Host, model_server: ScriptedModelServer
) -> None:
    model_server.push_many(
        [
            Reply.tool_calls([ToolCallSpec("bash", {"command": "echo 42"})], usage=(100, 10)),
            Reply.text("The answer is 42.", usage=(120, 8)),
        ]
    )
    async with running_api(host) as client:
        cid = await new_conversation(client)
        r = await client.post(f"/api/conversations/{cid}/messages", json={"text": "what is 6*7?"})
        assert r.status_code == 202
        assert r.json()["message"]["role"] == "user"

        user, reply = await wait_for_roles(host, client, cid, ["user", "assistant"])
        assert user["text"] == "what is 6*7?" and user["state"] == "answered"
        assert reply["text"] == "The answer is 42." and reply["state"] == "done"
        assert [s["kind"] for s in reply["steps"]] == ["model", "tool", "model"]
        tool_step = reply["steps"][1]
        assert tool_step["title"] == "bash: echo 42" and "42" in tool_step["detail"] and tool_step["ok"]
        assert (reply["tokensIn"], reply["tokensOut"]) == (220, 18)
        assert reply["durationMs"] >= 0

        convs = (await client.get("/api/conversations")).json()["conversations"]
        assert convs[0]["title"] == "what is 6*7?" and convs[0]["lastLine"] == "The answer is 42."


async def test_the_api_refuses_requests_without_the_token_or_from_a_foreign_host(host: Host) -> None:
    async with running_api(host) as client:
        no_token = await client.get("/api/health", headers={"Authorization": ""})
        assert no_token.status_code == 401
        assert no_token.json()["error"]["code"] == "unauthorized"
        wrong = await client.get("/api/bots", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        foreign = await client.get("/api/health", headers={"Host": "evil.example.com"})
        assert foreign.status_code == 403
        assert (await client.get("/api/health", headers={"Host": "localhost:1234"})).status_code == 200
        health = (await client.get("/api/health")).json()
        assert health["status"] == "ok"
        assert "bubblewrap" in health["sandbox"]  # says plainly whether shell commands are sandboxed


async def test_bad_input_gets_a_clear_error_and_changes_nothing(host: Host) -> None:
    async with running_api(host) as client:
        cid = await new_conversation(client)
        base = f"/api/conversations/{cid}/messages"

        r = await client.post(base, content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
        r = await client.post(base, json={"txt": "typo"})
        assert r.status_code == 400 and r.json()["error"]["message"].startswith("text:")
        r = await client.post(base, json={"text": 5})
        assert r.status_code == 400 and "text" in r.json()["error"]["message"]
        r = await client.post(base, json={"text": "   "})
        assert r.status_code == 400
        r = await client.post("/api/conversations/c_doesnotexist/messages", json={"text": "hi"})
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
        r = await client.get("/api/conversations/c_doesnotexist/messages")
        assert r.status_code == 404
        r = await client.post("/api/conversations", json={"botId": "b_nope"})
        assert r.status_code == 404
        r = await client.post("/api/bots", json={"name": "x", "preset": "root"})
        assert r.status_code == 400 and "preset" in r.json()["error"]["message"]
        r = await client.post("/api/bots", json={"name": "x", "baseUrl": "ftp://x"})
        assert r.status_code == 400 and "baseUrl" in r.json()["error"]["message"]
        r = await client.get("/api/nothing-here")
        assert r.status_code == 404 and "error" in r.json()

        assert await messages(client, cid) == []
        assert len((await client.get("/api/bots")).json()["bots"]) == 1
        assert len((await client.get("/api/conversations")).json()["conversations"]) == 1


async def test_two_conversations_reply_in_parallel_while_one_is_slow(
    host: Host, model_server: ScriptedModelServer
) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]["content"]
        return Reply.hang() if "slow" in last else Reply.text(f"quick answer to {last}")

    model_server.responder = respond
    async with running_api(host) as client:
        slow, fast = await new_conversation(client), await new_conversation(client)
        await client.post(f"/api/conversations/{slow}/messages", json={"text": "a slow question"})
        await model_server.wait_for_requests(1)
        await client.post(f"/api/conversations/{fast}/messages", json={"text": "a fast question"})

        _, reply = await wait_for_roles(host, client, fast, ["user", "assistant"])
        assert reply["text"] == "quick answer to a fast question"
        # The slow one is still working: no reply yet, and it shows as busy.
        assert [m["role"] for m in await messages(client, slow)] == ["user"]
        convs = {c["id"]: c for c in (await client.get("/api/conversations")).json()["conversations"]}
        assert convs[slow]["busy"] and not convs[fast]["busy"]


async def test_messages_in_one_conversation_are_answered_in_order(
    host: Host, model_server: ScriptedModelServer
) -> None:
    model_server.responder = lambda body: Reply.text("re: " + body["messages"][-1]["content"])
    async with running_api(host) as client:
        cid = await new_conversation(client)
        for text in ("one", "two", "three"):
            await client.post(f"/api/conversations/{cid}/messages", json={"text": text})

        async def three_replies() -> bool:
            replies: int = sum(m["role"] == "assistant" for m in await messages(client, cid))
            return replies == 3

        await wait_until(host.bus, three_replies, timeout=10, what="three replies")
        got = await messages(client, cid)
        # Each turn answered in order; the queue kept them serial.
        assert [m["text"] for m in got if m["role"] == "assistant"] == ["re: one", "re: two", "re: three"]
        assert all(m["state"] == "answered" for m in got if m["role"] == "user")
        assert [m["content"] for m in model_server.requests[2].messages if m["role"] == "user"] == [
            "one",
            "two",
            "three",
        ]


async def test_an_unreachable_model_gives_an_error_reply_and_the_host_keeps_running(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer
) -> None:
    host = make_host(tmp_path / "data", "http://127.0.0.1:9/v1", home=home)
    async with running_api(host) as client:
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "hello"})
        got = await wait_for_roles(host, client, cid, ["user", "error"])
        assert "http://127.0.0.1:9/v1" in got[1]["text"] and "base URL" in got[1]["text"]
        assert (await client.get("/api/health")).json()["status"] == "ok"


async def test_a_rejected_key_says_so(host: Host, model_server: ScriptedModelServer) -> None:
    model_server.push(Reply.error(401, message="Incorrect API key provided"))
    async with running_api(host) as client:
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "hello"})
        got = await wait_for_roles(host, client, cid, ["user", "error"])
        assert "rejected the API key" in got[1]["text"]


async def test_api_keys_go_to_the_secret_store_never_the_database(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer
) -> None:
    secrets = MemorySecretStore()
    host = make_host(tmp_path / "data", model_server.base_url, home=home, secrets=secrets)
    async with running_api(host) as client:
        r = await client.post(
            "/api/bots",
            json={
                "name": "DeepSeek",
                "baseUrl": "https://api.deepseek.com/v1",
                "model": "deepseek-chat",
                "apiKey": "sk-secret-value-123",
            },
        )
        assert r.status_code == 201
        bot = r.json()
        assert bot["model"]["hasApiKey"] is True and "sk-secret" not in r.text
        assert "sk-secret-value-123" in secrets.values.values()
    db_bytes = (tmp_path / "data" / "errand.db").read_bytes()
    assert b"sk-secret-value-123" not in db_bytes


async def test_without_a_keyring_a_key_is_refused_plainly_and_nothing_is_created(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer
) -> None:
    host = make_host(
        tmp_path / "data", model_server.base_url, home=home, secrets=MemorySecretStore(available=False)
    )
    async with running_api(host) as client:
        r = await client.post("/api/bots", json={"name": "K", "apiKey": "sk-1"})
        assert r.status_code == 503 and "keyring" in r.json()["error"]["message"]
        assert [b["name"] for b in (await client.get("/api/bots")).json()["bots"]] == ["Errand"]


async def test_conversation_history_survives_a_new_host_on_the_same_data_dir(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer
) -> None:
    model_server.push(Reply.text("Noted: your cat is Miso."))
    host = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(host) as client:
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "my cat is called Miso"})
        await wait_for_roles(host, client, cid, ["user", "assistant"])

    model_server.push(Reply.text("Miso."))
    again = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(again) as client:
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "what is my cat called?"})
        got = await wait_for_roles(again, client, cid, ["user", "assistant", "user", "assistant"])
        assert got[0]["text"] == "my cat is called Miso"
        sent = [
            (m["role"], m.get("content")) for m in model_server.requests[-1].messages if m["role"] != "system"
        ]
        assert sent[:2] == [("user", "my cat is called Miso"), ("assistant", "Noted: your cat is Miso.")]


async def test_a_long_poll_wakes_for_a_reply_stored_while_its_first_read_ran(host: Host) -> None:
    from core.changes import MessagesChanged
    from core.store import messages as msg_rows

    async with running_api(host) as client:
        cid = (await client.post("/api/conversations", json={})).json()["id"]
        read = host.chat.list_messages
        calls = 0

        async def read_then_reply_lands(conversation_id: str) -> Any:
            nonlocal calls
            calls += 1
            seen = await read(conversation_id)
            if calls == 1:  # the reply is stored, and announced, just after this read
                await host.db.write(
                    lambda s: msg_rows.insert_message(
                        s, conversation_id=cid, role="assistant", text="late", state="done", now=1.0
                    )
                )
                host.bus.publish(MessagesChanged(cid))
            return seen

        host.chat.list_messages = read_then_reply_lands  # type: ignore[method-assign]
        r = await client.get(f"/api/conversations/{cid}/messages", params={"after": 0, "wait": 8})
    assert [m["text"] for m in r.json()["messages"]] == ["late"]

"""Bot settings end to end: the real host and API, a real SQLite file, the scripted model over HTTP, and a
fake Ollama on 127.0.0.1. A paused bot starts no task run and pushes nothing until it is unpaused; a bot's
own slot count keeps its second task queued."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from core.bots.views import BotUpdate
from core.host import Host
from core.store import deliveries as delivery_rows
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import make_host, running_api
from tests.integration.task_script import SessionScript, report
from tests.waiting import wait_until

FULL_UPDATE = {
    "name": "Scout",
    "avatar": "amber",
    "model": {"baseUrl": "https://api.deepseek.com/v1/", "model": "deepseek-chat", "apiKey": "sk-deep"},
    "preset": "read-only",
    "taskSlots": 1,
    "quietHours": {"start": "23:00", "end": "07:00"},
    "paused": True,
}


def free_port() -> int:
    """A port nothing listens on: bound once to learn a free number, then closed."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.fixture
async def ollama() -> AsyncIterator[str]:
    """A fake Ollama answering GET /api/tags, as `ollama serve` does with two models pulled."""

    async def tags(_request: web.Request) -> web.Response:
        return web.json_response(
            {"models": [{"name": "qwen2.5:7b", "size": 1}, {"name": "llama3.2:3b", "size": 2}]}
        )

    app = web.Application()
    app.router.add_get("/api/tags", tags)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def new_bot(client: httpx.AsyncClient, name: str, base_url: str, **body: Any) -> dict[str, Any]:
    r = await client.post(
        "/api/bots", json={"name": name, "baseUrl": base_url, "model": "fake-model", **body}
    )
    assert r.status_code == 201, r.text
    return dict(r.json())


async def new_task(client: httpx.AsyncClient, text: str, bot_id: str) -> dict[str, Any]:
    r = await client.post("/api/tasks", json={"text": text, "botId": bot_id})
    assert r.status_code == 201, r.text
    return dict(r.json())


async def stage_of(client: httpx.AsyncClient, task_id: str) -> str:
    stage: str = (await client.get(f"/api/tasks/{task_id}")).json()["stage"]
    return stage


async def wait_stage(host: Host, client: httpx.AsyncClient, task_id: str, stage: str) -> None:
    async def reached() -> bool:
        return await stage_of(client, task_id) == stage

    await wait_until(host.bus, reached, timeout=10, what=f"task {task_id} at {stage}")


# ---- settings round trip --------------------------------------------------------------------------------


async def test_put_stores_every_setting_and_the_key_in_the_keyring(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer
) -> None:
    secrets = MemorySecretStore()
    host = make_host(tmp_path / "data", model_server.base_url, home=home, secrets=secrets)
    async with running_api(host) as client:
        bot = await new_bot(client, "Helper", model_server.base_url)
        r = await client.put(f"/api/bots/{bot['id']}", json=FULL_UPDATE)
        assert r.status_code == 200, r.text
        shown = r.json()
        assert (shown["name"], shown["avatar"], shown["preset"]) == ("Scout", "amber", "read-only")
        assert shown["model"] == {
            "provider": "openai",
            "baseUrl": "https://api.deepseek.com/v1",
            "model": "deepseek-chat",
            "hasApiKey": True,
        }
        assert shown["taskSlots"] == 1 and shown["quietHours"] == {"start": "23:00", "end": "07:00"}
        assert shown["paused"] is True and shown["configured"] is True
        assert "sk-deep" in secrets.values.values() and "sk-deep" not in r.text
        assert (await client.get(f"/api/bots/{bot['id']}")).json() == shown
        # apiKey "" removes the key; what is left out stays.
        r = await client.put(f"/api/bots/{bot['id']}", json={"model": {"apiKey": ""}, "paused": False})
        assert r.json()["model"]["hasApiKey"] is False and r.json()["name"] == "Scout"
        assert "sk-deep" not in secrets.values.values()

    again = make_host(tmp_path / "data", model_server.base_url, home=home, secrets=secrets)
    async with running_api(again) as client:
        kept = (await client.get(f"/api/bots/{bot['id']}")).json()
        assert (kept["taskSlots"], kept["quietHours"]["start"], kept["avatar"]) == (1, "23:00", "amber")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"colour": "teal"}, "colour"),
        ({"model": {"baseURL": "https://x.example/v1"}}, "model.baseURL"),
        ({"quietHours": {"begin": "22:00"}}, "quietHours.begin"),
        ({"name": ""}, "name"),
        ({"name": 7}, "name"),
        ({"avatar": "pink"}, "avatar"),
        ({"model": {"baseUrl": "ftp://x.example"}}, "baseUrl"),
        ({"model": "deepseek-chat"}, "model"),
        ({"preset": "everything"}, "preset"),
        ({"taskSlots": 9}, "taskSlots"),
        ({"taskSlots": "2"}, "taskSlots"),
        ({"quietHours": {"start": "25:00"}}, "quietHours.start"),
        ({"paused": "yes"}, "paused"),
    ],
)
async def test_a_bad_body_is_a_400_naming_the_field_and_changes_nothing(
    host: Host, body: dict[str, Any], field: str
) -> None:
    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]
        r = await client.put(f"/api/bots/{bot['id']}", json={"name": "Changed", "paused": True, **body})
        assert r.status_code == 400, r.text
        assert r.json()["error"]["message"].startswith(field + ":")
        assert (await client.get("/api/bots")).json()["bots"][0] == bot


async def test_unknown_bots_are_404(host: Host) -> None:
    async with running_api(host) as client:
        assert (await client.put("/api/bots/b_missing", json={"name": "X"})).status_code == 404
        assert (await client.get("/api/bots/b_missing")).status_code == 404
        assert (await client.post("/api/bots/b_missing/test-connection", json={})).status_code == 404


# ---- test connection ------------------------------------------------------------------------------------


async def test_a_connection_test_reaches_the_model_and_explains_failures(
    host: Host, model_server: ScriptedModelServer
) -> None:
    bots = host.bots
    async with running_api(host):
        model_server.push(Reply.text("p"))
        ok = await bots.test_connection(model_server.base_url, "fake-model", api_key="sk-try", lang="en")
        assert ok.ok and "fake-model" in ok.message
        sent = model_server.last_request
        assert sent.headers["authorization"] == "Bearer sk-try"
        assert sent.body["max_tokens"] == 1 and sent.body["stream"] is False

        model_server.push(Reply.error(401))
        wrong_key = await bots.test_connection(model_server.base_url, "fake-model", api_key="sk-bad")
        assert not wrong_key.ok and "API Key" in wrong_key.message

        model_server.push(Reply.error(404, message="The model `gpt-9` does not exist"))
        no_model = await bots.test_connection(model_server.base_url, "gpt-9", api_key="sk", lang="en")
        assert not no_model.ok and "gpt-9" in no_model.message and "/v1" in no_model.message

        # A base URL without /v1 reaches the server's 404 for an unknown path: the same advice.
        no_path = await bots.test_connection(
            f"http://127.0.0.1:{model_server.port}", "fake-model", api_key=""
        )
        assert not no_path.ok and "/v1" in no_path.message

        refused = await bots.test_connection(f"http://127.0.0.1:{free_port()}/v1", "fake-model", lang="en")
        assert not refused.ok and "Can't reach 127.0.0.1" in refused.message


async def test_the_api_tests_the_bots_own_settings_and_stored_key(
    host: Host, model_server: ScriptedModelServer
) -> None:
    async with running_api(host) as client:
        bot = await new_bot(client, "Keyed", model_server.base_url, apiKey="sk-stored")
        model_server.push(Reply.text("p"))
        r = await client.post(f"/api/bots/{bot['id']}/test-connection", params={"lang": "en"})
        assert r.status_code == 200 and r.json()["ok"] is True, r.text
        assert model_server.last_request.headers["authorization"] == "Bearer sk-stored"
        assert model_server.last_request.body["model"] == "fake-model"

        model_server.push(Reply.error(401))
        r = await client.post(f"/api/bots/{bot['id']}/test-connection", json={"apiKey": "sk-typed"})
        assert r.json()["ok"] is False and "API Key" in r.json()["message"]
        assert model_server.last_request.headers["authorization"] == "Bearer sk-typed"

        r = await client.post(f"/api/bots/{bot['id']}/test-connection", json={"baseUrl": "nope"})
        assert r.status_code == 400 and r.json()["error"]["message"].startswith("baseUrl:")
        r = await client.post(f"/api/bots/{bot['id']}/test-connection", json={"token": "x"})
        assert r.status_code == 400 and r.json()["error"]["message"].startswith("token:")


# ---- presets ----------------------------------------------------------------------------------------------


async def test_presets_offer_a_local_ollama_only_when_it_answers(host: Host, ollama: str) -> None:
    async with running_api(host) as client:
        host.bots.presets.ollama_url = ollama
        presets = (await client.get("/api/bots/presets", params={"lang": "en"})).json()["presets"]
        assert [p["key"] for p in presets] == ["deepseek", "openai", "openrouter", "ollama"]
        deepseek = presets[0]
        assert (deepseek["baseUrl"], deepseek["model"], deepseek["needsKey"]) == (
            "https://api.deepseek.com/v1",
            "deepseek-chat",
            True,
        )
        assert deepseek["keyHint"] == "https://platform.deepseek.com/api_keys"
        assert presets[2]["baseUrl"] == "https://openrouter.ai/api/v1"
        local = presets[3]
        assert local["baseUrl"] == f"{ollama}/v1" and local["local"] is True and local["needsKey"] is False
        assert local["models"] == ["qwen2.5:7b", "llama3.2:3b"] and local["model"] == "qwen2.5:7b"

        host.bots.presets.ollama_url = f"http://127.0.0.1:{free_port()}"
        presets = (await client.get("/api/bots/presets")).json()["presets"]
        assert [p["key"] for p in presets] == ["deepseek", "openai", "openrouter"]


# ---- pause and slots in the host --------------------------------------------------------------------------


async def test_a_paused_bot_starts_no_task_run_until_it_is_unpaused(
    host: Host, script: SessionScript, model_server: ScriptedModelServer
) -> None:
    script.add("Held job", [report("done", "ok", message="Held job done.")])
    script.add("Other job", [report("done", "ok", message="Other job done.")])
    async with running_api(host) as client:
        paused = await new_bot(client, "Sleepy", model_server.base_url)
        other = await new_bot(client, "Busy", model_server.base_url)
        r = await client.put(f"/api/bots/{paused['id']}", json={"paused": True})
        assert r.status_code == 200
        held = await new_task(client, "Held job", paused["id"])
        # Queued after the held one: once it has run, the runner has looked at the held run and left it.
        later = await new_task(client, "Other job", other["id"])
        await wait_stage(host, client, later["id"], "ready")
        assert await stage_of(client, held["id"]) == "working/queued"
        assert script.requests["Held job"] == []

        await client.put(f"/api/bots/{paused['id']}", json={"paused": False})
        await wait_stage(host, client, held["id"], "ready")
        assert script.requests["Held job"]


async def test_a_paused_bots_pushes_wait_and_go_when_it_is_unpaused(host: Host) -> None:
    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]
        cid = (await client.post("/api/conversations", json={})).json()["id"]
        await host.bots.update(bot["id"], BotUpdate(paused=True))
        await host.outbox.push(
            delivery_id="note-1", bot_id=bot["id"], conversation_id=cid, purpose="note", text="Prices are in."
        )
        held = await host.db.read(lambda s: delivery_rows.get_delivery(s, "note-1"))
        assert held is not None and (held.status, held.held_reason) == ("held", "paused")
        texts = [
            m["text"] for m in (await client.get(f"/api/conversations/{cid}/messages")).json()["messages"]
        ]
        assert "Prices are in." not in texts

        await host.bots.update(bot["id"], BotUpdate(paused=False))

        async def arrived() -> bool:
            r = await client.get(f"/api/conversations/{cid}/messages")
            return "Prices are in." in [m["text"] for m in r.json()["messages"]]

        await wait_until(host.bus, arrived, what="the held push")


async def test_a_bot_with_one_task_slot_keeps_its_second_task_queued(
    host: Host, script: SessionScript, model_server: ScriptedModelServer
) -> None:
    script.add("First", [Reply.hang()])
    script.add("Second", [report("done", "ok", message="Second done.")])
    script.add("Elsewhere", [report("done", "ok", message="Elsewhere done.")])
    async with running_api(host) as client:
        narrow = await new_bot(client, "Narrow", model_server.base_url)
        other = await new_bot(client, "Other", model_server.base_url)
        await client.put(f"/api/bots/{narrow['id']}", json={"taskSlots": 1})
        first = await new_task(client, "First", narrow["id"])
        await wait_stage(host, client, first["id"], "working")
        second = await new_task(client, "Second", narrow["id"])
        elsewhere = await new_task(client, "Elsewhere", other["id"])
        # Elsewhere was queued after Second; by the time it ran, the runner had looked at Second.
        await wait_stage(host, client, elsewhere["id"], "ready")
        assert await stage_of(client, second["id"]) == "working/queued"

        # A second slot lets it start without anything else happening.
        await client.put(f"/api/bots/{narrow['id']}", json={"taskSlots": 2})
        await wait_stage(host, client, second["id"], "ready")
        assert await stage_of(client, first["id"]) == "working"

"""A WeChat channel through the real host and its API, against a fake iLink server on 127.0.0.1: added
with a QR login, connected, its messages answered as chat in the peer's conversation, resumed after a
restart with nothing lost or taken twice, refused clearly on bad input, and removed with its token."""

from __future__ import annotations

from pathlib import Path

from core.channels.wechat.login import token_secret_name
from tests.fakes.fake_ilink import FakeILink
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import running_api
from tests.integration.wechat_fixtures import channel, wechat_host, wechat_messages
from tests.waiting import wait_until


async def test_a_bot_connected_by_qr_answers_wechat_messages_and_resumes_after_a_restart(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    secrets = MemorySecretStore()
    model_server.default_text = "Hi from the bot."
    host = wechat_host(tmp_path, model_server, home, ilink, secrets)
    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        r = await client.post(f"/api/bots/{bot}/channels", json={"kind": "wechat"})
        assert r.status_code == 201
        added = r.json()
        assert added["kind"] == "wechat" and added["login"]["qrcodeUrl"].startswith(ilink.base_url)

        async def connected() -> bool:
            return bool((await channel(client, bot, added["id"]))["status"] == "connected")

        await wait_until(host.bus, connected, timeout=15, what="the channel connected")
        shown = await channel(client, bot, added["id"])
        assert (shown["account"], shown["owner"]) == (ilink.account_id, ilink.owner_id)
        assert secrets.values[token_secret_name(added["id"])] == ilink.token

        ilink.user_says("hello bot")

        async def answered() -> bool:
            return [m["role"] for m in await wechat_messages(client)] == ["user", "assistant"]

        await wait_until(host.bus, answered, timeout=10, what="the WeChat message answered")
        assert (await wechat_messages(client))[0]["text"] == "hello bot"
    await host.stop()

    ilink.user_says("are you there?")  # written while the app was off
    ilink.redeliver(ilink.log[0]["message_id"])  # and the platform sends an old one again
    again = wechat_host(tmp_path, model_server, home, ilink, secrets)
    async with running_api(again) as client:

        async def caught_up() -> bool:
            return [m["text"] for m in await wechat_messages(client) if m["role"] == "user"] == [
                "hello bot",
                "are you there?",
            ] and len(await wechat_messages(client)) == 4

        await wait_until(again.bus, caught_up, timeout=15, what="the message sent while off answered once")
    await again.stop()


async def test_bad_channel_requests_are_refused_and_change_nothing(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore())
    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        cases = [
            ("post", f"/api/bots/{bot}/channels", {"kind": "signal"}, 400, "kind"),
            ("post", f"/api/bots/{bot}/channels", {"kind": "wechat", "extra": 1}, 400, "extra"),
            ("post", f"/api/bots/{bot}/channels", {}, 400, "kind"),
            ("post", "/api/bots/b_nope/channels", {"kind": "wechat"}, 404, ""),
            ("get", f"/api/bots/{bot}/channels/ch_nope", None, 404, ""),
            ("delete", f"/api/bots/{bot}/channels/ch_nope", None, 404, ""),
        ]
        for method, path, body, status, field in cases:
            r = await client.request(method.upper(), path, json=body)
            assert r.status_code == status, (method, path, r.text)
            assert field in r.json()["error"]["message"]
        assert (await client.get(f"/api/bots/{bot}/channels")).json()["channels"] == []


async def test_removing_a_channel_stops_it_and_forgets_its_token(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    secrets = MemorySecretStore()
    host = wechat_host(tmp_path, model_server, home, ilink, secrets)
    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        added = (await client.post(f"/api/bots/{bot}/channels", json={"kind": "wechat"})).json()

        async def connected() -> bool:
            return bool((await channel(client, bot, added["id"]))["status"] == "connected")

        await wait_until(host.bus, connected, timeout=15, what="the channel connected")
        r = await client.delete(f"/api/bots/{bot}/channels/{added['id']}")
        assert r.status_code == 204
        assert (await client.get(f"/api/bots/{bot}/channels")).json()["channels"] == []
        assert secrets.values == {}
        assert not host.channels.is_running(added["id"])  # its connection task is gone
    await host.stop()


async def test_an_expired_login_waits_in_needs_you_until_the_channel_is_signed_in_again(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, ilink: FakeILink
) -> None:
    host = wechat_host(tmp_path, model_server, home, ilink, MemorySecretStore())
    async with running_api(host) as client:
        bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
        added = (await client.post(f"/api/bots/{bot}/channels", json={"kind": "wechat"})).json()

        async def status_is(wanted: str) -> bool:
            return bool((await channel(client, bot, added["id"]))["status"] == wanted)

        await wait_until(host.bus, lambda: status_is("connected"), timeout=15, what="the channel connected")
        assert (await client.get("/api/attention")).json()["items"] == []

        ilink.expire_session = True  # WeChat ends the session (-14)
        await wait_until(host.bus, lambda: status_is("login_expired"), timeout=15, what="the login expired")
        [item] = (await client.get("/api/attention")).json()["items"]
        assert (item["kind"], item["subject"], item["actions"]) == (
            "channel_login",
            "微信登录已过期",
            ["open"],
        )
        english = (await client.get("/api/attention?lang=en")).json()["items"][0]
        assert english["subject"] == "WeChat login expired"
        opened = (await client.post(f"/api/attention/{item['id']}/open", json={})).json()
        assert (opened["channelId"], opened["botId"]) == (added["id"], bot)

        ilink.expire_session = False  # the person scans a new code
        r = await client.post(f"/api/bots/{bot}/channels/{added['id']}/login", json={})
        assert r.status_code == 200 and r.json()["login"]["qrcodeUrl"].startswith(ilink.base_url)
        await wait_until(host.bus, lambda: status_is("connected"), timeout=15, what="signed in again")
        assert (await client.get("/api/attention")).json()["items"] == []

        r = await client.delete(f"/api/bots/{bot}/channels/{added['id']}")
        assert r.status_code == 204
        assert (await client.get("/api/attention")).json()["items"] == []
    await host.stop()

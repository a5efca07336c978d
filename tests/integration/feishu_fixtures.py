"""A real host with a Feishu channel against the fake Feishu server, for the channel's integration tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from core.host import Host
from tests.fakes.fake_feishu import FakeFeishu, Sent
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import make_host
from tests.waiting import wait_until

OWNER = "ou_owner00000000000000000000000001"
FRIEND = "ou_friend0000000000000000000000001"
P2P = "oc_p2p000000000000000000000000001"
GROUP = "oc_group00000000000000000000000001"


def feishu_host(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    feishu: FakeFeishu,
    secrets: MemorySecretStore,
) -> Host:
    return make_host(
        tmp_path / "data",
        model_server.base_url,
        home=home,
        secrets=secrets,
        environ={"ERRAND_FEISHU_DOMAIN": feishu.url},
        gather_s=0.0,  # on the real clock, no 2-minute wait
    )


def app_of(feishu: FakeFeishu, **changes: str) -> dict[str, str]:
    return {
        "kind": "feishu",
        "appId": feishu.app_id,
        "appSecret": feishu.app_secret,
        "domain": "feishu",
    } | changes


async def channel(client: httpx.AsyncClient, bot: str, channel_id: str) -> dict[str, Any]:
    r = await client.get(f"/api/bots/{bot}/channels/{channel_id}")
    assert r.status_code == 200
    return dict(r.json())


async def connect_feishu(client: httpx.AsyncClient, host: Host, feishu: FakeFeishu) -> tuple[str, str]:
    """Connect the fake's app to the default bot, quiet hours off, and wait for the long connection:
    (bot id, channel id)."""
    bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
    r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
    assert r.status_code == 200, r.text
    r = await client.post(f"/api/bots/{bot}/channels", json=app_of(feishu))
    assert r.status_code == 201, r.text
    channel_id = str(r.json()["id"])
    await wait_connected(client, host, bot, channel_id)
    return bot, channel_id


async def wait_connected(client: httpx.AsyncClient, host: Host, bot: str, channel_id: str) -> None:
    async def connected() -> bool:
        return bool((await channel(client, bot, channel_id))["status"] == "connected")

    await wait_until(host.bus, connected, timeout=20, what="the Feishu channel connected")


def words_of(sent: Sent) -> str:
    """What a sent message says: a text's text, or every text of a card."""
    if sent.msg_type == "text":
        return str(sent.content.get("text", ""))
    return " ".join(_texts(sent.content))


def buttons_of(sent: Sent) -> list[tuple[str, dict[str, Any]]]:
    """A card's buttons: (label, value)."""
    found = []
    for element in sent.content.get("elements", []):
        for action in element.get("actions", []) if isinstance(element, dict) else []:
            if action.get("tag") == "button":
                found.append((str(action["text"]["content"]), dict(action.get("value") or {})))
    return found


def _texts(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [str(node["content"])] if isinstance(node.get("content"), str) else []
        for value in node.values():
            if isinstance(value, dict | list):
                found += _texts(value)
        return found
    if isinstance(node, list):
        return [t for item in node for t in _texts(item)]
    return []


async def sent_with(host: Host, feishu: FakeFeishu, words: str, *, timeout: float = 15) -> Sent:
    """Wait until a message with `words` went out on Feishu."""

    async def found() -> bool:
        return any(words in words_of(s) for s in feishu.sent)

    await wait_until(host.bus, found, timeout=timeout, what=f"a Feishu message with {words!r}")
    return next(s for s in feishu.sent if words in words_of(s))

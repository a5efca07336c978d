"""A real host with a WeChat channel against the fake iLink server, for the channel's integration tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from core.clock import Clock, FakeClock
from core.delivery.policy import COALESCE_WINDOW_S
from core.host import Host
from tests.fakes.fake_ilink import FakeILink
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import make_host
from tests.waiting import wait_until


def on_the_clock(ilink: FakeILink, clock: FakeClock) -> None:
    """The platform's 24 h window runs on the host's fake time, and the QR login confirms at once (a wait
    between status polls would sleep on the fake clock)."""
    ilink._now = clock.time
    ilink.qr_script = ["confirmed"]


def wechat_host(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    ilink: FakeILink,
    secrets: MemorySecretStore,
    clock: Clock | None = None,
) -> Host:
    return make_host(
        tmp_path / "data",
        model_server.base_url,
        home=home,
        secrets=secrets,
        clock=clock,
        environ={"ERRAND_WECHAT_BASE_URL": ilink.base_url},
        gather_s=0.0 if clock is None else COALESCE_WINDOW_S,  # on the real clock, no 2-minute wait
    )


async def channel(client: httpx.AsyncClient, bot: str, channel_id: str) -> dict[str, Any]:
    r = await client.get(f"/api/bots/{bot}/channels/{channel_id}")
    assert r.status_code == 200
    return dict(r.json())


async def wechat_conversations(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    conversations = (await client.get("/api/conversations")).json()["conversations"]
    return [c for c in conversations if c["channel"] == "wechat"]


async def wechat_messages(client: httpx.AsyncClient) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for c in await wechat_conversations(client):
        found += (await client.get(f"/api/conversations/{c['id']}/messages")).json()["messages"]
    return found


async def connect_wechat(client: httpx.AsyncClient, host: Host) -> tuple[str, str]:
    """Add a WeChat channel to the default bot and wait until it polls: (bot id, channel id)."""
    bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
    r = await client.post(f"/api/bots/{bot}/channels", json={"kind": "wechat"})
    assert r.status_code == 201, r.text
    channel_id = str(r.json()["id"])

    async def connected() -> bool:
        return bool((await channel(client, bot, channel_id))["status"] == "connected")

    await wait_until(host.bus, connected, timeout=15, what="the channel connected")
    return bot, channel_id

"""A real host with a DingTalk channel against the fake DingTalk, for the channel's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from core.host import Host
from tests.fakes.fake_dingtalk import FakeDingTalk, Sent
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import make_host

OWNER, STRANGER = "manager4242", "stranger9"
GROUP = ("cidGroupAbC+/xyz==", "测试群")


def dingtalk_host(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    dingtalk: FakeDingTalk,
    secrets: MemorySecretStore,
) -> Host:
    return make_host(
        tmp_path / "data",
        model_server.base_url,
        home=home,
        secrets=secrets,
        environ={"ERRAND_DINGTALK_ENDPOINT": dingtalk.endpoint},
        gather_s=0.0,
    )


def app_of(dingtalk: FakeDingTalk, **changes: str) -> dict[str, str]:
    return {"kind": "dingtalk", "appKey": dingtalk.app_key, "appSecret": dingtalk.app_secret, **changes}


async def connect(client: httpx.AsyncClient, dingtalk: FakeDingTalk) -> tuple[str, dict[str, Any]]:
    """The default bot with quiet hours off and a DingTalk channel whose stream is connected."""
    bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
    r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
    assert r.status_code == 200, r.text
    r = await client.post(f"/api/bots/{bot}/channels", json=app_of(dingtalk))
    assert r.status_code == 201, r.text
    await dingtalk.wait_connected(timeout=15)
    return bot, dict(r.json())


async def sent_with(dingtalk: FakeDingTalk, words: str, timeout: float = 15) -> Sent:
    """Wait until a send holding `words` (in its text or its card) reached the fake."""

    def holds(sent: Sent) -> bool:
        return words in sent.text or (sent.card is not None and words in str(sent.card))

    try:
        await dingtalk.wait_until(lambda: any(holds(s) for s in dingtalk.sent), timeout)
    except TimeoutError:
        seen = [(s.via, s.text or s.card_biz_id) for s in dingtalk.sent]
        raise TimeoutError(f"no DingTalk send with {words!r}: {seen}") from None
    return next(s for s in dingtalk.sent if holds(s))


def count(dingtalk: FakeDingTalk, words: str) -> int:
    return sum(1 for s in dingtalk.sent if words in s.text or (s.card is not None and words in str(s.card)))

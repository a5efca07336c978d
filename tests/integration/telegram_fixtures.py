"""A real host with a Telegram channel against the fake Bot API, for the channel's tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from core.host import Host
from tests.fakes.fake_telegram import FakeTelegram, SentMessage
from tests.fakes.model_server import ScriptedModelServer
from tests.fakes.secrets import MemorySecretStore
from tests.integration.host_fixtures import make_host

OWNER, FRIEND = 4242, 777


def telegram_host(
    tmp_path: Path,
    model_server: ScriptedModelServer,
    home: Path,
    telegram: FakeTelegram,
    secrets: MemorySecretStore,
) -> Host:
    return make_host(
        tmp_path / "data",
        model_server.base_url,
        home=home,
        secrets=secrets,
        environ={"ERRAND_TELEGRAM_BASE_URL": telegram.base_url},
        gather_s=0.0,
    )


async def connect(
    client: httpx.AsyncClient, host: Host, telegram: FakeTelegram
) -> tuple[str, dict[str, Any]]:
    bot = (await client.get("/api/bots")).json()["bots"][0]["id"]
    r = await client.put(f"/api/bots/{bot}", json={"quietHours": {"start": "00:00", "end": "00:00"}})
    assert r.status_code == 200, r.text
    r = await client.post(f"/api/bots/{bot}/channels", json={"kind": "telegram", "token": telegram.token})
    assert r.status_code == 201, r.text
    return bot, dict(r.json())


async def sent_with(host: Host, telegram: FakeTelegram, words: str, timeout: float = 15) -> SentMessage:
    """Wait until a message with `words` reached the fake (re-checked as the fake answers calls)."""
    try:
        await telegram.wait_until(lambda: any(words in s.text for s in telegram.sent), timeout)
    except TimeoutError:
        raise TimeoutError(f"no Telegram message with {words!r}: {[s.text for s in telegram.sent]}") from None
    return next(s for s in telegram.sent if words in s.text)


async def pair(host: Host, telegram: FakeTelegram, code: str) -> None:
    telegram.user_says(chat_id=OWNER, user_id=OWNER, text=f"/start {code}")
    await sent_with(host, telegram, "配对好了")

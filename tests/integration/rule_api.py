"""What the rule tests share: a fixed "now" for their fake clock and the REST calls they make."""

from __future__ import annotations

from typing import Any

import httpx

from core.host import Host
from tests.waiting import wait_until

NOW = 1_790_000_000.0
DAILY_8 = {"kind": "daily", "time": "08:00", "tz": "Asia/Shanghai"}


async def run_now(client: httpx.AsyncClient, rule_id: str) -> str:
    r = await client.post(f"/api/rules/{rule_id}/run")
    assert r.status_code == 202, r.text
    return str(r.json()["runId"])


async def run_log(client: httpx.AsyncClient, rule_id: str, **params: str) -> list[dict[str, Any]]:
    r = await client.get(f"/api/rules/{rule_id}/runs", params=params)
    assert r.status_code == 200, r.text
    return list(r.json()["runs"])


async def wait_ended(
    host: Host, client: httpx.AsyncClient, rule_id: str, count: int = 1, lang: str = "zh"
) -> list[dict[str, Any]]:
    """The run log (in `lang`) once at least `count` runs exist and all have ended."""

    async def ended() -> bool:
        log = await run_log(client, rule_id)
        return len(log) >= count and all(r["state"] == "ended" for r in log)

    await wait_until(host.bus, ended, timeout=10, what=f"{count} ended run(s) of {rule_id}")
    return await run_log(client, rule_id, lang=lang)


async def messages(client: httpx.AsyncClient, cid: str) -> list[dict[str, Any]]:
    return list((await client.get(f"/api/conversations/{cid}/messages")).json()["messages"])

"""Building a real Host (real SQLite file, real HTTP to the scripted model) and its API for tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from core.agent.model_config import ModelConfig, RetryPolicy
from core.api.server import ApiServer
from core.bus import EventBus
from core.clock import Clock
from core.cost.reserve import BalanceRead
from core.delivery.policy import COALESCE_WINDOW_S
from core.host import Host
from tests.fakes.secrets import MemorySecretStore

FAST_RETRY = RetryPolicy(delays_s=(0.01, 0.01, 0.01))
TOKEN = "test-token-0123456789"


def make_host(
    data_dir: Path,
    base_url: str,
    *,
    home: Path,
    secrets: MemorySecretStore | None = None,
    clock: Clock | None = None,
    balance_read: BalanceRead | None = None,
    environ: Mapping[str, str] | None = None,
    gather_s: float | None = COALESCE_WINDOW_S,
    bus: EventBus | None = None,
) -> Host:
    """`environ` stands in for the process environment (no test reads the real one): e.g. where WeChat is."""
    return Host(
        data_dir,
        secrets=secrets or MemorySecretStore(),
        model_override=ModelConfig(base_url=base_url, model="fake-model", api_key="sk-test"),
        home=home,
        chat_retry=FAST_RETRY,
        clock=clock,
        balance_read=balance_read,
        environ=environ or {},
        gather_s=gather_s,
        bus=bus,
    )


@asynccontextmanager
async def running_api(host: Host) -> AsyncIterator[httpx.AsyncClient]:
    """Start `host` and its API; yield a client that sends the token."""
    await host.start()
    api = ApiServer(host, token=TOKEN)
    url = await api.start()
    try:
        async with httpx.AsyncClient(
            base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10
        ) as client:
            yield client
    finally:
        await api.stop()
        await host.stop()

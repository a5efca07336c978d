"""A fake provider balance API on 127.0.0.1 for the chat reserve's tests.

It answers the two balance endpoints `core.cost.balance` reads, with values a test sets:

- `GET /api/v1/key` in OpenRouter's shape: `{"data": {"limit", "limit_remaining", "usage", ...}}`
  (`limit = None` is a key without a spending limit);
- `GET /user/balance` in DeepSeek's shape: `{"is_available", "balance_infos": [{"currency",
  "total_balance", ...}]}`.

`key_status` / `balance_status` answer with an error status instead; `key_body` / `balance_body` send that
text verbatim (bad JSON). When `api_key` is set, any other bearer token gets 401. Every request is counted
per path and its Authorization header kept.

    async with FakeBalanceServer() as server:
        server.limit, server.usage = 10.0, 1.8
        reading = await read_balance(client, server.openrouter_base, "sk-test", provider="openrouter")
"""

from __future__ import annotations

import json
from collections import Counter
from types import TracebackType
from typing import Any, Self

from aiohttp import web

__all__ = ["FakeBalanceServer"]

KEY_PATH = "/api/v1/key"
BALANCE_PATH = "/user/balance"


class FakeBalanceServer:
    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        # OpenRouter /key
        self.limit: float | None = 10.0
        self.usage: float = 0.0
        self.limit_remaining: float | None = None  # None: limit - usage (or null when there is no limit)
        self.key_status = 200
        self.key_body: str | None = None
        # DeepSeek /user/balance
        self.is_available = True
        self.balances: list[tuple[str, str]] = [("CNY", "110.00")]
        self.balance_status = 200
        self.balance_body: str | None = None

        self.hits: Counter[str] = Counter()
        self.authorizations: list[str] = []
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("FakeBalanceServer is already running")
        app = web.Application()
        app.router.add_get(KEY_PATH, self._key)
        app.router.add_get(BALANCE_PATH, self._balance)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self._port = int(runner.addresses[0][1])
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        self._port = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    # -- addresses ---------------------------------------------------------------------------------------

    @property
    def origin(self) -> str:
        if self._port is None:
            raise RuntimeError("FakeBalanceServer is not running; call start() first")
        return f"http://127.0.0.1:{self._port}"

    @property
    def openrouter_base(self) -> str:
        """Like https://openrouter.ai/api/v1."""
        return f"{self.origin}/api/v1"

    @property
    def deepseek_base(self) -> str:
        """Like https://api.deepseek.com/v1."""
        return f"{self.origin}/v1"

    @property
    def request_count(self) -> int:
        return sum(self.hits.values())

    # -- handlers ----------------------------------------------------------------------------------------

    def _refused(self, request: web.Request) -> web.Response | None:
        self.hits[request.path] += 1
        auth = request.headers.get("Authorization", "")
        self.authorizations.append(auth)
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            return _error(401, "No auth credentials found")
        return None

    async def _key(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        if self.key_status != 200:
            return _error(self.key_status, "scripted error")
        if self.key_body is not None:
            return web.Response(text=self.key_body, content_type="application/json")
        remaining = self.limit_remaining
        if remaining is None and self.limit is not None:
            remaining = self.limit - self.usage
        data: dict[str, Any] = {
            "label": "sk-or-v1-abc...xyz",
            "limit": self.limit,
            "limit_remaining": remaining,
            "limit_reset": None,
            "usage": self.usage,
            "usage_daily": self.usage,
            "usage_weekly": self.usage,
            "usage_monthly": self.usage,
            "is_free_tier": False,
            "is_provisioning_key": False,
        }
        return web.json_response({"data": data})

    async def _balance(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        if self.balance_status != 200:
            return _error(self.balance_status, "scripted error")
        if self.balance_body is not None:
            return web.Response(text=self.balance_body, content_type="application/json")
        infos = [
            {
                "currency": currency,
                "total_balance": total,
                "granted_balance": "0.00",
                "topped_up_balance": total,
            }
            for currency, total in self.balances
        ]
        return web.json_response({"is_available": self.is_available, "balance_infos": infos})


def _error(status: int, message: str) -> web.Response:
    body = json.dumps({"error": {"code": status, "message": message}})
    return web.Response(status=status, text=body, content_type="application/json")

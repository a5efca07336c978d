"""Reading a bot's provider balance for the chat reserve (issue 7 item 3; docs/cost.md#the-chat-reserve).

Only providers that report a spending limit can protect chat: OpenRouter (`GET /api/v1/key` gives the
key's `limit` and `limit_remaining`). DeepSeek (`GET /user/balance`) shows an account balance but no limit,
so the reserve stays off and says what the balance is. Every other endpoint (OpenAI, a local Ollama, a
custom server) reports nothing and is never asked.

Which provider an endpoint is comes from its host (`core.cost.prices.provider_for`). Nothing here raises for
a provider's problems: a refused key, an unreachable host, a timeout or an answer that is not the expected
JSON all become a reading with `code == "error"` and a reason in plain English.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

from core.cost.prices import provider_for

__all__ = ["TIMEOUT_S", "BalanceCode", "BalanceProblem", "BalanceReading", "read_balance"]

TIMEOUT_S = 10.0

BalanceCode = Literal["ok", "no_limit", "unsupported", "error", "no_key"]
BalanceProblem = Literal["", "key", "http", "network", "timeout", "answer"]

_NAMES: Mapping[str, str] = {"openrouter": "OpenRouter", "deepseek": "DeepSeek"}
_SYMBOLS: Mapping[str, str] = {"USD": "$", "CNY": "¥"}


@dataclass(frozen=True, slots=True)
class BalanceReading:
    """One look at a key's balance.

    `supported` is true only for `code == "ok"`: a limit and what is left of it are known (in USD), so the
    reserve can work. `balance_text` is what the provider showed, formatted (「$8.20」, 「¥110.00」), even
    when the reserve is off. `reason` says in English why it is off (empty when ok). For `code == "error"`,
    `problem` says what went wrong (`key` = refused key, `http` = other HTTP status, `network`, `timeout`,
    `answer` = not the expected JSON) and `status` is the HTTP status when there was one."""

    supported: bool
    code: BalanceCode
    limit_usd: float | None = None
    remaining_usd: float | None = None
    balance_text: str = ""
    reason: str = ""
    provider: str = ""
    problem: BalanceProblem = ""
    status: int | None = None

    @property
    def provider_name(self) -> str:
        """「OpenRouter」, 「DeepSeek」; empty for an endpoint we don't know."""
        return _NAMES.get(self.provider, "")


async def read_balance(
    client: httpx.AsyncClient, base_url: str, api_key: str, *, provider: str | None = None
) -> BalanceReading:
    """The balance behind `api_key` at the model endpoint `base_url`. `provider` overrides the provider
    told by the host (tests point an OpenRouter- or DeepSeek-shaped fake server at 127.0.0.1)."""
    which = provider if provider is not None else provider_for(base_url)
    if which is None or which not in _NAMES:
        return BalanceReading(False, "unsupported", reason="this provider does not report a balance")
    if not api_key.strip():
        return BalanceReading(
            False, "no_key", provider=which, reason="there is no API key to read the balance with"
        )
    origin = _origin(base_url)
    if origin is None:
        return _error(which, "network", f"the base URL {base_url!r} is not a web address")
    url = f"{origin}/api/v1/key" if which == "openrouter" else f"{origin}/user/balance"
    body = await _get_json(client, url, api_key, which)
    if isinstance(body, BalanceReading):
        return body
    parse = _parse_openrouter if which == "openrouter" else _parse_deepseek
    return parse(body) or _error(which, "answer", f"the answer from {_host(url)} is not the expected JSON")


# -- the request -------------------------------------------------------------------------------------------


async def _get_json(client: httpx.AsyncClient, url: str, api_key: str, which: str) -> Any | BalanceReading:
    host = _host(url)
    headers = {"Authorization": f"Bearer {api_key.strip()}", "Accept": "application/json"}
    try:
        response = await client.get(url, headers=headers, timeout=TIMEOUT_S)
    except httpx.TimeoutException:
        return _error(which, "timeout", f"{host} did not answer within {TIMEOUT_S:g} s")
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        return _error(which, "network", f"cannot reach {host} ({type(exc).__name__})")
    status = response.status_code
    if status in (401, 403):
        return _error(which, "key", f"{host} refused the API key (HTTP {status})", status)
    if not 200 <= status < 300:
        return _error(which, "http", f"{host} answered HTTP {status}", status)
    try:
        return json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        return _error(which, "answer", f"the answer from {host} is not JSON", status)


def _error(which: str, problem: BalanceProblem, reason: str, status: int | None = None) -> BalanceReading:
    return BalanceReading(False, "error", provider=which, problem=problem, reason=reason, status=status)


def _origin(base_url: str) -> str | None:
    try:
        parts = urlsplit(base_url.strip())
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}"


def _host(url: str) -> str:
    return urlsplit(url).netloc or url


# -- the answers -------------------------------------------------------------------------------------------


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _parse_openrouter(body: Any) -> BalanceReading | None:
    """`{"data": {"limit": 10 | null, "limit_remaining": 8.2 | null, "usage": 1.8, ...}}`, in USD."""
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict) or "limit" not in data:
        return None
    if data["limit"] is None:
        return BalanceReading(
            False, "no_limit", provider="openrouter", reason="this key has no spending limit"
        )
    limit = _number(data["limit"])
    if limit is None:
        return None
    remaining = _number(data.get("limit_remaining"))
    if remaining is None:
        usage = _number(data.get("usage"))
        if usage is None:
            return None
        remaining = limit - usage
    return BalanceReading(
        True,
        "ok",
        limit_usd=limit,
        remaining_usd=remaining,
        balance_text=_money(Decimal(str(max(remaining, 0.0))), "USD"),
        provider="openrouter",
    )


def _parse_deepseek(body: Any) -> BalanceReading | None:
    """`{"is_available": true, "balance_infos": [{"currency": "CNY", "total_balance": "110.00", ...}]}`:
    a balance per currency and no limit."""
    infos = body.get("balance_infos") if isinstance(body, dict) else None
    if not isinstance(infos, list):
        return None
    shown: list[str] = []
    for info in infos:
        if not isinstance(info, dict):
            return None
        currency, total = info.get("currency"), info.get("total_balance")
        if (
            not isinstance(currency, str)
            or isinstance(total, bool)
            or not isinstance(total, str | int | float)
        ):
            return None
        try:
            amount = Decimal(str(total).strip())
        except InvalidOperation:
            return None
        if not amount.is_finite():
            return None
        shown.append(_money(amount, currency.strip().upper()))
    return BalanceReading(
        False,
        "no_limit",
        balance_text=" / ".join(shown),
        provider="deepseek",
        reason="the provider shows a balance but no spending limit",
    )


def _money(amount: Decimal, currency: str) -> str:
    text = f"{amount.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):,}"
    symbol = _SYMBOLS.get(currency)
    return f"{symbol}{text}" if symbol else f"{text} {currency}"

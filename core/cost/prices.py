"""Price one model call (issue 7 item 1). Pure: no I/O, no network, no store.

Prices come from the user's override for the model when there is one, else from genai-prices' bundled
snapshot (offline; `update_prices` / `UpdatePrices` are never used because they download). The request time
is passed on so time-of-day prices (DeepSeek's off-peak half price) apply. A model neither source knows is
unpriced (`None`, shown as 「未定价」): its budgets never trigger, only the time caps do. So is a model served
on this machine or the local network (Ollama, LM Studio, vLLM at home) unless the user priced it: a
catalogue price for `deepseek-r1:14b` is what the provider charges, not what a local copy costs.

Amounts are estimates (「约」); the provider's bill is authoritative. Different currencies are never added up.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Literal
from urllib.parse import urlsplit

from core.errors import InvalidInputError

# ISO 4217 codes an override may use. Kept short on purpose: the currencies model providers bill in.
CURRENCIES = frozenset({"USD", "CNY", "EUR", "GBP", "JPY", "HKD", "SGD", "KRW", "INR", "CAD", "AUD", "CHF"})
_SYMBOLS: Mapping[str, str] = {"USD": "$", "CNY": "¥", "EUR": "€", "GBP": "£", "JPY": "JP¥"}
_PER_MILLION = Decimal(1_000_000)
_CENT = Decimal("0.01")

# Host of a model endpoint -> genai-prices provider id. Anything else is matched by the model's name.
_PROVIDER_HOSTS: Mapping[str, str] = {
    "api.deepseek.com": "deepseek",
    "api.openai.com": "openai",
    "openrouter.ai": "openrouter",
    "api.openrouter.ai": "openrouter",
}

Lang = Literal["zh", "en"]


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one model call. `input_tokens` is all input, cache reads and writes included (as the Chat
    Completions usage and genai-prices count it); the cache counts say how much of it was priced as cache."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __post_init__(self) -> None:
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.cache_read_tokens + self.cache_write_tokens > self.input_tokens:
            raise ValueError("cache tokens are part of input_tokens and cannot exceed it")


@dataclass(frozen=True, slots=True)
class PriceOverride:
    """The user's own price for a model, per million tokens, in `currency`."""

    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal
    currency: str


@dataclass(frozen=True, slots=True)
class Cost:
    amount: Decimal
    currency: str


def parse_override(data: object) -> PriceOverride:
    """`{"input", "output", "cacheRead", "cacheWrite", "currency"}` from settings JSON or the API.
    Raises InvalidInputError naming the first field that is missing or wrong."""
    if not isinstance(data, Mapping):
        raise InvalidInputError("price", "must be an object: input, output, cacheRead, cacheWrite, currency")
    input_, output = _amount(data, "input"), _amount(data, "output")
    cache_read, cache_write = _amount(data, "cacheRead"), _amount(data, "cacheWrite")
    currency = data.get("currency")
    if not isinstance(currency, str) or currency.strip().upper() not in CURRENCIES:
        raise InvalidInputError("currency", f"must be one of {', '.join(sorted(CURRENCIES))}")
    return PriceOverride(input_, output, cache_read, cache_write, currency.strip().upper())


def _amount(data: Mapping[object, object], key: str) -> Decimal:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise InvalidInputError(key, "must be a price per million tokens")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise InvalidInputError(key, "must be a price per million tokens") from None
    if not amount.is_finite() or amount < 0:
        raise InvalidInputError(key, "must be a number, zero or more")
    return amount


def provider_for(base_url: str) -> str | None:
    """genai-prices provider id for an endpoint; None (custom or local endpoints) matches by model name."""
    try:
        host = (urlsplit(base_url.strip()).hostname or "").lower()
    except ValueError:
        return None
    return _PROVIDER_HOSTS.get(host)


def is_local(base_url: str) -> bool:
    """Whether the endpoint is on this machine or the local network: loopback, private, link-local or a
    `.local` / `.lan` / `.home.arpa` name."""
    try:
        host = (urlsplit(base_url.strip()).hostname or "").lower()
    except ValueError:
        return False
    if host == "localhost" or host.endswith((".localhost", ".local", ".lan", ".home.arpa", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def price(
    model: str,
    base_url: str,
    usage: Usage,
    at: datetime,
    overrides: Mapping[str, PriceOverride],
    configured: str = "",
) -> Cost | None:
    """Estimated cost of one call answered by `model` at `at`, or None when the model has no known price.
    Whose price list applies is told by `base_url` (every endpoint speaks the same OpenAI-compatible API).

    The user's override is looked up by the model name the bot is configured with (`configured`) first:
    the name the server answers with may be a dated variant (`gpt-4o-2024-08-06`) or a local alias."""
    override = overrides.get(configured) if configured else None
    if override is None:
        override = overrides.get(model)
    if override is not None:
        return _override_cost(override, usage)
    if is_local(base_url):
        return None
    return _catalogue_cost(model, provider_for(base_url), usage, at)


def _override_cost(override: PriceOverride, usage: Usage) -> Cost:
    uncached = usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens
    amount = (
        uncached * override.input
        + usage.cache_read_tokens * override.cache_read
        + usage.cache_write_tokens * override.cache_write
        + usage.output_tokens * override.output
    ) / _PER_MILLION
    return Cost(amount, override.currency)


def _catalogue_cost(model: str, provider_id: str | None, usage: Usage, at: datetime) -> Cost | None:
    import genai_prices  # late: ~130 ms and pydantic, only needed once a call has finished

    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)  # genai-prices reads naive times as UTC too; be explicit
    tokens = genai_prices.Usage(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )
    try:
        result = genai_prices.calc_price(tokens, model, provider_id=provider_id, genai_request_timestamp=at)
    except LookupError:  # unknown provider or model: 「未定价」
        return None
    return Cost(Decimal(result.total_price), "USD")  # the bundled snapshot is all in USD


def add_costs(costs: Iterable[Cost | None]) -> dict[str, Decimal]:
    """Totals per currency; unpriced entries are skipped (they are shown as 「未定价」 separately)."""
    totals: dict[str, Decimal] = {}
    for cost in costs:
        if cost is not None:
            totals[cost.currency] = totals.get(cost.currency, Decimal(0)) + cost.amount
    return totals


def format_cost(cost: Cost | None, lang: str) -> str:
    """「约 $0.08」 / "about $0.08"; under a cent 「不到 $0.01」; None 「未定价」 / "not priced"."""
    zh = lang.lower().startswith("zh")
    if cost is None:
        return "未定价" if zh else "not priced"
    symbol = _SYMBOLS.get(cost.currency)

    def money(amount: Decimal) -> str:
        text = f"{amount.quantize(_CENT, rounding=ROUND_HALF_UP):,}"
        return f"{symbol}{text}" if symbol else f"{text} {cost.currency}"

    if Decimal(0) < cost.amount < Decimal("0.005"):
        return f"不到 {money(_CENT)}" if zh else f"under {money(_CENT)}"
    return f"约 {money(cost.amount)}" if zh else f"about {money(cost.amount)}"

"""Pricing one model call: bundled genai-prices offline, the user's overrides, currencies kept apart."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest

from core.cost.prices import (
    Cost,
    PriceOverride,
    Usage,
    add_costs,
    format_cost,
    parse_override,
    price,
    provider_for,
)
from core.errors import InvalidInputError

NOON = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)  # DeepSeek peak: UTC 00:30-16:30 (genai-prices data)
NIGHT = datetime(2026, 1, 5, 18, 0, tzinfo=UTC)  # DeepSeek off-peak: UTC 16:30-00:30
MILLION = 1_000_000
OPENAI = "https://api.openai.com/v1"
DEEPSEEK = "https://api.deepseek.com/v1"
NO_OVERRIDES: dict[str, PriceOverride] = {}
GOOD = {"input": "2", "output": 8, "cacheRead": 0.5, "cacheWrite": "2.5", "currency": "CNY"}


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"network use: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    yield


def test_known_model_priced_per_million_tokens() -> None:
    cost = price("gpt-4o-mini", OPENAI, Usage(MILLION, MILLION), NOON, NO_OVERRIDES)
    assert cost == Cost(Decimal("0.75"), "USD")  # $0.15 in + $0.60 out
    assert format_cost(cost, "zh") == "约 $0.75"
    assert format_cost(cost, "en") == "about $0.75"


def test_deepseek_off_peak_is_half_price_by_request_time() -> None:
    usage = Usage(MILLION, MILLION)
    peak = price("deepseek-chat", DEEPSEEK, usage, NOON, NO_OVERRIDES)
    off = price("deepseek-chat", DEEPSEEK, usage, NIGHT, NO_OVERRIDES)
    assert peak == Cost(Decimal("1.37"), "USD")  # $0.27 + $1.10
    assert off is not None and peak is not None
    assert off.amount * 2 == peak.amount
    # 02:00 in Beijing is 18:00 UTC the day before: off-peak; naive times count as UTC.
    beijing = timezone(timedelta(hours=8))
    early_beijing = datetime(2026, 1, 6, 2, tzinfo=beijing)
    assert price("deepseek-chat", DEEPSEEK, usage, early_beijing, {}) == off
    assert price("deepseek-chat", DEEPSEEK, usage, NOON.replace(tzinfo=None), {}) == peak


def test_cache_tokens_are_priced_at_cache_rates() -> None:
    # gpt-4o-mini cache read $0.075/M: 1M input of which 1M cached costs half the plain input price.
    read = price("gpt-4o-mini", OPENAI, Usage(MILLION, 0, cache_read_tokens=MILLION), NOON, {})
    assert read == Cost(Decimal("0.075"), "USD")
    # claude-sonnet-4 (matched by name on an unknown endpoint): $3 in, $3.75 cache write.
    usage = Usage(MILLION, 0, cache_write_tokens=MILLION // 2)
    write = price("claude-sonnet-4", "https://proxy.example/v1", usage, NOON, {})
    assert write == Cost(Decimal("3.375"), "USD")


def test_unpriced_model_is_none_and_shown_as_such() -> None:
    cost = price("my-local-llama", "http://127.0.0.1:11434/v1", Usage(10, 10), NOON, {})
    assert cost is None
    assert format_cost(None, "zh") == "未定价"
    assert format_cost(None, "en") == "not priced"
    # A model name the provider of that endpoint does not sell is unpriced too, not guessed elsewhere.
    assert price("my-local-llama", DEEPSEEK, Usage(10, 10), NOON, {}) is None


def test_provider_guessed_from_base_url() -> None:
    assert provider_for("https://api.deepseek.com") == "deepseek"
    assert provider_for("https://API.OpenAI.com/v1/") == "openai"
    assert provider_for("https://openrouter.ai/api/v1") == "openrouter"
    assert provider_for("http://localhost:11434/v1") is None
    assert provider_for("not a url") is None
    router = "https://openrouter.ai/api/v1"
    via_router = price("openai/gpt-4o-mini", router, Usage(MILLION, 0), NOON, {})
    assert via_router == Cost(Decimal("0.15"), "USD")


def test_override_wins_over_bundled_price() -> None:
    overrides = {"deepseek-chat": parse_override(GOOD)}
    usage = Usage(2 * MILLION, MILLION, cache_read_tokens=MILLION // 2, cache_write_tokens=MILLION // 2)
    cost = price("deepseek-chat", DEEPSEEK, usage, NIGHT, overrides)
    # 1M uncached x ¥2 + 0.5M x ¥0.5 + 0.5M x ¥2.5 + 1M out x ¥8
    assert cost == Cost(Decimal("11.5"), "CNY")
    assert format_cost(cost, "zh") == "约 ¥11.50"
    # An override also prices a model genai-prices does not know.
    mine = {"my-local-llama": overrides["deepseek-chat"]}
    assert price("my-local-llama", "", Usage(MILLION, 0), NOON, mine) == Cost(Decimal(2), "CNY")


@pytest.mark.parametrize(
    "base_url",
    [
        "http://localhost:11434/v1",
        "http://127.0.0.1:1234/v1",
        "http://[::1]:8000/v1",
        "http://192.168.1.20:11434/v1",
        "http://10.0.0.5:8000/v1",
        "http://gpu-box.local:8000/v1",
    ],
)
def test_a_model_served_locally_is_not_priced_from_the_catalogue(base_url: str) -> None:
    # The catalogue knows these names (as the providers sell them); a copy run at home costs nothing there.
    for model in ("deepseek-r1:14b", "gpt-4o", "deepseek-chat"):
        assert price(model, base_url, Usage(MILLION, MILLION), NOON, {}) is None
    mine = {"deepseek-r1:14b": parse_override(GOOD)}
    assert price("deepseek-r1:14b", base_url, Usage(MILLION, 0), NOON, mine) == Cost(Decimal(2), "CNY")


def test_a_remote_endpoint_is_still_priced() -> None:
    assert price("gpt-4o-mini", OPENAI, Usage(MILLION, 0), NOON, {}) == Cost(Decimal("0.15"), "USD")
    assert price("gpt-4o-mini", "https://llm.example.com/v1", Usage(MILLION, 0), NOON, {}) is not None


def test_an_override_is_found_by_the_configured_name_when_the_server_answers_with_another() -> None:
    mine = {"gpt-4o": parse_override(GOOD)}
    # OpenAI answers a gpt-4o request as a dated variant; the user priced the name they configured.
    cost = price("gpt-4o-2024-08-06", OPENAI, Usage(MILLION, 0), NOON, mine, configured="gpt-4o")
    assert cost == Cost(Decimal(2), "CNY")
    local = {"llama3": parse_override(GOOD)}
    answered = "/models/llama3-8b-q4.gguf"  # llama.cpp answers with its file
    assert price(
        answered, "http://127.0.0.1:8080/v1", Usage(MILLION, 0), NOON, local, configured="llama3"
    ) == (Cost(Decimal(2), "CNY"))


def test_add_costs_keeps_currencies_apart() -> None:
    costs = [Cost(Decimal("0.05"), "USD"), None, Cost(Decimal("0.55"), "CNY"), Cost(Decimal("0.03"), "USD")]
    assert add_costs(costs) == {"USD": Decimal("0.08"), "CNY": Decimal("0.55")}
    assert add_costs([]) == {}
    assert format_cost(Cost(Decimal("0.55"), "CNY"), "zh") == "约 ¥0.55"
    assert format_cost(Cost(Decimal("0.0004"), "USD"), "en") == "under $0.01"
    assert format_cost(Cost(Decimal("1.5"), "HKD"), "en") == "about 1.50 HKD"


@pytest.mark.parametrize("field", ["input", "output", "cacheRead", "cacheWrite", "currency"])
def test_missing_override_field_is_named(field: str) -> None:
    data = {k: v for k, v in GOOD.items() if k != field}
    with pytest.raises(InvalidInputError) as caught:
        parse_override(data)
    assert caught.value.field == field


@pytest.mark.parametrize("field", ["input", "output", "cacheRead", "cacheWrite"])
@pytest.mark.parametrize("bad", [-1, "-0.5", "abc", "NaN", True, None, [1]])
def test_bad_override_amount_is_named(field: str, bad: object) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_override({**GOOD, field: bad})
    assert caught.value.field == field


@pytest.mark.parametrize("bad", ["XYZ", "dollars", "", 840, None])
def test_unknown_currency_is_named(bad: object) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_override({**GOOD, "currency": bad})
    assert caught.value.field == "currency"


def test_override_parsed_and_normalised() -> None:
    parsed = parse_override({**GOOD, "currency": " usd "})
    assert parsed == PriceOverride(Decimal(2), Decimal(8), Decimal("0.5"), Decimal("2.5"), "USD")
    with pytest.raises(InvalidInputError):
        parse_override(["not", "an", "object"])


def test_usage_rejects_impossible_counts() -> None:
    with pytest.raises(ValueError, match="negative"):
        Usage(-1, 0)
    with pytest.raises(ValueError, match="cannot exceed"):
        Usage(10, 0, cache_read_tokens=8, cache_write_tokens=8)

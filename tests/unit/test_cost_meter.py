"""The per-run cost meter: responses priced at the time they came, per currency, unpriced ones counted."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from core.agent import events as ev
from core.clock import FakeClock
from core.cost.meter import CostMeter, RunCost
from core.cost.prices import Cost, parse_override

OVERRIDE = parse_override({"input": 2, "output": 8, "cacheRead": 0.5, "cacheWrite": 2, "currency": "USD"})
YUAN = parse_override({"input": 4, "output": 16, "cacheRead": 1, "cacheWrite": 4, "currency": "CNY"})


def test_an_overridden_model_is_priced_with_cache_reads_at_their_own_rate() -> None:
    meter = CostMeter(FakeClock(), lambda: {"house-model": OVERRIDE})
    cost = meter.price("house-model", "http://127.0.0.1:9/v1", ev.Usage(1_000_000, 100_000, 400_000))
    # 600k uncached at $2, 400k cached at $0.5, 100k out at $8
    assert cost == Cost(Decimal("2.2"), "USD")


def test_an_unknown_model_is_not_priced() -> None:
    meter = CostMeter(FakeClock())
    assert meter.price("scripted-model", "http://127.0.0.1:9/v1", ev.Usage(1000, 100)) is None


def test_deepseek_costs_half_off_peak_by_the_clock() -> None:
    clock = FakeClock()
    meter = CostMeter(clock)
    usage = ev.Usage(1_000_000, 0)
    clock.jump_wall(datetime(2026, 11, 30, 10, 0, tzinfo=UTC).timestamp() - clock.time())
    peak = meter.price("deepseek-chat", "https://api.deepseek.com", usage)
    clock.jump_wall(datetime(2026, 11, 30, 18, 0, tzinfo=UTC).timestamp() - clock.time())
    off_peak = meter.price("deepseek-chat", "https://api.deepseek.com", usage)
    assert peak is not None and off_peak is not None
    assert off_peak.amount == pytest.approx(peak.amount / 2)


def test_a_run_total_keeps_currencies_apart_and_counts_unpriced_calls() -> None:
    meter = CostMeter(FakeClock(), lambda: {"house-model": OVERRIDE, "yuan-model": YUAN})
    total = RunCost()
    for model in ("house-model", "yuan-model", "scripted-model", "house-model"):
        total.add(meter.price(model, "http://127.0.0.1:9/v1", ev.Usage(500_000, 0)))
    assert total.usd == pytest.approx(2.0)
    assert total.other == {"CNY": pytest.approx(2.0)}
    assert total.unpriced_calls == 1


def test_odd_usage_numbers_count_as_unpriced_instead_of_failing() -> None:
    meter = CostMeter(FakeClock(), lambda: {"house-model": OVERRIDE})
    assert meter.price("house-model", "", ev.Usage(-5, 10)) is None

"""What background runs cost as they go (docs/cost.md#the-meter): every model response in a task or rule
session, priced by the model that answered at the time it answered.

The runners feed each `AssistantMessage` to a `RunCost` through `CostMeter.price`; budgets compare only
the USD part, because currencies are never added together and a model with no known price is never
estimated (its budgets never trigger; the time caps still do)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime

from core.agent import events as ev
from core.clock import Clock
from core.cost.prices import Cost, PriceOverride, Usage, price

log = logging.getLogger(__name__)

Overrides = Callable[[], Mapping[str, PriceOverride]]


def reached_budget(spent_usd: float, budget_usd: float) -> bool:
    """Whether a run's (or task's) USD spend has reached its budget. Nothing spent never has (an unpriced
    model's budget never triggers), and a float's last digit never stops a run a call early."""
    return spent_usd > 0 and spent_usd >= budget_usd - 1e-9


@dataclass
class RunCost:
    """The running total of one run (mutable: it grows with each response)."""

    usd: float = 0.0
    other: dict[str, float] = field(default_factory=dict)  # currency -> amount
    unpriced_calls: int = 0

    def add(self, cost: Cost | None) -> None:
        if cost is None:
            self.unpriced_calls += 1
        elif cost.currency == "USD":
            self.usd += float(cost.amount)
        else:
            self.other[cost.currency] = self.other.get(cost.currency, 0.0) + float(cost.amount)


class CostMeter:
    def __init__(self, clock: Clock, overrides: Overrides = dict) -> None:
        self._clock = clock
        self._overrides = overrides
        self._loading: asyncio.Task[None] | None = None

    def price(self, model: str, base_url: str, usage: ev.Usage, configured: str = "") -> Cost | None:
        """The estimated cost of one response; None when the model has no known price. `model` is the name
        the server answered with, `configured` the one the bot asked for (overrides are saved under it)."""
        try:
            tokens = Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=min(usage.cache_read_tokens, usage.input_tokens),
            )
            at = datetime.fromtimestamp(self._clock.time(), UTC)
            return price(model, base_url, tokens, at, self._overrides(), configured)
        except (ValueError, ArithmeticError):
            # A provider's odd usage numbers must never break a run; the call counts as unpriced.
            log.warning("could not price a response of %s (%s)", model, usage)
            return None

    def load_soon(self) -> None:
        """Load the price catalogue in a worker thread, once, when the first run begins: its first response
        comes a model call later and is priced on the loop. Not at start: a chat never prices, and the
        catalogue costs ~150 ms of imports and ~25 MB that every start would pay."""
        if self._loading is None:
            self._loading = asyncio.get_running_loop().create_task(asyncio.to_thread(self.warm_up))

    @staticmethod
    def warm_up() -> None:
        """Load the price catalogue and its first lookup (~150 + 30 ms), so pricing on the loop is quick."""
        price("gpt-4o", "https://api.openai.com/v1", Usage(1, 1), datetime.now(UTC), {})

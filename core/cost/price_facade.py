"""The user's own prices per model, as the desktop and the API see them: `PriceOverrideView` and the
`PriceFacade` the app settings page saves through (implemented by core.cost.price_book.PriceBook).

Amounts are decimal text per million tokens ("0.27", "2"), exact as typed: money never goes through a float
here. The body of `set` is the override JSON `{input, output, cacheRead, cacheWrite, currency}`; numbers or
decimal text are both accepted.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class PriceOverrideView:
    model: str
    input: str  # per million tokens, in `currency`
    output: str
    cache_read: str
    cache_write: str
    currency: str  # ISO 4217, one of core.cost.prices.CURRENCIES

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "currency": self.currency,
        }


class PriceFacade(Protocol):
    async def list(self) -> builtins.list[PriceOverrideView]:
        """Every override, sorted by model."""
        ...

    async def set(self, model: str, data: object) -> PriceOverrideView:
        """Add or replace the model's override. Raises InvalidInputError naming the refused field (`model`,
        `input`, `output`, `cacheRead`, `cacheWrite`, `currency`, or an unknown one); nothing changes then."""
        ...

    async def remove(self, model: str) -> None:
        """Raises NotFoundError for a model with no override."""
        ...

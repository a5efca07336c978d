"""An in-memory PriceFacade for UI tests and renders.

It checks with the real PriceBook's `checked_override`, so a refused field carries the same name and the
stored text is the same ("1.10" is kept as "1.1"). `set_error` / `remove_error`, when set, are raised
instead (nothing changes then); `sets` and `removed` record what went through.
"""

from __future__ import annotations

import builtins

from core.bus import EventBus
from core.changes import PricesChanged
from core.cost.price_book import checked_override, override_view
from core.cost.price_facade import PriceOverrideView
from core.errors import NotFoundError


class FakePriceFacade:
    def __init__(self, bus: EventBus | None = None) -> None:
        self.bus = bus or EventBus()
        self.overrides: dict[str, PriceOverrideView] = {}
        self.sets: builtins.list[tuple[str, object]] = []
        self.removed: builtins.list[str] = []
        self.set_error: Exception | None = None
        self.remove_error: Exception | None = None
        self.list_error: Exception | None = None

    def add(self, model: str, input: str, output: str, currency: str = "USD") -> PriceOverrideView:
        """Set an override directly (no checks, not recorded): a starting state for a test or render."""
        view = PriceOverrideView(model, input, output, input, input, currency)
        self.overrides[model] = view
        return view

    async def list(self) -> builtins.list[PriceOverrideView]:
        if self.list_error is not None:
            raise self.list_error
        return [self.overrides[model] for model in sorted(self.overrides)]

    async def set(self, model: str, data: object) -> PriceOverrideView:
        if self.set_error is not None:
            raise self.set_error
        name, override = checked_override(model, data)
        view = override_view(name, override)
        self.overrides[name] = view
        self.sets.append((name, data))
        self.bus.publish(PricesChanged(name))
        return view

    async def remove(self, model: str) -> None:
        if self.remove_error is not None:
            raise self.remove_error
        name = model.strip()
        if name not in self.overrides:
            raise NotFoundError("price override", name)
        del self.overrides[name]
        self.removed.append(name)
        self.bus.publish(PricesChanged(name))

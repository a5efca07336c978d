"""How a background run's spending is priced and counted: the same for task runs and rule runs
(docs/cost.md)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.cost.meter import CostMeter


@dataclass(frozen=True, slots=True)
class RunSpending:
    """`meter` prices each model response; `on_cost(bot, usd)` hears what a run spent (the chat reserve
    counts it down); `reserve_low(bot)` says the bot's balance is kept for chat, so its runs wait."""

    meter: CostMeter
    on_cost: Callable[[str, float], None]
    reserve_low: Callable[[str], bool]

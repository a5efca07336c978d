"""Money amounts per currency as one text column (`{"CNY": 0.12}`), for the costs that are not in USD:
currencies are never added together, so each keeps its own total."""

from __future__ import annotations

import json
from collections.abc import Mapping


def encode_amounts(amounts: Mapping[str, float]) -> str:
    return json.dumps({k: v for k, v in amounts.items() if v}, sort_keys=True)


def decode_amounts(encoded: str) -> dict[str, float]:
    """As stored; anything unreadable reads as no amounts rather than failing a view."""
    try:
        decoded = json.loads(encoded or "{}")
    except ValueError:
        return {}
    if not isinstance(decoded, dict):
        return {}
    return {str(k): float(v) for k, v in decoded.items() if isinstance(v, int | float)}


def add_amounts(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    total = dict(a)
    for currency, amount in b.items():
        total[currency] = total.get(currency, 0.0) + amount
    return total

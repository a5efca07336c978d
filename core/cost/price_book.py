"""The user's price overrides per model (issue 7 item 1), kept in the `settings` table under one key.

    prices.overrides = {"deepseek-chat": {"input": "0.27", "output": "1.1", "cacheRead": "0.07",
                                          "cacheWrite": "0.27", "currency": "USD"}, ...}

Amounts are stored as decimal text, exact as given. `load()` reads them once at start; `overrides()` then
answers from memory, because the cost meter asks on every model response. Every change is checked in full
before anything is written (a refusal names its field and changes nothing), written in one transaction,
then put in the cache.

A stored value that can't be read (not JSON, not an object, an entry with a missing or negative amount) is
skipped with a warning, never a crash: a hand-edited database must not keep the app from starting. Entries
that can't be read are left in the stored object when another model's price is written.
"""

from __future__ import annotations

import builtins
import logging
import unicodedata
from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType

from sqlalchemy.orm import Session

from core.bus import EventBus
from core.changes import PricesChanged
from core.clock import Clock
from core.cost.price_facade import PriceOverrideView
from core.cost.prices import PriceOverride, parse_override
from core.errors import ConflictError, InvalidInputError, NotFoundError
from core.store import settings as setting_rows
from core.store.database import Database
from core.store.settings import JsonValue

log = logging.getLogger(__name__)

OVERRIDES_KEY = "prices.overrides"
AMOUNT_FIELDS = ("input", "output", "cacheRead", "cacheWrite")
FIELDS = (*AMOUNT_FIELDS, "currency")
MODEL_MAX = 200
MAX_OVERRIDES = 500
# Per million tokens. Above any real price in any of the currencies (o1-pro's output is $600, ~840 000 KRW);
# only there to keep a typo of many zeros out.
MAX_AMOUNT = Decimal(10_000_000)
MAX_PLACES = 10
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})  # control and invisible format characters


def checked_model(model: object) -> str:
    """The model name as stored (trimmed), or InvalidInputError("model", ...)."""
    if not isinstance(model, str):
        raise InvalidInputError("model", "must be a string")
    name = model.strip()
    if not name:
        raise InvalidInputError("model", "is required, e.g. deepseek-chat")
    if len(name) > MODEL_MAX:
        raise InvalidInputError("model", f"must be at most {MODEL_MAX} characters")
    if any(unicodedata.category(ch) in _REFUSED_CATEGORIES for ch in name):
        raise InvalidInputError("model", "must not contain control characters or line breaks")
    return name


def checked_override(model: object, data: object) -> tuple[str, PriceOverride]:
    """Everything `PriceBook.set` checks, before it writes: the name, unknown fields, then each field
    (a missing or negative amount, an unknown currency) through `parse_override`, then the bounds."""
    name = checked_model(model)
    if isinstance(data, Mapping):
        unknown = sorted(str(key) for key in data if key not in FIELDS)
        if unknown:
            others = f" (nor is {', '.join(unknown[1:])})" if len(unknown) > 1 else ""
            raise InvalidInputError(unknown[0], f"is not a price field{others}; use {', '.join(FIELDS)}")
        missing = [field for field in FIELDS if data.get(field) is None]
        if missing:
            what = (
                "a currency such as USD or CNY" if missing[0] == "currency" else "a price per million tokens"
            )
            raise InvalidInputError(missing[0], f"is required: {what}")
    override = parse_override(data)
    for field, amount in zip(AMOUNT_FIELDS, _amounts(override), strict=True):
        if amount > MAX_AMOUNT:
            raise InvalidInputError(field, f"must be at most {MAX_AMOUNT} per million tokens")
        exponent = amount.normalize().as_tuple().exponent
        if isinstance(exponent, int) and exponent < -MAX_PLACES:
            raise InvalidInputError(field, f"must have at most {MAX_PLACES} decimal places")
    return name, override


def decimal_text(amount: Decimal) -> str:
    """Plain decimal text with no exponent and no trailing zeros: "0.27", "2", "1500"."""
    if amount == 0:
        return "0"  # also for -0, which parse_override lets through as not negative
    return format(amount.normalize(), "f")


def override_view(model: str, override: PriceOverride) -> PriceOverrideView:
    return PriceOverrideView(
        model=model,
        input=decimal_text(override.input),
        output=decimal_text(override.output),
        cache_read=decimal_text(override.cache_read),
        cache_write=decimal_text(override.cache_write),
        currency=override.currency,
    )


def _amounts(override: PriceOverride) -> tuple[Decimal, Decimal, Decimal, Decimal]:
    return override.input, override.output, override.cache_read, override.cache_write


def _encoded(override: PriceOverride) -> dict[str, JsonValue]:
    view = override_view("", override)
    return {
        "input": view.input,
        "output": view.output,
        "cacheRead": view.cache_read,
        "cacheWrite": view.cache_write,
        "currency": view.currency,
    }


def _stored(s: Session) -> dict[str, JsonValue]:
    """The stored object as it is; {} when missing or unreadable (said in the log)."""
    try:
        value = setting_rows.get_setting(s, OVERRIDES_KEY)
    except ValueError as exc:
        log.warning("stored price overrides are not JSON; they are ignored: %s", exc)
        return {}
    if value is None:
        return {}
    if not isinstance(value, dict):
        log.warning("stored price overrides are not a JSON object; they are ignored")
        return {}
    return dict(value)


def _readable(stored: Mapping[str, JsonValue]) -> dict[str, PriceOverride]:
    found: dict[str, PriceOverride] = {}
    for model, entry in stored.items():
        try:
            if checked_model(model) != model:
                raise InvalidInputError("model", "has spaces around it")
            found[model] = parse_override(entry)
        except InvalidInputError as exc:
            log.warning("skipping the stored price of %r: %s", model, exc.message)
    return found


class PriceBook:
    """Implements core.cost.price_facade.PriceFacade, plus `load()` and `overrides()` for the cost meter."""

    def __init__(self, db: Database, clock: Clock, bus: EventBus | None = None) -> None:
        self._db = db
        self._clock = clock
        self._bus = bus
        # Replaced, never changed in place, so a mapping handed out by overrides() stays as it was.
        self._cache: dict[str, PriceOverride] = {}

    async def load(self) -> None:
        """Read the overrides into memory; call once the database is open."""
        self._cache = _readable(await self._db.read(_stored))

    def overrides(self) -> Mapping[str, PriceOverride]:
        """The overrides by model, from memory (no I/O): what `core.cost.prices.price` takes."""
        return MappingProxyType(self._cache)

    async def list(self) -> builtins.list[PriceOverrideView]:
        stored = _readable(await self._db.read(_stored))
        return [override_view(model, stored[model]) for model in sorted(stored)]

    async def set(self, model: str, data: object) -> PriceOverrideView:
        name, override = checked_override(model, data)
        now = self._clock.time()

        def write(s: Session) -> None:
            stored = _stored(s)
            if name not in stored and len(stored) >= MAX_OVERRIDES:
                raise ConflictError(f"At most {MAX_OVERRIDES} models can have their own price; remove one.")
            stored[name] = _encoded(override)
            setting_rows.set_setting(s, OVERRIDES_KEY, stored, now)

        await self._db.write(write)
        self._cache = {**self._cache, name: override}
        self._announce(name)
        return override_view(name, override)

    async def remove(self, model: str) -> None:
        name = model.strip() if isinstance(model, str) else ""
        now = self._clock.time()

        def write(s: Session) -> bool:
            stored = _stored(s)
            if name not in stored:
                return False
            del stored[name]
            setting_rows.set_setting(s, OVERRIDES_KEY, stored, now)
            return True

        if not await self._db.write(write):
            raise NotFoundError("price override", name)
        self._cache = {k: v for k, v in self._cache.items() if k != name}
        self._announce(name)

    def _announce(self, model: str) -> None:
        if self._bus is not None:
            self._bus.publish(PricesChanged(model))

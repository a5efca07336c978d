"""Splitting long id lists for `IN (...)` queries: SQLite limits how many parameters one statement takes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

# Well under SQLite's lowest default limit (999 before 3.32), leaving room for a query's other parameters.
IN_CHUNK = 500


def chunked(items: Sequence[T], size: int = IN_CHUNK) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]

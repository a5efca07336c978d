"""Errors the repositories raise, so callers can tell "no such row" from a database failure."""

from __future__ import annotations


class NotFoundError(LookupError):
    """An update named a row that does not exist."""

    def __init__(self, kind: str, id: str | int) -> None:
        super().__init__(f"no {kind} with id {id!r}")
        self.kind = kind
        self.id = id

"""Errors core raises for bad requests. The API maps them to HTTP statuses; the UI shows their message."""

from __future__ import annotations


class ErrandError(Exception):
    code = "error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInputError(ErrandError):
    """The input is malformed or out of range. `field` names what to fix."""

    code = "invalid_input"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class UnprocessableError(InvalidInputError):
    """Well-formed but not acceptable (an answer that is not one of the options): HTTP 422."""

    code = "unprocessable"


class NotFoundError(ErrandError):
    code = "not_found"

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(f"No {kind} with id {ident!r}.")
        self.kind = kind
        self.ident = ident


class ConflictError(ErrandError):
    code = "conflict"


class UnavailableError(ErrandError):
    """A needed service (keyring, model endpoint) is not there; the message says what to do."""

    code = "unavailable"

"""Errors core raises for bad requests. The API maps them to HTTP statuses and sends `message` (English,
stable for scripts); the UI shows `words(lang)`, the catalogue's text when the error carries a `key`
(`error.*` in core's catalogue, filled with `fields`), else the message itself."""

from __future__ import annotations

from collections.abc import Mapping

from core import translations
from core.translations import Language


class ErrandError(Exception):
    code = "error"

    def __init__(self, message: str, *, key: str = "", fields: Mapping[str, object] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.key = key
        self.fields: Mapping[str, object] = dict(fields or {})

    def words(self, lang: Language) -> str:
        """What a person reads, in `lang`; the English message when the catalogue has no words for it."""
        if not self.key or not translations.has_text(self.key):
            return self.message
        return translations.text(lang, self.key, **self.fields)


class InvalidInputError(ErrandError):
    """The input is malformed or out of range. `field` names what to fix."""

    code = "invalid_input"

    def __init__(
        self, field: str, message: str, *, key: str = "", fields: Mapping[str, object] | None = None
    ) -> None:
        super().__init__(f"{field}: {message}", key=key, fields=fields)
        self.field = field


class UnprocessableError(InvalidInputError):
    """Well-formed but not acceptable (an answer that is not one of the options): HTTP 422."""

    code = "unprocessable"


class NotFoundError(ErrandError):
    code = "not_found"

    def __init__(self, kind: str, ident: str) -> None:
        super().__init__(f"No {kind} with id {ident!r}.", key="error.not_found", fields={"ident": ident})
        self.kind = kind
        self.ident = ident

    def words(self, lang: Language) -> str:
        # The kind is a word too ("task" is 任务); a kind the catalogue doesn't know is said as it is.
        kind_key = f"error.kind.{self.kind}"
        kind = translations.text(lang, kind_key) if translations.has_text(kind_key) else self.kind
        return translations.text(lang, self.key, kind=kind, ident=self.ident)


class ConflictError(ErrandError):
    code = "conflict"


class UnavailableError(ErrandError):
    """A needed service (keyring, model endpoint) is not there; the message says what to do."""

    code = "unavailable"

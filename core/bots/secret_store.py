"""Where API keys live. The app provides the OS keyring (or an explicit, opt-in fallback); core only sees
this protocol, so a key never passes through the database, a log or an export."""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class SecretStoreUnavailableError(Exception):
    """No secret backend works here; the message says what the user can do, `key` names its words in
    core's book for the UI."""

    def __init__(self, message: str, key: str = "") -> None:
        super().__init__(message)
        self.key = key


@runtime_checkable
class FileFallback(Protocol):
    """A store that can keep keys in a private file instead, once the person chooses it (no keyring)."""

    async def keep_in_file(self) -> None: ...


class SecretStore(Protocol):
    @property
    def available(self) -> bool: ...

    @property
    def description(self) -> str:
        """Where secrets are kept, or why they cannot be, in words for the user."""
        ...

    async def get(self, name: str) -> str | None: ...

    async def set(self, name: str, value: str) -> None:
        """Raises SecretStoreUnavailableError when no backend works."""
        ...

    async def delete(self, name: str) -> None: ...

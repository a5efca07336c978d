"""An in-memory secret store for tests; `available=False` behaves like a machine without a keyring."""

from __future__ import annotations

from core.bots.secret_store import SecretStoreUnavailableError


class MemorySecretStore:
    def __init__(self, *, available: bool = True) -> None:
        self._available = available
        self.values: dict[str, str] = {}

    @property
    def available(self) -> bool:
        return self._available

    @property
    def description(self) -> str:
        return "in memory (tests)" if self._available else "no keyring (tests)"

    async def get(self, name: str) -> str | None:
        return self.values.get(name)

    async def set(self, name: str, value: str) -> None:
        if not self._available:
            raise SecretStoreUnavailableError("No OS keyring is available here (test double).")
        self.values[name] = value

    async def delete(self, name: str) -> None:
        self.values.pop(name, None)

"""API keys: the OS keyring, or, only when the user opts in, a 0600 file.

keyring silently falls back to a plaintext file when keyrings.alt is installed; we never rely on that
implicitly: a missing Secret Service is reported, and the file store is a choice the user makes, either in
the app (the first-run card and bot settings offer it when no keyring answers; the choice is remembered in
the data dir) or with ERRAND_SECRETS=file.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from core.bots.secret_store import SecretStore, SecretStoreUnavailableError

SERVICE = "errand"
NO_KEYRING = (
    "No OS keyring is available here (no Secret Service, KWallet or macOS/Windows keychain answered). "
    "Install and unlock one (e.g. gnome-keyring), or choose to keep keys in a private plaintext file "
    "in the data dir (offered in the app, or start Errand with ERRAND_SECRETS=file)."
)
NO_KEYRING_KEY = "error.no_keyring"  # core's book words it for the UI (docs/desktop.md#settings)
# Present once the person chose the file in the app: the next start keeps using it.
FILE_CHOSEN = "secrets-in-file"


def _keyring_backend_works() -> bool:
    import keyring
    from keyring.backends import fail

    backend = keyring.get_keyring()
    if isinstance(backend, fail.Keyring):
        return False
    # keyrings.alt's plaintext backends would make this "work" silently; treat them as absent.
    return "keyrings.alt" not in type(backend).__module__


class KeyringSecretStore:
    """Probes the keyring backend on first use (off the loop): constructing it costs nothing at start-up."""

    def __init__(self) -> None:
        self._available: bool | None = None
        self._probe_lock = asyncio.Lock()

    async def probe(self) -> None:
        async with self._probe_lock:
            if self._available is None:
                self._available = await asyncio.to_thread(_keyring_backend_works)

    @property
    def available(self) -> bool:
        return bool(self._available)

    @property
    def description(self) -> str:
        return "API keys are kept in the OS keyring." if self.available else NO_KEYRING

    async def get(self, name: str) -> str | None:
        await self.probe()
        if not self.available:
            return None
        import keyring

        return await asyncio.to_thread(keyring.get_password, SERVICE, name)

    async def set(self, name: str, value: str) -> None:
        await self.probe()
        if not self.available:
            raise SecretStoreUnavailableError(NO_KEYRING, key=NO_KEYRING_KEY)
        import keyring

        await asyncio.to_thread(keyring.set_password, SERVICE, name, value)

    async def delete(self, name: str) -> None:
        await self.probe()
        if not self.available:
            return
        import keyring
        from keyring.errors import PasswordDeleteError

        with contextlib.suppress(PasswordDeleteError):
            await asyncio.to_thread(keyring.delete_password, SERVICE, name)


class FileSecretStore:
    """The explicit opt-in fallback: a JSON file readable only by the user. Never chosen implicitly."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = asyncio.Lock()

    @property
    def available(self) -> bool:
        return True

    @property
    def description(self) -> str:
        return (
            f"API keys are kept in a plaintext file readable only by you: {self._path} "
            "(you chose to keep them in a file)."
        )

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self._path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def _write(self, data: dict[str, str]) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, self._path)

    async def get(self, name: str) -> str | None:
        return (await asyncio.to_thread(self._read)).get(name)

    async def set(self, name: str, value: str) -> None:
        async with self._lock:
            data = await asyncio.to_thread(self._read)
            data[name] = value
            await asyncio.to_thread(self._write, data)

    async def delete(self, name: str) -> None:
        async with self._lock:
            data = await asyncio.to_thread(self._read)
            if data.pop(name, None) is not None:
                await asyncio.to_thread(self._write, data)


class ChoosableSecretStore:
    """The keyring, until the person chooses the private file instead (`keep_in_file`, offered when no
    keyring answers); the choice is written to the data dir so the next start goes straight to the file."""

    def __init__(self, data_dir: Path, keyring_store: KeyringSecretStore | None = None) -> None:
        self._data_dir = data_dir
        self._store: KeyringSecretStore | FileSecretStore = keyring_store or KeyringSecretStore()

    async def probe(self) -> None:
        if isinstance(self._store, KeyringSecretStore):
            await self._store.probe()

    @property
    def available(self) -> bool:
        return self._store.available

    @property
    def description(self) -> str:
        return self._store.description

    async def keep_in_file(self) -> None:
        def choose() -> None:
            self._data_dir.mkdir(parents=True, exist_ok=True)
            (self._data_dir / FILE_CHOSEN).write_text("1\n", encoding="utf-8")

        await asyncio.to_thread(choose)
        self._store = FileSecretStore(self._data_dir / "secrets.json")

    async def get(self, name: str) -> str | None:
        return await self._store.get(name)

    async def set(self, name: str, value: str) -> None:
        await self._store.set(name, value)

    async def delete(self, name: str) -> None:
        await self._store.delete(name)


def make_secret_store(data_dir: Path, env: Mapping[str, str] = os.environ) -> SecretStore:
    if env.get("ERRAND_SECRETS", "").strip().lower() == "file" or (data_dir / FILE_CHOSEN).exists():
        return FileSecretStore(data_dir / "secrets.json")
    return ChoosableSecretStore(data_dir)

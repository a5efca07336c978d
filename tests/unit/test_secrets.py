"""API keys: the keyring when one works, a 0600 file only when opted in, and a plain refusal otherwise."""

from __future__ import annotations

import stat
from pathlib import Path

import keyring
import pytest
from keyring.backends import fail

from app.secrets import ChoosableSecretStore, FileSecretStore, KeyringSecretStore, make_secret_store
from core.bots.secret_store import SecretStoreUnavailableError


async def test_the_file_store_is_only_chosen_when_asked_for(tmp_path: Path) -> None:
    # The keyring, until the person chooses the file in the app (ChoosableSecretStore.keep_in_file).
    assert isinstance(make_secret_store(tmp_path, {}), ChoosableSecretStore)
    assert isinstance(make_secret_store(tmp_path, {"ERRAND_SECRETS": "file"}), FileSecretStore)


async def test_the_file_store_keeps_keys_readable_only_by_the_user(tmp_path: Path) -> None:
    store = FileSecretStore(tmp_path / "secrets.json")
    await store.set("bot:b1:api-key", "sk-one")
    await store.set("bot:b2:api-key", "sk-two")
    assert await store.get("bot:b1:api-key") == "sk-one"
    assert stat.S_IMODE((tmp_path / "secrets.json").stat().st_mode) == 0o600
    await store.delete("bot:b1:api-key")
    assert await store.get("bot:b1:api-key") is None
    assert await store.get("bot:b2:api-key") == "sk-two"
    assert "plaintext" in store.description


async def test_without_a_keyring_backend_a_key_is_refused_with_what_to_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(keyring, "get_keyring", fail.Keyring)
    store = KeyringSecretStore()
    with pytest.raises(SecretStoreUnavailableError, match="ERRAND_SECRETS=file"):
        await store.set("bot:b1:api-key", "sk-1")
    assert await store.get("bot:b1:api-key") is None
    assert not store.available and "No OS keyring" in store.description

"""No keyring on this computer: the first-run card offers to keep the key in a file only this user can read
(with the plain warning), and finishes in the app once the person chooses it; the choice is remembered by
the secret store in the data dir."""

from __future__ import annotations

from pathlib import Path

from pytestqt.qtbot import QtBot

from app.secrets import ChoosableSecretStore, FileSecretStore, KeyringSecretStore, make_secret_store
from core.bots.secret_store import SecretStoreUnavailableError
from tests.fakes.fake_bots import FakeBotFacade
from tests.ui.conftest import wait_until
from tests.ui.test_settings_ui import click, first_run


async def test_without_a_keyring_the_card_offers_the_private_file_and_then_finishes(
    qtbot: QtBot, bots: FakeBotFacade
) -> None:
    bots.no_keyring = True
    bot = bots.add(configured=False)
    card = await first_run(qtbot, bots, bot.id)
    said: list[bool] = []
    card.configured.connect(lambda: said.append(True))

    click(card.preset_buttons["openai"])
    card.key_input.setText("sk-test")
    click(card.save_button)
    await wait_until(card.key_file.isVisible)
    assert card.error.text().startswith("No keyring is available on this computer")
    assert "ERRAND_SECRETS" not in card.error.text()  # no restart with an environment variable
    assert card.key_file.warning.text().startswith("A file is not encrypted")
    assert not said

    click(card.key_file.button)
    await wait_until(lambda: bool(said))
    assert bots.keys_in_file and bots.key_of(bot.id) == "sk-test"
    assert not card.key_file.isVisible() and not card.error.isVisible()


class NoKeyring(KeyringSecretStore):
    async def probe(self) -> None:
        self._available = False


async def test_the_choice_of_the_file_is_remembered_for_the_next_start(tmp_path: Path) -> None:
    store = ChoosableSecretStore(tmp_path, NoKeyring())
    try:
        await store.set("bot", "sk-1")
    except SecretStoreUnavailableError as exc:
        assert exc.key == "error.no_keyring"
    else:
        raise AssertionError("a key was stored without a keyring")
    await store.keep_in_file()
    await store.set("bot", "sk-1")
    assert (tmp_path / "secrets.json").stat().st_mode & 0o777 == 0o600
    again = make_secret_store(tmp_path, env={})
    assert isinstance(again, FileSecretStore) and await again.get("bot") == "sk-1"

"""「测试连接」 as a person meets it in bot settings and on the first-run card: the result line says the
latency once; an empty key for a service that needs one is asked for next to the key field without asking the
service; changing what was tested takes the old result away.

The checks go to the scripted model server over real HTTP (through core's `check_connection`), so "no
request" means the server saw none."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator

import pytest
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from core.bots.connection_test import check_connection
from core.bots.views import ConnectionCheck, ModelPreset
from core.clock import SystemClock
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.model_server import Reply, ScriptedModelServer
from tests.ui.conftest import wait_until
from tests.ui.test_settings_ui import bot_settings, click, first_run
from ui.connection_check import is_local_address, needs_key
from ui.i18n import t


class ServedBots(FakeBotFacade):
    """The in-memory bots, but 测试连接 really asks the scripted model server (the way BotService does)."""

    def __init__(self, server: ScriptedModelServer) -> None:
        super().__init__()
        self.server = server

    async def test_connection(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        bot_id: str | None = None,
        lang: str = "zh",
    ) -> ConnectionCheck:
        await super().test_connection(base_url, model, api_key, bot_id, lang)
        key = api_key if api_key is not None else (self.key_of(bot_id) or "" if bot_id else "")
        return await check_connection(base_url, model, key, clock=SystemClock(), lang=lang)


@pytest.fixture
async def server() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as made:
        yield made


@pytest.fixture
def served(server: ScriptedModelServer) -> ServedBots:
    bots = ServedBots(server)
    # A cloud-like service that needs a key, served by the scripted server on loopback; and a local one.
    bots.presets = [
        ModelPreset("cloud", "Cloud", server.base_url, "fake-model", key_hint="https://example.com/keys"),
        ModelPreset(
            "ollama",
            "Ollama",
            server.base_url + "/",
            "fake-model",
            needs_key=False,
            local=True,
            models=("fake-model",),
        ),
    ]
    return bots


def numbers(text: str) -> list[str]:
    return re.findall(r"\d+(?:\.\d+)?", text)


async def test_a_passing_test_says_its_latency_once(qtbot: QtBot, served: ServedBots) -> None:
    bot = served.add(model_base_url=served.server.base_url, model_name="fake-model")
    served._keys[bot.id] = "sk-test"
    dialog = await bot_settings(qtbot, served, bot.id)

    click(dialog.test_button)
    await wait_until(dialog.test_result.isVisible, timeout=10)
    words = dialog.test_result.text()
    assert dialog.test_dot.state == "working"
    assert "fake-model" in words
    assert len(numbers(words)) == 1, words  # one figure: the latency, said once


async def test_bot_settings_ask_for_an_empty_key_and_ask_no_service(qtbot: QtBot, served: ServedBots) -> None:
    bot = served.add(model_base_url=served.server.base_url, model_name="fake-model", has_api_key=False)
    dialog = await bot_settings(qtbot, served, bot.id)
    assert dialog.provider_combo.currentData() == "cloud"

    click(dialog.test_button)
    await wait_until(lambda: bool(dialog.field_error("apiKey")))
    assert dialog.field_error("apiKey") == t("connection.key_missing")
    assert not dialog.test_result.isVisible()
    assert dialog.test_button.isEnabled()
    qtbot.wait(50)  # anything started would have reached the server by now
    assert served.checks == []
    assert served.server.requests == []

    # Typing the key takes the ask away, and the test goes out with it.
    dialog.key_input.setFocus()
    QTest.keyClicks(dialog.key_input, "sk-typed")
    assert dialog.field_error("apiKey") == ""
    click(dialog.test_button)
    await wait_until(dialog.test_result.isVisible, timeout=10)
    assert len(served.server.requests) == 1
    assert served.server.requests[0].headers["authorization"] == "Bearer sk-typed"


async def test_bot_settings_with_a_cleared_key_ask_for_one(qtbot: QtBot, served: ServedBots) -> None:
    bot = served.add(model_base_url=served.server.base_url, model_name="fake-model")
    dialog = await bot_settings(qtbot, served, bot.id)
    click(dialog.clear_key_button)
    click(dialog.test_button)
    await wait_until(lambda: bool(dialog.field_error("apiKey")))
    assert dialog.field_error("apiKey") == t("connection.key_missing")
    assert served.server.requests == []


async def test_a_local_server_is_tested_with_no_key(qtbot: QtBot, served: ServedBots) -> None:
    bot = served.add(configured=False)
    card = await first_run(qtbot, served, bot.id)
    card.pick("ollama")
    assert not card.rows["apiKey"].isVisible()

    click(card.test_button)
    await wait_until(card.test_result.isVisible, timeout=10)
    assert card.rows["apiKey"].error_text == ""
    assert len(served.server.requests) == 1
    assert "authorization" not in served.server.requests[0].headers


async def test_a_custom_local_address_needs_no_key(qtbot: QtBot, served: ServedBots) -> None:
    bot = served.add(configured=False)
    card = await first_run(qtbot, served, bot.id)
    card.pick("custom")
    card.base_url_input.setText(f"http://127.0.0.1:{served.server.port}/v1")
    card.model_input.setEditText("fake-model")

    click(card.test_button)
    await wait_until(card.test_result.isVisible, timeout=10)
    assert len(served.server.requests) == 1


async def test_first_run_asks_for_an_empty_key_and_asks_no_service(qtbot: QtBot, served: ServedBots) -> None:
    bot = served.add(configured=False)
    card = await first_run(qtbot, served, bot.id)
    assert card.preset_buttons["cloud"].isChecked()

    click(card.test_button)
    await wait_until(lambda: bool(card.rows["apiKey"].error_text))
    assert card.rows["apiKey"].error_text == t("connection.key_missing")
    assert card.test_button.isEnabled()
    qtbot.wait(50)
    assert served.checks == []
    assert served.server.requests == []


async def test_switching_preset_takes_the_old_error_away(qtbot: QtBot, served: ServedBots) -> None:
    bot = served.add(configured=False)
    card = await first_run(qtbot, served, bot.id)
    served.server.push(Reply.error(401))
    card.key_input.setText("sk-wrong")
    click(card.test_button)
    await wait_until(card.test_result.isVisible, timeout=10)
    assert card.test_dot.state == "failed"
    assert "401" in card.test_result.text()

    click(card.preset_buttons["ollama"])
    assert not card.test_result.isVisible()
    assert not card.test_dot.isVisible()


@pytest.mark.parametrize("change", ["provider", "base_url", "model", "key"])
async def test_changing_what_was_tested_takes_the_old_result_away(
    qtbot: QtBot, served: ServedBots, change: str
) -> None:
    bot = served.add(model_base_url=served.server.base_url, model_name="fake-model")
    served._keys[bot.id] = "sk-test"
    dialog = await bot_settings(qtbot, served, bot.id)
    served.server.push(Reply.error(500))
    click(dialog.test_button)
    await wait_until(dialog.test_result.isVisible, timeout=10)
    assert dialog.test_dot.state == "failed"

    if change == "provider":
        dialog.provider_combo.activated.emit(dialog.provider_combo.findData("ollama"))
    elif change == "base_url":
        dialog.base_url_input.setFocus()
        QTest.keyClicks(dialog.base_url_input, "x")
    elif change == "model":
        line = dialog.model_input.lineEdit()
        assert line is not None
        line.setFocus()
        QTest.keyClicks(line, "x")
    else:
        dialog.key_input.setFocus()
        QTest.keyClicks(dialog.key_input, "k")
    assert not dialog.test_result.isVisible()
    assert not dialog.test_dot.isVisible()


async def test_a_result_for_settings_changed_meanwhile_is_dropped(qtbot: QtBot, bots: FakeBotFacade) -> None:
    bot = bots.add()
    dialog = await bot_settings(qtbot, bots, bot.id)
    bots.connection = ConnectionCheck(ok=False, message="The service had an error (HTTP 500)")
    bots.connection_gate = asyncio.Event()
    click(dialog.test_button)
    await wait_until(lambda: len(bots.checks) == 1)

    dialog.base_url_input.setFocus()
    QTest.keyClicks(dialog.base_url_input, "x")
    bots.connection_gate.set()
    # The button comes back in the same step that shows or drops the outcome: nothing more to wait for.
    await wait_until(dialog.test_button.isEnabled)
    assert not dialog.test_result.isVisible()
    assert dialog.test_button.text() == t("settings.test")


@pytest.fixture
def bots() -> FakeBotFacade:
    return FakeBotFacade()


@pytest.mark.parametrize(
    ("base_url", "local"),
    [
        ("http://localhost:1234/v1", True),  # LM Studio
        ("http://127.0.0.1:8080/v1", True),  # llama.cpp
        ("http://[::1]:11434/v1", True),
        ("http://192.168.1.20:8000/v1", True),  # vLLM on the home network
        ("http://gpu-box.local:8000/v1", True),
        ("https://api.deepseek.com/v1", False),
        ("https://8.8.8.8/v1", False),
        ("not a url", False),
    ],
)
def test_a_custom_address_needs_a_key_unless_it_is_local(base_url: str, local: bool) -> None:
    assert is_local_address(base_url) is local
    assert needs_key(None, base_url) is not local

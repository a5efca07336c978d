"""Settings as a person meets them: the first-run card for a bot with no model, the bot settings dialog,
the app settings and the new-task dialog, each driven through its buttons against in-memory facades."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget
from pytestqt.qtbot import QtBot

from core.bots.views import BotUpdate, ConnectionCheck, ModelPreset
from core.errors import ConflictError, InvalidInputError, UnavailableError
from core.preferences import Preferences, PreferencesUpdate
from tests.fakes.fake_bots import FakeBotFacade
from tests.ui.conftest import wait_until
from ui import theme
from ui.app_settings import AppSettingsDialog
from ui.bot_settings import BotSettingsDialog
from ui.first_run import FirstRunCard
from ui.form import Combo
from ui.i18n import t
from ui.new_task_dialog import NewTaskDialog

OLLAMA = ModelPreset(
    "ollama",
    "Ollama (this computer)",
    "http://127.0.0.1:11434/v1",
    "qwen2.5:7b",
    needs_key=False,
    local=True,
    models=("qwen2.5:7b", "llama3.1:8b"),
)


def click(widget: QWidget) -> None:
    QTest.mouseClick(widget, Qt.MouseButton.LeftButton)


@pytest.fixture
def bots() -> FakeBotFacade:
    return FakeBotFacade()


async def first_run(qtbot: QtBot, bots: FakeBotFacade, bot_id: str) -> FirstRunCard:
    card = FirstRunCard(bots, bot_id)
    qtbot.addWidget(card)
    card.show()
    await card.load()
    return card


async def bot_settings(qtbot: QtBot, bots: FakeBotFacade, bot_id: str) -> BotSettingsDialog:
    dialog = BotSettingsDialog(bots, bot_id)
    qtbot.addWidget(dialog)
    dialog.show()
    await dialog.load()
    return dialog


# -- first run ---------------------------------------------------------------------------------------------


async def test_the_first_run_card_greets_an_unconfigured_bot_with_the_presets(
    qtbot: QtBot, bots: FakeBotFacade
) -> None:
    bot = bots.add("天天", configured=False)
    assert not bot.configured
    card = await first_run(qtbot, bots, bot.id)

    assert "天天" in card.title.text()
    shown = [b.text() for b in card.preset_buttons.values()]
    assert shown == ["DeepSeek", "OpenAI", "OpenRouter", t("settings.provider.custom")]
    # Ready to take a key: the first choice is filled in.
    assert card.preset_buttons["deepseek"].isChecked()
    assert card.base_url_input.text() == "https://api.deepseek.com/v1"
    assert card.model_input.currentText() == "deepseek-chat"
    assert card.rows["apiKey"].isVisible()


async def test_a_preset_fills_the_fields_and_a_local_one_needs_no_key(
    qtbot: QtBot, bots: FakeBotFacade
) -> None:
    bots.presets.append(OLLAMA)
    bot = bots.add(configured=False)
    card = await first_run(qtbot, bots, bot.id)

    click(card.preset_buttons["openrouter"])
    assert card.base_url_input.text() == "https://openrouter.ai/api/v1"
    assert card.model_input.currentText() == "openai/gpt-4o-mini"

    assert card.preset_buttons["ollama"].text() == t("settings.provider.ollama")
    click(card.preset_buttons["ollama"])
    assert card.base_url_input.text() == "http://127.0.0.1:11434/v1"
    assert [card.model_input.itemText(i) for i in range(card.model_input.count())] == list(OLLAMA.models)
    assert not card.rows["apiKey"].isVisible()


async def test_saving_the_first_run_card_writes_the_model_and_says_configured(
    qtbot: QtBot, bots: FakeBotFacade
) -> None:
    bot = bots.add(configured=False)
    card = await first_run(qtbot, bots, bot.id)
    said: list[bool] = []
    card.configured.connect(lambda: said.append(True))

    click(card.preset_buttons["openai"])
    card.key_input.setText("  sk-test  ")
    click(card.save_button)
    await wait_until(lambda: bool(said))

    assert bots.updates == [
        (
            bot.id,
            BotUpdate(
                model_base_url="https://api.openai.com/v1", model_name="gpt-4o-mini", api_key="sk-test"
            ),
        )
    ]
    assert (await bots.get(bot.id)).configured
    assert bots.key_of(bot.id) == "sk-test"


async def test_first_run_asks_for_the_key_a_service_needs_and_keeps_what_was_typed(
    qtbot: QtBot, bots: FakeBotFacade
) -> None:
    bot = bots.add(configured=False)
    card = await first_run(qtbot, bots, bot.id)
    said: list[bool] = []
    card.configured.connect(lambda: said.append(True))
    card.model_input.setEditText("deepseek-reasoner")

    click(card.save_button)
    assert card.rows["apiKey"].error_text == t("firstrun.error.key_missing")
    assert bots.updates == []

    bots.update_error = InvalidInputError("model", "has spaces")
    card.key_input.setText("sk-x")
    click(card.save_button)
    await wait_until(lambda: bool(card.rows["model"].error_text))
    assert card.rows["model"].error_text == t("settings.error.model")
    assert card.model_input.currentText() == "deepseek-reasoner"
    assert card.key_input.text() == "sk-x"
    assert card.save_button.isEnabled()
    assert said == []


async def test_first_run_connection_test_shows_a_failure_and_comes_back(
    qtbot: QtBot, bots: FakeBotFacade
) -> None:
    bot = bots.add(configured=False)
    card = await first_run(qtbot, bots, bot.id)
    bots.connection = ConnectionCheck(ok=False, message="The key was refused (401); check it")
    bots.connection_gate = asyncio.Event()
    card.key_input.setText("sk-bad")

    click(card.test_button)
    await wait_until(lambda: len(bots.checks) == 1)
    assert not card.test_button.isEnabled()
    assert card.test_button.text() == t("settings.testing")

    bots.connection_gate.set()
    await wait_until(card.test_result.isVisible)
    assert card.test_result.text() == "The key was refused (401); check it"
    assert card.test_dot.state == "failed"
    assert card.test_button.isEnabled()
    assert bots.checks == [("https://api.deepseek.com/v1", "deepseek-chat", "sk-bad", bot.id)]


# -- bot settings ------------------------------------------------------------------------------------------


async def test_bot_settings_show_the_bot_as_stored(qtbot: QtBot, bots: FakeBotFacade) -> None:
    bot = bots.add("天天", avatar="violet", task_slots=3, quiet_start="23:00", quiet_end="07:30", paused=True)
    dialog = await bot_settings(qtbot, bots, bot.id)

    assert dialog.name_input.text() == "天天"
    assert dialog.avatar_buttons["violet"].isChecked()
    assert dialog.provider_combo.currentData() == "deepseek"
    assert dialog.key_input.placeholderText() == t("settings.key.saved")
    assert dialog.clear_key_button.isVisible()
    assert dialog.preset_buttons["workspace-write"].isChecked()
    assert dialog.slots_input.currentData() == 3
    assert dialog.quiet_start.time().toString("HH:mm") == "23:00"
    assert dialog.quiet_end.time().toString("HH:mm") == "07:30"
    assert not dialog.quiet_off.isChecked()
    assert dialog.paused_switch.isChecked()


async def test_connection_test_shows_the_failing_check_and_reenables_the_button(
    qtbot: QtBot, bots: FakeBotFacade
) -> None:
    bot = bots.add()
    dialog = await bot_settings(qtbot, bots, bot.id)
    bots.connection = ConnectionCheck(ok=False, message="No answer from the address; is it right?")
    bots.connection_gate = asyncio.Event()

    click(dialog.test_button)
    await wait_until(lambda: len(bots.checks) == 1)
    assert not dialog.test_button.isEnabled()
    assert dialog.test_button.text() == t("settings.testing")
    # No key typed: the stored one is used (None), for this bot.
    assert bots.checks == [("https://api.deepseek.com/v1", "deepseek-chat", None, bot.id)]

    bots.connection_gate.set()
    await wait_until(dialog.test_result.isVisible)
    assert dialog.test_result.text() == "No answer from the address; is it right?"
    assert dialog.test_dot.state == "failed"
    assert dialog.test_button.isEnabled()
    assert dialog.test_button.text() == t("settings.test")


async def test_a_passing_connection_test_says_how_fast(qtbot: QtBot, bots: FakeBotFacade) -> None:
    bot = bots.add()
    dialog = await bot_settings(qtbot, bots, bot.id)
    # The core's sentence carries the latency; the dialog shows it as said (not with the figure again).
    bots.connection = ConnectionCheck(ok=True, message="Connected: m answered (182.4 ms).", latency_ms=182.4)

    click(dialog.test_button)
    await wait_until(dialog.test_result.isVisible)
    assert dialog.test_result.text() == "Connected: m answered (182.4 ms)."
    assert dialog.test_dot.state == "working"


async def test_a_refused_field_is_shown_under_it_and_the_dialog_stays_open(
    qtbot: QtBot, bots: FakeBotFacade
) -> None:
    bot = bots.add()
    dialog = await bot_settings(qtbot, bots, bot.id)
    bots.update_error = InvalidInputError("taskSlots", "must be between 1 and 4")
    dialog.slots_input.setCurrentIndex(3)
    dialog.name_input.setText("哒哒")

    click(dialog.save_button)
    await wait_until(lambda: bool(dialog.field_error("taskSlots")))
    assert dialog.field_error("taskSlots") == t("settings.error.task_slots")
    assert dialog.rows["taskSlots"].error.isVisible()
    assert dialog.field_error("name") == ""
    assert dialog.isVisible()
    assert dialog.name_input.text() == "哒哒"
    assert dialog.save_button.isEnabled()
    assert bots.updates == []
    assert (await bots.get(bot.id)).name == "Errand"


async def test_no_keyring_is_said_plainly(qtbot: QtBot, bots: FakeBotFacade) -> None:
    bot = bots.add()
    dialog = await bot_settings(qtbot, bots, bot.id)
    bots.update_error = UnavailableError("No keyring is available to store the key; install gnome-keyring.")
    dialog.key_input.setText("sk-new")

    click(dialog.save_button)
    await wait_until(dialog.error.isVisible)
    assert dialog.error.text() == "No keyring is available to store the key; install gnome-keyring."
    assert dialog.isVisible()


async def test_quiet_hours_off_sends_equal_start_and_end(qtbot: QtBot, bots: FakeBotFacade) -> None:
    bot = bots.add(quiet_start="22:00", quiet_end="08:00")
    dialog = await bot_settings(qtbot, bots, bot.id)
    saved: list[object] = []
    dialog.saved.connect(saved.append)

    click(dialog.quiet_off)
    assert not dialog.quiet_start.isEnabled()
    click(dialog.save_button)
    await wait_until(lambda: bool(saved))

    [(_, changes)] = bots.updates
    assert changes.quiet_start is not None
    assert changes.quiet_start == changes.quiet_end
    stored = await bots.get(bot.id)
    assert stored.quiet_start == stored.quiet_end
    assert not dialog.isVisible()


async def test_turning_quiet_hours_back_on_offers_the_calm_default(qtbot: QtBot, bots: FakeBotFacade) -> None:
    bot = bots.add(quiet_start="00:00", quiet_end="00:00")
    dialog = await bot_settings(qtbot, bots, bot.id)
    assert dialog.quiet_off.isChecked()
    saved: list[object] = []
    dialog.saved.connect(saved.append)

    click(dialog.quiet_off)
    click(dialog.save_button)
    await wait_until(lambda: bool(saved))
    [(_, changes)] = bots.updates
    assert (changes.quiet_start, changes.quiet_end) == ("22:00", "08:00")


async def test_an_empty_key_field_leaves_the_key_and_clear_removes_it(
    qtbot: QtBot, bots: FakeBotFacade
) -> None:
    bot = bots.add()
    await bots.update(bot.id, BotUpdate(api_key="sk-old"))
    bots.updates.clear()
    dialog = await bot_settings(qtbot, bots, bot.id)
    saved: list[object] = []
    dialog.saved.connect(saved.append)
    dialog.name_input.setText("哒哒")

    click(dialog.save_button)
    await wait_until(lambda: len(saved) == 1)
    assert bots.updates == [(bot.id, BotUpdate(name="哒哒", api_key=None))]
    assert bots.key_of(bot.id) == "sk-old"

    again = await bot_settings(qtbot, bots, bot.id)
    again.saved.connect(saved.append)
    click(again.clear_key_button)
    assert again.key_input.placeholderText() == t("settings.key.none")
    click(again.save_button)
    await wait_until(lambda: len(saved) == 2)
    assert bots.updates[-1] == (bot.id, BotUpdate(api_key=""))
    assert bots.key_of(bot.id) is None


async def test_bot_settings_send_what_changed(qtbot: QtBot, bots: FakeBotFacade) -> None:
    bot = bots.add(avatar="teal")
    dialog = await bot_settings(qtbot, bots, bot.id)
    saved: list[object] = []
    dialog.saved.connect(saved.append)

    click(dialog.avatar_buttons["rose"])
    pick(dialog.provider_combo, "openrouter")
    click(dialog.preset_buttons["read-only"])
    dialog.slots_input.setCurrentIndex(0)
    click(dialog.paused_switch)
    dialog.key_input.setText("sk-or")
    click(dialog.save_button)
    await wait_until(lambda: bool(saved))

    assert bots.updates == [
        (
            bot.id,
            BotUpdate(
                avatar="rose",
                model_base_url="https://openrouter.ai/api/v1",
                model_name="openai/gpt-4o-mini",
                api_key="sk-or",
                preset="read-only",
                task_slots=1,
                paused=True,
            ),
        )
    ]


async def test_the_images_switch_follows_the_model_until_the_person_flips_it(
    qtbot: QtBot, bots: FakeBotFacade
) -> None:
    bot = bots.add()  # deepseek-chat: sees no images, and the person never chose
    dialog = await bot_settings(qtbot, bots, bot.id)
    saved: list[object] = []
    dialog.saved.connect(saved.append)
    assert dialog.rows["images"].isVisible() and not dialog.images_switch.isChecked()

    pick(dialog.provider_combo, "openai")
    assert dialog.images_switch.isChecked(), "gpt-4o-mini sees images"
    pick(dialog.provider_combo, "deepseek")
    assert not dialog.images_switch.isChecked()

    click(dialog.images_switch)  # the person's own choice: it stays whatever model comes next
    pick(dialog.provider_combo, "openai")
    pick(dialog.provider_combo, "deepseek")
    assert dialog.images_switch.isChecked()
    click(dialog.save_button)
    await wait_until(lambda: bool(saved))
    assert bots.updates == [(bot.id, BotUpdate(images=True))]


async def test_a_chosen_images_setting_is_kept_when_the_model_changes(
    qtbot: QtBot, bots: FakeBotFacade
) -> None:
    bot = bots.add(images=False, images_chosen=False)
    dialog = await bot_settings(qtbot, bots, bot.id)
    saved: list[object] = []
    dialog.saved.connect(saved.append)
    pick(dialog.provider_combo, "openai")
    assert not dialog.images_switch.isChecked()
    click(dialog.save_button)
    await wait_until(lambda: bool(saved))
    assert bots.updates[0][1].images is None  # unchanged: nothing to send


async def test_cancel_discards(qtbot: QtBot, bots: FakeBotFacade) -> None:
    bot = bots.add()
    dialog = await bot_settings(qtbot, bots, bot.id)
    dialog.name_input.setText("哒哒")
    click(dialog.cancel_button)
    assert not dialog.isVisible()
    assert bots.updates == []


# -- app settings ------------------------------------------------------------------------------------------


async def app_settings(
    qtbot: QtBot, bots: FakeBotFacade, qapp: QApplication, calls: list[bool]
) -> AppSettingsDialog:
    dialog = AppSettingsDialog(bots, calls.append, qapp)
    qtbot.addWidget(dialog)
    dialog.show()
    await dialog.load()
    return dialog


def pick(combo: Combo, value: str) -> None:
    """Choose as a person does: `activated` is only emitted for a pick, never for a programmatic change."""
    combo.setCurrentIndex(combo.findData(value))
    combo.activated.emit(combo.currentIndex())


async def test_a_theme_change_applies_at_once_and_is_saved(
    qtbot: QtBot, bots: FakeBotFacade, qapp: QApplication
) -> None:
    calls: list[bool] = []
    dialog = await app_settings(qtbot, bots, qapp, calls)
    assert theme.scheme() == "light"
    saved: list[object] = []
    dialog.saved.connect(saved.append)

    pick(dialog.theme_combo, "dark")
    assert theme.scheme() == "dark"
    assert theme.DARK.window in qapp.styleSheet()
    click(dialog.save_button)
    await wait_until(lambda: bool(saved))

    assert bots.preference_updates == [PreferencesUpdate(theme="dark")]
    assert bots.preferences_value == Preferences(theme="dark")
    assert calls == []  # start at login untouched


async def test_cancel_puts_the_stored_theme_back(
    qtbot: QtBot, bots: FakeBotFacade, qapp: QApplication
) -> None:
    bots.preferences_value = Preferences(theme="light")
    dialog = await app_settings(qtbot, bots, qapp, [])
    pick(dialog.theme_combo, "dark")
    assert theme.scheme() == "dark"
    click(dialog.cancel_button)
    assert theme.scheme() == "light"
    assert bots.preference_updates == []


async def test_a_saved_language_change_is_announced_for_the_app_to_apply_at_once(
    qtbot: QtBot, bots: FakeBotFacade, qapp: QApplication
) -> None:
    dialog = await app_settings(qtbot, bots, qapp, [])
    changed: list[str] = []
    dialog.languageChanged.connect(changed.append)
    dialog.language_combo.setCurrentIndex(dialog.language_combo.findData("zh"))
    assert dialog.findChild(QWidget, "restartNote") is None  # no "after a restart": it applies on save
    click(dialog.save_button)
    await wait_until(lambda: bool(changed))
    assert changed == ["zh"]
    assert bots.preference_updates == [PreferencesUpdate(language="zh")]


async def test_start_at_login_goes_through_the_injected_autostart(
    qtbot: QtBot, bots: FakeBotFacade, qapp: QApplication, tmp_path: Path
) -> None:
    written: list[bool] = []
    dialog = await app_settings(qtbot, bots, qapp, written)
    saved: list[object] = []
    dialog.saved.connect(saved.append)

    click(dialog.autostart_switch)
    click(dialog.save_button)
    await wait_until(lambda: bool(saved))
    assert written == [True]
    assert bots.preference_updates == [PreferencesUpdate(start_at_login=True)]


async def test_start_at_login_that_cant_be_written_is_said_and_not_saved(
    qtbot: QtBot, bots: FakeBotFacade, qapp: QApplication
) -> None:
    refusal = PermissionError(13, "Permission denied", "/home/a/.config/autostart")

    def unwritable(_on: bool) -> None:
        raise refusal

    dialog = AppSettingsDialog(bots, unwritable, qapp)
    qtbot.addWidget(dialog)
    dialog.show()
    await dialog.load()

    click(dialog.autostart_switch)
    click(dialog.save_button)
    await wait_until(lambda: bool(dialog.rows["startAtLogin"].error_text))
    assert dialog.rows["startAtLogin"].error_text == t("settings.autostart.failed", reason=str(refusal))
    assert "/home/a/.config/autostart" in dialog.rows["startAtLogin"].error_text
    assert bots.preference_updates == []
    assert dialog.isVisible()


# -- new task ----------------------------------------------------------------------------------------------


async def test_new_task_creates_with_the_chosen_bot_and_closes(qtbot: QtBot, bots: FakeBotFacade) -> None:
    first = bots.add("天天")
    second = bots.add("哒哒")
    created: list[tuple[str, str, str, bool]] = []

    async def create(bot_id: str, title: str, brief: str, plan: bool) -> object:
        await asyncio.sleep(0)
        created.append((bot_id, title, brief, plan))
        return "t_000000000001"

    dialog = NewTaskDialog(create, await bots.list(), first.id)
    qtbot.addWidget(dialog)
    dialog.show()
    results: list[object] = []
    dialog.created.connect(results.append)
    assert dialog.rows["bot"].isVisible()

    dialog.title_input.setText("GPU 价格调研")
    dialog.brief_input.setPlainText("  比较三家云的 GPU 价格  ")
    dialog.bot_combo.setCurrentIndex(dialog.bot_combo.findData(second.id))
    assert not dialog.plan_switch.isChecked()  # a plain task unless the person asks for a plan
    dialog.plan_switch.click()
    click(dialog.create_button)
    await wait_until(lambda: bool(results))

    assert created == [(second.id, "GPU 价格调研", "比较三家云的 GPU 价格", True)]
    assert results == ["t_000000000001"]
    assert not dialog.isVisible()


async def test_new_task_reports_errors_and_stays_open(qtbot: QtBot, bots: FakeBotFacade) -> None:
    only = bots.add("天天")
    attempts: list[str] = []

    async def create(bot_id: str, title: str, brief: str, plan: bool) -> object:
        attempts.append(brief)
        raise ConflictError("天天 already has 10 open tasks. Stop or finish one before starting another.")

    dialog = NewTaskDialog(create, await bots.list(), only.id)
    qtbot.addWidget(dialog)
    dialog.show()
    assert not dialog.rows["bot"].isVisible()  # one bot: nothing to choose

    click(dialog.create_button)
    assert dialog.rows["text"].error_text == t("newtask.error.empty")
    assert attempts == []

    dialog.brief_input.setPlainText("整理下载目录")
    click(dialog.create_button)
    await wait_until(dialog.error.isVisible)
    assert dialog.error.text() == t(
        "newtask.error.failed",
        reason="天天 already has 10 open tasks. Stop or finish one before starting another.",
    )
    assert dialog.isVisible()
    assert dialog.create_button.isEnabled()
    assert dialog.brief_input.toPlainText() == "整理下载目录"
    assert attempts == ["整理下载目录"]

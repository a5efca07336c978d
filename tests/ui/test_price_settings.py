"""The 价格 section of the app settings, driven through its buttons against an in-memory PriceFacade: the
list as stored, adding through the form, a refused field said under its row with nothing changed, and
删除."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLabel, QWidget
from pytestqt.qtbot import QtBot

from core.errors import ConflictError
from core.preferences import PreferencesUpdate
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_prices import FakePriceFacade
from tests.ui.conftest import wait_until
from ui.app_settings import AppSettingsDialog
from ui.bridge import EventBridge
from ui.i18n import t
from ui.price_settings import PriceSection, money


def click(widget: QWidget) -> None:
    QTest.mouseClick(widget, Qt.MouseButton.LeftButton)


async def app_settings(
    qtbot: QtBot, qapp: QApplication, prices: FakePriceFacade | None, bots: FakeBotFacade | None = None
) -> AppSettingsDialog:
    dialog = AppSettingsDialog(bots or FakeBotFacade(), lambda _on: None, qapp, prices=prices)
    qtbot.addWidget(dialog)
    dialog.show()
    await dialog.load()
    return dialog


def section_of(dialog: AppSettingsDialog) -> PriceSection:
    assert dialog.price_section is not None
    return dialog.price_section


def fill(section: PriceSection, model: str, **amounts: str) -> None:
    click(section.add_button)
    assert section.form.isVisible()
    QTest.keyClicks(section.model_input, model)
    for field, text in amounts.items():
        QTest.keyClicks(section.inputs[field], text)


async def test_without_a_price_facade_there_is_no_price_section(qtbot: QtBot, qapp: QApplication) -> None:
    dialog = await app_settings(qtbot, qapp, None)
    assert dialog.price_section is None
    assert t("prices.section") not in [label.text() for label in dialog.findChildren(QLabel)]


async def test_the_list_shows_each_override_and_says_when_there_is_none(
    qtbot: QtBot, qapp: QApplication
) -> None:
    prices = FakePriceFacade()
    dialog = await app_settings(qtbot, qapp, prices)
    section = section_of(dialog)
    assert section.isVisible()
    assert section.intro.text() == t("prices.intro")
    assert section.empty.isVisible()
    assert section.rows == {}

    prices.add("qwen-max", "2.4", "9.6", "CNY")
    prices.add("deepseek-chat", "0.27", "1.1")
    await section.load()
    assert list(section.rows) == ["deepseek-chat", "qwen-max"]
    assert not section.empty.isVisible()
    row = section.rows["deepseek-chat"]
    assert row.model.text() == "deepseek-chat"
    assert row.detail.text() == t("prices.row.main", input="$0.27", output="$1.10", currency="USD")
    assert section.rows["qwen-max"].detail.text() == t(
        "prices.row.main", input="¥2.40", output="¥9.60", currency="CNY"
    )


def test_money_keeps_every_decimal_that_was_set() -> None:
    assert money("0.27", "USD") == "$0.27"
    assert money("2", "CNY") == "¥2.00"
    assert money("0.0075", "USD") == "$0.0075"
    assert money("1500", "EUR") == "€1,500.00"
    assert money("1.5", "HKD") == "1.50 HKD"


async def test_adding_through_the_form_saves_via_the_facade(qtbot: QtBot, qapp: QApplication) -> None:
    prices = FakePriceFacade()
    bots = FakeBotFacade()
    dialog = await app_settings(qtbot, qapp, prices, bots)
    section = section_of(dialog)
    assert not section.form.isVisible()
    changed: list[bool] = []
    section.changed.connect(lambda: changed.append(True))

    fill(section, "deepseek-chat", input="0.27", output="1.10", cacheRead="0.07")
    section.currency_combo.setCurrentIndex(section.currency_combo.findData("CNY"))
    click(section.save_button)
    await wait_until(lambda: "deepseek-chat" in section.rows)

    assert prices.sets == [
        (
            "deepseek-chat",
            {"input": "0.27", "output": "1.10", "cacheRead": "0.07", "cacheWrite": "0.27", "currency": "CNY"},
        )
    ]
    assert section.rows["deepseek-chat"].cache.text() == t("prices.row.cache", read="¥0.07", write="¥0.27")
    assert changed == [True]
    assert not section.form.isVisible()  # closed and emptied, ready for the next
    assert section.add_button.isVisible()
    assert section.model_input.text() == ""
    assert dialog.isVisible()
    assert bots.preference_updates == []  # prices are not the dialog's 保存


async def test_enter_in_the_form_saves_the_price_not_the_dialog(qtbot: QtBot, qapp: QApplication) -> None:
    prices = FakePriceFacade()
    bots = FakeBotFacade()
    dialog = await app_settings(qtbot, qapp, prices, bots)
    section = section_of(dialog)
    fill(section, "gpt-4o-mini", input="0.15", output="0.6")

    QTest.keyClick(section.inputs["output"], Qt.Key.Key_Return)
    await wait_until(lambda: "gpt-4o-mini" in section.rows)
    assert dialog.isVisible()
    assert bots.preference_updates == []


async def test_a_refused_field_is_said_under_it_and_nothing_changes(qtbot: QtBot, qapp: QApplication) -> None:
    prices = FakePriceFacade()
    prices.add("kept", "1", "2")
    dialog = await app_settings(qtbot, qapp, prices)
    section = section_of(dialog)

    fill(section, "deepseek-chat", input="0.27", output="-1")
    click(section.save_button)
    await wait_until(lambda: bool(section.field_error("output")))

    assert section.field_error("output") == t("prices.error.amount")
    assert section.form_rows["output"].error.isVisible()
    assert section.field_error("input") == ""
    assert section.form.isVisible()  # still open, with what was typed
    assert section.model_input.text() == "deepseek-chat"
    assert section.inputs["output"].text() == "-1"
    assert section.save_button.isEnabled()
    assert prices.sets == []
    assert list(prices.overrides) == ["kept"]
    assert list(section.rows) == ["kept"]

    # Put right, the error goes and the price is saved.
    section.inputs["output"].setText("1.1")
    click(section.save_button)
    await wait_until(lambda: "deepseek-chat" in section.rows)
    assert section.field_error("output") == ""


async def test_an_empty_model_and_a_missing_price_are_refused(qtbot: QtBot, qapp: QApplication) -> None:
    prices = FakePriceFacade()
    dialog = await app_settings(qtbot, qapp, prices)
    section = section_of(dialog)

    fill(section, "   ", input="0.27", output="1")
    click(section.save_button)
    await wait_until(lambda: bool(section.field_error("model")))
    assert section.field_error("model") == t("prices.error.model")

    section.model_input.setText("deepseek-chat")
    section.inputs["input"].clear()
    click(section.save_button)
    await wait_until(lambda: bool(section.field_error("input")))
    assert section.field_error("model") == ""
    assert section.field_error("input") == t("prices.error.amount")
    assert prices.overrides == {}


async def test_a_refusal_that_is_not_about_one_field_is_said_under_the_form(
    qtbot: QtBot, qapp: QApplication
) -> None:
    prices = FakePriceFacade()
    prices.set_error = ConflictError("At most 500 models can have their own price; remove one.")
    dialog = await app_settings(qtbot, qapp, prices)
    section = section_of(dialog)
    fill(section, "deepseek-chat", input="0.27", output="1")
    click(section.save_button)
    await wait_until(section.error.isVisible)
    assert section.error.text() == t("prices.save_failed", reason=str(prices.set_error))
    assert section.form.isVisible()


async def test_cancel_closes_the_form_and_saves_nothing(qtbot: QtBot, qapp: QApplication) -> None:
    prices = FakePriceFacade()
    dialog = await app_settings(qtbot, qapp, prices)
    section = section_of(dialog)
    fill(section, "deepseek-chat", input="0.27")
    click(section.cancel_button)
    assert not section.form.isVisible()
    assert section.add_button.isVisible()
    assert prices.sets == []
    click(section.add_button)
    assert section.model_input.text() == ""


async def test_delete_removes_the_override(qtbot: QtBot, qapp: QApplication) -> None:
    prices = FakePriceFacade()
    prices.add("deepseek-chat", "0.27", "1.1")
    prices.add("qwen-max", "2.4", "9.6", "CNY")
    dialog = await app_settings(qtbot, qapp, prices)
    section = section_of(dialog)

    click(section.rows["deepseek-chat"].remove_button)
    await wait_until(lambda: "deepseek-chat" not in section.rows)

    assert prices.removed == ["deepseek-chat"]
    assert list(section.rows) == ["qwen-max"]
    click(section.rows["qwen-max"].remove_button)
    await wait_until(lambda: not section.rows)
    assert section.empty.isVisible()


async def test_prices_that_cant_be_read_are_said_and_the_preferences_still_load(
    qtbot: QtBot, qapp: QApplication
) -> None:
    prices = FakePriceFacade()
    prices.list_error = OSError("disk I/O error")
    bots = FakeBotFacade()
    dialog = await app_settings(qtbot, qapp, prices, bots)
    section = section_of(dialog)
    assert section.error.isVisible()
    assert section.error.text() == t("prices.load_failed", reason="disk I/O error")
    assert dialog.save_button.isEnabled()

    dialog.theme_combo.setCurrentIndex(dialog.theme_combo.findData("dark"))
    click(dialog.save_button)
    await wait_until(lambda: bool(bots.preference_updates))
    assert bots.preference_updates == [PreferencesUpdate(theme="dark")]


async def test_a_price_set_or_removed_elsewhere_shows_in_the_open_dialog(
    qtbot: QtBot, qapp: QApplication
) -> None:
    """A script sets a price through the API while the settings are open: the list follows, through the
    bridge's pricesChanged, without the person closing and reopening the dialog."""
    prices = FakePriceFacade()
    bridge = EventBridge(prices.bus, attention_interval_ms=0)
    dialog = AppSettingsDialog(
        FakeBotFacade(), lambda _on: None, qapp, prices=prices, prices_changed=bridge.pricesChanged
    )
    qtbot.addWidget(dialog)
    dialog.show()
    await dialog.load()
    section = section_of(dialog)
    assert section.rows == {}

    await prices.set(
        "deepseek-chat",
        {"input": "0.27", "output": "1.1", "cacheRead": "0.07", "cacheWrite": "0.27", "currency": "USD"},
    )
    await wait_until(lambda: "deepseek-chat" in section.rows)
    assert section.rows["deepseek-chat"].detail.text() == t(
        "prices.row.main", input="$0.27", output="$1.10", currency="USD"
    )

    await prices.remove("deepseek-chat")
    await wait_until(lambda: section.rows == {} and section.empty.isVisible())
    bridge.close()

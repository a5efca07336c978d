"""The 价格 section of the app settings (issue 7 item 1): the person's own price per model, saved through
`PriceFacade` at once (not with the dialog's 保存, which is for the preferences above it).

    价格
      花费按价格估算，显示为“约”，以服务商的账单为准；……
      deepseek-chat                                              [删除]
      输入 $0.27 / 输出 $1.10 每百万 token · USD
      缓存读取 $0.07 / 缓存写入 $0.27
      [添加价格]  -> 模型 · 输入 · 输出 · 缓存读取 · 缓存写入 · 币种   [取消] [保存价格]

A refused field is said under its own row, and the form keeps what was typed; nothing is stored then.
Empty cache prices are sent as the input price (no cache discount), which the placeholder says.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QLineEdit, QVBoxLayout, QWidget

from core.cost.price_facade import PriceFacade, PriceOverrideView
from core.cost.prices import CURRENCIES
from core.errors import InvalidInputError, NotFoundError
from ui import theme
from ui.answer_bar import reason
from ui.async_calls import AsyncCalls
from ui.elided_text import ElidedText
from ui.form import LABEL_WIDTH, Combo, EnterSubmits, FieldRow, Section, button, line_input, small_label
from ui.i18n import t

log = logging.getLogger(__name__)

# The currencies model providers bill in most, first; the rest of core's list after them.
FIRST_CURRENCIES = ("USD", "CNY", "EUR")
SYMBOLS = {"USD": "$", "CNY": "¥", "EUR": "€", "GBP": "£", "JPY": "JP¥"}
AMOUNT_FIELDS = ("input", "output", "cacheRead", "cacheWrite")
AMOUNT_WIDTH = 110
_CENT = Decimal("0.01")


def money(amount: str, currency: str) -> str:
    """「$0.27」, 「¥2.00」, 「1.50 HKD」: at least two decimals, as many more as were set."""
    try:
        value = Decimal(amount)
    except InvalidOperation:
        return f"{amount} {currency}"
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and exponent > -2:
        value = value.quantize(_CENT)
    symbol = SYMBOLS.get(currency)
    return f"{symbol}{value:,}" if symbol else f"{value:,} {currency}"


class PriceRow(QWidget):
    """One override: the model, its input and output prices and currency, the cache prices, and 删除."""

    def __init__(
        self, view: PriceOverrideView, on_remove: Callable[[PriceOverrideView], None], parent: QWidget
    ) -> None:
        super().__init__(parent)
        self.setObjectName("priceRow")
        self.view = view
        self.model = ElidedText(view.model, 1, self)
        self.model.setObjectName("priceModel")
        self.detail = small_label(
            t(
                "prices.row.main",
                input=money(view.input, view.currency),
                output=money(view.output, view.currency),
                currency=view.currency,
            ),
            "muted",
            "priceDetail",
            self,
        )
        self.cache = small_label(
            t(
                "prices.row.cache",
                read=money(view.cache_read, view.currency),
                write=money(view.cache_write, view.currency),
            ),
            "faint",
            "priceCache",
            self,
        )
        self.remove_button = button(t("prices.remove"), self, "quiet")
        self.remove_button.setFont(theme.font("small"))
        self.remove_button.setAccessibleName(f"{t('prices.remove')} {view.model}")
        self.remove_button.clicked.connect(lambda _checked=False: on_remove(self.view))
        text = QVBoxLayout()
        text.setSpacing(2)
        text.addWidget(self.model)
        text.addWidget(self.detail)
        text.addWidget(self.cache)
        line = QHBoxLayout(self)
        line.setContentsMargins(14, 9, 10, 9)
        line.setSpacing(10)
        line.addLayout(text, 1)
        line.addWidget(self.remove_button, 0, Qt.AlignmentFlag.AlignVCenter)

    def set_removing(self, removing: bool) -> None:
        self.remove_button.setEnabled(not removing)
        self.remove_button.setText(t("prices.removing") if removing else t("prices.remove"))


class PriceSection(Section):
    """`changed()` after a price was saved or deleted (the list is then read again)."""

    changed = Signal()

    def __init__(self, prices: PriceFacade, parent: QWidget | None = None) -> None:
        super().__init__(t("prices.section"), parent)
        self.setObjectName("priceSection")
        self._prices = prices
        self._calls = AsyncCalls()
        self._saving = False
        self.rows: dict[str, PriceRow] = {}

        intro = QWidget(self.well)
        intro_line = QVBoxLayout(intro)
        intro_line.setContentsMargins(14, 10, 14, 10)
        self.intro = small_label(t("prices.intro"), "muted", "priceIntro", intro)
        intro_line.addWidget(self.intro)
        self.add(intro)

        self.list_box = QWidget(self.well)
        self.list_box.setObjectName("priceList")
        self._list = QVBoxLayout(self.list_box)
        self._list.setContentsMargins(0, 0, 0, 0)
        self._list.setSpacing(0)
        self.empty = small_label(t("prices.empty"), "faint", "priceEmpty", self.list_box)
        self.empty.setContentsMargins(14, 10, 14, 10)
        self._list.addWidget(self.empty)
        self.add(self.list_box)

        self.add(self._build_add_area())

    # -- building --------------------------------------------------------------------------------------

    def _build_add_area(self) -> QWidget:
        area = QWidget(self.well)
        column = QVBoxLayout(area)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)

        self.add_button = button(t("prices.add"), area)
        self.add_button.clicked.connect(lambda _checked=False: self.open_form())
        opener = QHBoxLayout()
        opener.setContentsMargins(14, 10, 14, 10)
        opener.addWidget(self.add_button)
        opener.addStretch(1)
        self.opener = QWidget(area)
        self.opener.setLayout(opener)
        column.addWidget(self.opener)
        self.form = self._build_form(area)
        column.addWidget(self.form)
        # What is not about one field (a store that can't be read, too many prices): under it all.
        self.error = small_label("", "danger", "priceError", area)
        self.error.setContentsMargins(14, 0, 14, 10)
        column.addWidget(self.error)
        return area

    def _build_form(self, area: QWidget) -> QFrame:
        self.form = QFrame(area)
        self.form.setObjectName("priceForm")
        form_column = QVBoxLayout(self.form)
        form_column.setContentsMargins(0, 4, 0, 10)
        form_column.setSpacing(0)
        self.model_input = line_input(self.form, t("prices.model.placeholder"))
        self.model_input.setMaxLength(200)
        self.inputs: dict[str, QLineEdit] = {}
        self.form_rows: dict[str, FieldRow] = {
            "model": FieldRow(t("prices.model"), self.model_input, t("prices.form.hint"), self.form)
        }
        labels = {
            "input": "prices.input",
            "output": "prices.output",
            "cacheRead": "prices.cache_read",
            "cacheWrite": "prices.cache_write",
        }
        for field, label in labels.items():
            placeholder = t("prices.same_as_input") if field.startswith("cache") else "0.27"
            amount = line_input(self.form, placeholder)
            amount.setFixedWidth(AMOUNT_WIDTH)
            unit = QLabel(t("prices.per_million"), self.form)
            unit.setProperty("role", "faint")
            line = QHBoxLayout()
            line.setSpacing(8)
            line.addWidget(amount)
            line.addWidget(unit)
            line.addStretch(1)
            self.inputs[field] = amount
            self.form_rows[field] = FieldRow(t(label), line, parent=self.form)
        self.currency_combo = Combo(self.form)
        codes = [*FIRST_CURRENCIES, *sorted(CURRENCIES - set(FIRST_CURRENCIES))]
        for code in codes:
            self.currency_combo.addItem(f"{code}  {SYMBOLS[code]}" if code in SYMBOLS else code, code)
        self.currency_combo.setMinimumWidth(AMOUNT_WIDTH)
        currency_line = QHBoxLayout()
        currency_line.addWidget(self.currency_combo)
        currency_line.addStretch(1)
        self.form_rows["currency"] = FieldRow(t("prices.currency"), currency_line, parent=self.form)
        for row in self.form_rows.values():
            form_column.addWidget(row)

        self.cancel_button = button(t("prices.cancel"), self.form)
        self.cancel_button.clicked.connect(lambda _checked=False: self.close_form())
        self.save_button = button(t("prices.save"), self.form, "primary")
        self.save_button.clicked.connect(lambda _checked=False: self.submit())
        # Under the inputs, on the left: kept apart from the dialog's own 取消 / 保存 at the foot.
        actions = QHBoxLayout()
        actions.setContentsMargins(14 + LABEL_WIDTH + 12, 4, 14, 0)
        actions.setSpacing(8)
        actions.addWidget(self.save_button)
        actions.addWidget(self.cancel_button)
        actions.addStretch(1)
        form_column.addLayout(actions)
        self.form.hide()

        self._enter = EnterSubmits(self.submit, self)
        for widget in (self.model_input, *self.inputs.values(), self.currency_combo):
            widget.installEventFilter(self._enter)
        return self.form

    # -- reading ---------------------------------------------------------------------------------------

    async def load(self) -> None:
        try:
            views = await self._prices.list()
        except Exception as exc:
            log.warning("cannot read prices: %s", reason(exc))
            self._say(t("prices.load_failed", reason=reason(exc)))
            return
        self._show(views)

    def _show(self, views: list[PriceOverrideView]) -> None:
        for row in self.rows.values():
            self._list.removeWidget(row)
            row.deleteLater()
        for line in self.list_box.findChildren(QFrame, "settingsLine"):
            self._list.removeWidget(line)
            line.deleteLater()
        self.rows = {}
        for view in views:
            if self.rows:
                line = QFrame(self.list_box)
                line.setObjectName("settingsLine")
                line.setFixedHeight(1)
                self._list.addWidget(line)
            row = PriceRow(view, self.remove, self.list_box)
            self._list.addWidget(row)
            self.rows[view.model] = row
        self.empty.setVisible(not views)

    # -- what a person does ------------------------------------------------------------------------------

    def open_form(self) -> None:
        self._clear_errors()
        self.opener.hide()
        self.form.show()
        self.model_input.setFocus()

    def close_form(self) -> None:
        self._clear_errors()
        self.model_input.clear()
        for amount in self.inputs.values():
            amount.clear()
        self.currency_combo.setCurrentIndex(0)
        self.form.hide()
        self.opener.show()

    def form_data(self) -> dict[str, str]:
        """The override JSON as typed. Empty cache prices are the input price: no cache discount."""
        typed = {field: amount.text().strip() for field, amount in self.inputs.items()}
        for field in ("cacheRead", "cacheWrite"):
            typed[field] = typed[field] or typed["input"]
        return {**typed, "currency": str(self.currency_combo.currentData())}

    def submit(self) -> None:
        if self._saving or self.form.isHidden():
            return
        self._clear_errors()
        self._saving = True
        self.save_button.setEnabled(False)
        self.save_button.setText(t("prices.saving"))
        self._calls.start(
            self._prices.set(self.model_input.text(), self.form_data()),
            done=self._saved,
            failed=self._save_failed,
        )

    def remove(self, view: PriceOverrideView) -> None:
        self._clear_errors()
        row = self.rows.get(view.model)
        if row is not None:
            row.set_removing(True)
        self._calls.start(
            self._prices.remove(view.model),
            done=lambda _none: self._after_change(),
            failed=lambda exc: self._remove_failed(view, exc),
        )

    # -- answers ---------------------------------------------------------------------------------------

    def _saved(self, _view: PriceOverrideView) -> None:
        self._done_saving()
        self.close_form()
        self._after_change()

    def _save_failed(self, exc: Exception) -> None:
        self._done_saving()
        if isinstance(exc, InvalidInputError) and exc.field in self.form_rows:
            self.form_rows[exc.field].show_error(self._field_message(exc))
            target = self.model_input if exc.field == "model" else self.inputs.get(exc.field)
            if target is not None:
                target.setFocus()
        else:
            log.warning("saving a price failed: %s", reason(exc))
            self._say(t("prices.save_failed", reason=reason(exc)))

    def _remove_failed(self, view: PriceOverrideView, exc: Exception) -> None:
        if isinstance(exc, NotFoundError):  # gone already: show the list as it is
            self._after_change()
            return
        row = self.rows.get(view.model)
        if row is not None:
            row.set_removing(False)
        log.warning("deleting the price of %s failed: %s", view.model, reason(exc))
        self._say(t("prices.remove_failed", model=view.model, reason=reason(exc)))

    def on_prices_changed(self, _model: str) -> None:
        """A price was set or removed elsewhere (the API, another window): show the list as it is now."""
        self._calls.start(self.load())

    def _after_change(self) -> None:
        self.changed.emit()
        self._calls.start(self.load())

    # -- helpers ---------------------------------------------------------------------------------------

    @staticmethod
    def _field_message(exc: InvalidInputError) -> str:
        if exc.field == "model":
            return t("prices.error.model")
        if exc.field == "currency":
            return t("prices.error.currency")
        return t("prices.error.amount")

    def field_error(self, field: str) -> str:
        row = self.form_rows.get(field)
        return row.error_text if row is not None else ""

    def _done_saving(self) -> None:
        self._saving = False
        self.save_button.setEnabled(True)
        self.save_button.setText(t("prices.save"))

    def _clear_errors(self) -> None:
        for row in self.form_rows.values():
            row.clear_error()
        self.error.clear()
        self.error.hide()

    def _say(self, text: str) -> None:
        self.error.setText(text)
        self.error.show()

    def cancel_calls(self) -> None:
        self._calls.cancel_all()

"""The choice offered where a key cannot be saved because no keyring answers (docs/desktop.md#settings):
keep API keys in a file only this user can read, with the plain warning of what that means. The person
chooses once; the app remembers it in the data dir."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QVBoxLayout, QWidget

from core.errors import ErrandError
from ui.form import button, small_label
from ui.i18n import t

NO_KEYRING_KEY = "error.no_keyring"


def is_no_keyring(exc: Exception) -> bool:
    return isinstance(exc, ErrandError) and exc.key == NO_KEYRING_KEY


class KeyFileChoice(QFrame):
    chosen = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("keyFileChoice")
        self.warning = small_label(t("keyfile.warning"), "muted", "keyFileWarning", self)
        self.button = button(t("keyfile.use_file"), self)
        self.button.clicked.connect(self._choose)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.button)
        row.addStretch(1)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(6)
        column.addWidget(self.warning)
        column.addLayout(row)
        self.hide()

    def _choose(self) -> None:
        self.button.setEnabled(False)  # one click: the card saves again once the file is chosen
        self.chosen.emit()

    def offer(self) -> None:
        self.button.setEnabled(True)
        self.show()

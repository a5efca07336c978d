"""How the outcome of 「测试连接」 is shown, the same in bot settings and on the first-run card: a dot (green
when it answered, red when not) and the check's words, with the latency when it answered."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel, QPushButton

from core.bots.views import ConnectionCheck
from ui.i18n import t
from ui.status_dot import StatusDot


def check_text(check: ConnectionCheck) -> str:
    if check.ok and check.latency_ms > 0:
        return t("settings.test.ok_latency", message=check.message, ms=round(check.latency_ms))
    return check.message


def show_check(button: QPushButton, dot: StatusDot, result: QLabel, check: ConnectionCheck) -> None:
    """The test ended: the button is usable again, and the dot and words say how it went."""
    button.setEnabled(True)
    button.setText(t("settings.test"))
    dot.set_state("working" if check.ok else "failed")
    dot.show()
    result.setText(check_text(check))
    result.setProperty("ok", check.ok)  # the stylesheet colours the words by it
    result.style().unpolish(result)
    result.style().polish(result)
    result.show()

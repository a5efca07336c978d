"""Where a rule shows in the chat (docs/desktop.md#chat-view): 「来自规则「<title>」」 in small muted words
over a message a rule sent, opening the rule when clicked, and the chip 「● 规则 · <title> ›」 under a reply
that created a rule, opening it too. A deleted rule's message says 「来自一条已删除的规则」 and opens
nothing."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QEnterEvent
from PySide6.QtWidgets import QHBoxLayout, QSizePolicy, QWidget

from core.chat.views import MessageView, RuleChip
from ui import theme
from ui.i18n import t
from ui.task_chip import ChipRow, ChipText, PressableRow
from ui.theme import DotState


def rule_dot(chip: RuleChip) -> DotState:
    """As the bot panel's rule rows: red paused, green acting, grey observing or off."""
    if chip.paused:
        return "failed"
    return "working" if chip.mode == "act" else "idle"


class RuleOriginLink(PressableRow):
    """The caption over a rule's message. `opened(rule_id)` when clicked (or Space on it)."""

    opened = Signal(str)

    def __init__(self, view: MessageView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ruleOrigin")
        self._hovered = False
        self.rule_id = view.rule_id
        self.gone = not view.rule_title
        text = t("message.from_deleted_rule") if self.gone else t("message.from_rule", title=view.rule_title)
        self.label = ChipText(text, 1, self)
        self.label.setObjectName("ruleOriginText")
        self.label.setFont(theme.font("caption"))
        self.label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.setText(text)  # not drawn (the label is): what tests and screen readers read
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label, 1)
        if self.gone:  # nothing to open: plain words, no hand, not reached by Tab
            self.setCursor(Qt.CursorShape.ArrowCursor)
            self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        else:
            self.setToolTip(t("message.open_rule"))
            self.clicked.connect(lambda: self.opened.emit(self.rule_id))
        self._tint()

    def enterEvent(self, event: QEnterEvent) -> None:
        self._hovered = not self.gone
        self._tint()
        super().enterEvent(event)

    def leaveEvent(self, event: QEvent) -> None:
        self._hovered = False
        self._tint()
        super().leaveEvent(event)

    def _tint(self) -> None:
        # A link that stays quiet until pointed at: muted words, the text colour and a line under on hover;
        # a deleted rule's words are as faint as 「来自后台任务」, since they open nothing.
        colors = theme.colors()
        font = theme.font("caption")
        font.setUnderline(self._hovered)
        self.label.setFont(font)
        self.label.set_color(colors.text if self._hovered else colors.faint if self.gone else colors.muted)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() == QEvent.Type.StyleChange:
            self._tint()
        super().changeEvent(event)


class RuleChipRow(ChipRow):
    """「● 规则 · <title> ›」 under the reply that created the rule. `opened(rule_id)` when clicked."""

    def __init__(self, chip: RuleChip, parent: QWidget | None = None) -> None:
        super().__init__("ruleChip", rule_dot(chip), parent)
        self.chip = chip
        self.set_chip(chip)
        self.clicked.connect(lambda: self.opened.emit(self.chip.rule_id))

    def set_chip(self, chip: RuleChip) -> None:
        self.chip = chip
        self.show_line(rule_dot(chip), t("rule.chip", title=chip.title))

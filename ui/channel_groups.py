"""The groups a DingTalk channel was added to, under its row in bot settings' 渠道
(docs/channels.md#connecting-dingtalk). A bot works in a group only once its owner allowed it there:

            群聊
            ● 产品讨论群                 等你允许      [允许] [不允许]     amber: the group asks
            ● 运维值班群                   已允许             [不允许]     green: it works there
            ● 闲聊群                       未允许               [允许]     grey: it stays quiet there
            把机器人拉进群后，那个群会出现在这里，等你允许。              while there is none

Pressing a button asks `admit(group_id, allowed)`; both of that group's buttons wait until the list is read
again (or the ask failed), so a second press cannot cross the first.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from core.channels.views import ChannelGroup
from ui import theme
from ui.elided_text import ElidedText
from ui.form import button, small_label
from ui.i18n import t
from ui.status_dot import StatusDot
from ui.theme import DotState

ADMISSIONS = ("asked", "allowed", "refused")
DOTS: dict[str, DotState] = {"asked": "needs", "allowed": "working", "refused": "idle"}


def admission(group: ChannelGroup) -> str:
    """The group's admission; one the UI does not know is taken as still asked, so it can be decided."""
    return group.admission if group.admission in ADMISSIONS else "asked"


def group_title(group: ChannelGroup) -> str:
    return group.title.strip() or t("channels.group.untitled")


def offered(group: ChannelGroup) -> tuple[bool, ...]:
    """The answers a group's buttons give (True: 允许, False: 不允许): both while it asks, else the one that
    changes it."""
    state = admission(group)
    if state == "allowed":
        return (False,)
    if state == "refused":
        return (True,)
    return (True, False)


class GroupRow(QWidget):
    """● title ··· state [允许] [不允许]."""

    def __init__(self, group: ChannelGroup, admit: Callable[[str, bool], None], parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("settingsGroupRow")
        self.group = group
        state = admission(group)
        self.dot = StatusDot(DOTS[state], 7, self)
        self.title = ElidedText(group_title(group), 1, self)
        self.title.setObjectName("settingsGroupTitle")
        self.title.setToolTip(group.id)  # two groups of one name are told apart by their id
        self.state_label = QLabel(t(f"channels.group.{state}"), self)
        self.state_label.setObjectName("settingsGroupState")
        self.state_label.setProperty("role", "muted")
        self.state_label.setFont(theme.font("small"))
        self.allow_button: QPushButton | None = None
        self.refuse_button: QPushButton | None = None
        line = QHBoxLayout(self)
        line.setContentsMargins(0, 0, 0, 0)
        line.setSpacing(8)
        line.addWidget(self.dot, 0, Qt.AlignmentFlag.AlignVCenter)
        line.addWidget(self.title, 1, Qt.AlignmentFlag.AlignVCenter)
        line.addWidget(self.state_label, 0, Qt.AlignmentFlag.AlignVCenter)
        line.addSpacing(6)
        answers = offered(group)
        for allowed in (True, False):
            made = button(t("channels.group.allow" if allowed else "channels.group.refuse"), self)
            made.setProperty("kind", "" if allowed else "quiet")
            line.addWidget(made)
            if allowed not in answers:
                # Its room is kept: every group's 允许 and 不允许 stand in one column, and so do the states.
                kept = made.sizePolicy()
                kept.setRetainSizeWhenHidden(True)
                made.setSizePolicy(kept)
                made.hide()
                continue
            made.clicked.connect(lambda _checked=False, answer=allowed: self._answer(admit, answer))
            if allowed:
                self.allow_button = made
            else:
                self.refuse_button = made
        self.setAccessibleName(f"{group_title(group)} · {self.state_label.text()}")

    @property
    def buttons(self) -> list[QPushButton]:
        return [b for b in (self.allow_button, self.refuse_button) if b is not None]

    def set_busy(self, busy: bool) -> None:
        for each in self.buttons:
            each.setEnabled(not busy)

    def _answer(self, admit: Callable[[str, bool], None], allowed: bool) -> None:
        self.set_busy(True)
        admit(self.group.id, allowed)


class GroupList(QWidget):
    """群聊 and a GroupRow per group, the latest first (as the channel lists them)."""

    def __init__(
        self, groups: tuple[ChannelGroup, ...], admit: Callable[[str, bool], None], parent: QWidget
    ) -> None:
        super().__init__(parent)
        self.setObjectName("settingsGroups")
        self.heading = QLabel(t("channels.groups"), self)
        self.heading.setObjectName("settingsGroupsLabel")
        self.heading.setProperty("role", "faint")
        self.heading.setFont(theme.font("small"))
        self.rows = [GroupRow(group, admit, self) for group in groups]
        hint = "" if groups else t("channels.groups_none")
        self.none_label = small_label(hint, "faint", "settingsHint", self)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 2, 0, 0)
        column.setSpacing(4)
        column.addWidget(self.heading)
        for row in self.rows:
            column.addWidget(row)
        column.addWidget(self.none_label)

    def row(self, group_id: str) -> GroupRow | None:
        return next((r for r in self.rows if r.group.id == group_id), None)

"""A bot's row in the sidebar (docs/attention.md#sidebar-state): its avatar with the state ring (green while
it works, amber while something of it waits for you), its name, and the activity line under it
(「GPU 价格调研等你回答」, 「正在工作…」); when several things wait, their count in an amber badge.
An idle bot shows only its avatar and name: nothing is drawn when healthy.

The row is painted by the sidebar list's delegate (`paint_bot_row`); avatars are drawn once per look
(name, colour, state, size, scheme) and reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from PySide6.QtCore import QRect, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetrics, QPainter, QPixmap

from core.bots.views import BotActivity, BotView
from ui import theme
from ui.avatar import avatar_pixmap, resolve_colour
from ui.i18n import t

AVATAR_SIZE = 30
PAD_X = 12
PAD_Y = 8
GAP = 10


@dataclass(frozen=True, slots=True)
class BotEntry:
    bot: BotView
    activity: BotActivity

    @property
    def state(self) -> str:
        return self.activity.state

    @property
    def line(self) -> str:
        # Paused is worth a word only when nothing else is said about the bot.
        if not self.activity.line and self.bot.paused:
            return t("panel.paused")
        return self.activity.line


def idle(bot_id: str) -> BotActivity:
    return BotActivity(bot_id, "idle")


@lru_cache(maxsize=128)
def _avatar(name: str, colour: str, state: str, size: int, scheme: str) -> QPixmap:
    return avatar_pixmap(name, colour, size, state)


def bot_avatar(bot: BotView, state: str, size: int = AVATAR_SIZE) -> QPixmap:
    return _avatar(bot.name, resolve_colour(bot.avatar, bot.id), state, size, theme.scheme())


def row_height() -> int:
    name = QFontMetrics(theme.font("strong"))
    small = QFontMetrics(theme.font("small"))
    return max(AVATAR_SIZE, name.height() + 2 + small.height()) + 2 * PAD_Y


def paint_bot_row(painter: QPainter, rect: QRect, entry: BotEntry, hovered: bool) -> None:
    """Avatar, name, and the activity line (when there is one) to the right of it."""
    c = theme.colors()
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    if hovered:
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(c.hover))
        painter.drawRoundedRect(QRectF(rect.adjusted(6, 2, -6, -2)), 8, 8)
    inner = rect.adjusted(PAD_X + 2, PAD_Y, -(PAD_X + 2), -PAD_Y)
    avatar_top = inner.top() + (inner.height() - AVATAR_SIZE) // 2
    painter.drawPixmap(inner.left(), avatar_top, bot_avatar(entry.bot, entry.state))
    left = inner.left() + AVATAR_SIZE + GAP

    name_font = theme.font("strong")
    small_font = theme.font("small")
    caption_font = theme.font("caption")
    name_fm = QFontMetrics(name_font)
    small_fm = QFontMetrics(small_font)
    line = " ".join(entry.line.split())
    badge = str(entry.activity.waiting_count) if entry.activity.waiting_count > 1 else ""
    badge_w = QFontMetrics(caption_font).horizontalAdvance(badge) + 12 if badge else 0
    text_h = name_fm.height() + (2 + small_fm.height() if line else 0)
    top = inner.top() + (inner.height() - text_h) // 2
    name_rect = QRect(left, top, inner.right() - left - (badge_w + 6 if badge else 0), name_fm.height())
    painter.setFont(name_font)
    painter.setPen(QColor(c.text))
    name = name_fm.elidedText(entry.bot.name, Qt.TextElideMode.ElideRight, name_rect.width())
    painter.drawText(name_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, name)
    if line:
        line_rect = QRect(left, name_rect.bottom() + 3, inner.right() - left, small_fm.height())
        painter.setFont(small_font)
        painter.setPen(QColor(c.muted))
        shown = small_fm.elidedText(line, Qt.TextElideMode.ElideRight, line_rect.width())
        painter.drawText(line_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, shown)
    if badge:
        height = 18
        badge_rect = QRectF(inner.right() - badge_w, name_rect.center().y() - height / 2 + 1, badge_w, height)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(c.amber))
        painter.drawRoundedRect(badge_rect, height / 2, height / 2)
        painter.setFont(caption_font)
        painter.setPen(QColor("#ffffff"))
        painter.drawText(badge_rect, Qt.AlignmentFlag.AlignCenter, badge)
    painter.restore()

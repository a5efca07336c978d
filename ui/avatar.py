"""A bot's round avatar: its initial on one of the palette colours (core.bots.avatars.AVATAR_COLOURS).

Core only knows the colour keys; the shades live here, one per scheme, so a picked colour reads well on both
backgrounds. An empty key means "none picked": the colour is derived from the bot's id, stable across runs.
The `state` adds the sidebar's ring: green while the bot works, amber while something of it waits for you.
"""

from __future__ import annotations

import hashlib
from typing import Literal

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QPainter, QPen, QPixmap

from core.bots.avatars import AVATAR_COLOURS
from ui import theme

AvatarState = Literal["idle", "working", "waiting"]

# (light, dark) fill per key: mid-tone in light mode, a little deeper in dark so white text keeps contrast.
SHADES: dict[str, tuple[str, str]] = {
    "teal": ("#2a9d8f", "#23867a"),
    "blue": ("#3b7ddd", "#3569c2"),
    "violet": ("#7c5cd6", "#6a4fbb"),
    "rose": ("#d0567a", "#b64a6a"),
    "amber": ("#d4932a", "#b97f22"),
    "green": ("#3f9e5a", "#35874d"),
    "slate": ("#66707c", "#596270"),
}


def resolve_colour(chosen: str, bot_id: str) -> str:
    """The picked key, or one derived from the id when none is picked (or the key is unknown)."""
    if chosen in SHADES:
        return chosen
    digest = hashlib.sha1(bot_id.encode("utf-8")).digest()
    return AVATAR_COLOURS[digest[0] % len(AVATAR_COLOURS)]


def shade(key: str) -> QColor:
    light, dark = SHADES.get(key, SHADES["slate"])
    return QColor(dark if theme.scheme() == "dark" else light)


def initial(name: str) -> str:
    """The first letter (or Han character) of the name, upper-cased; '?' for an empty name."""
    stripped = name.strip()
    return stripped[0].upper() if stripped else "?"


def avatar_pixmap(name: str, colour_key: str, size: int, state: str = "idle") -> QPixmap:
    """A `size`-point round avatar, drawn at the screen's pixel ratio. `colour_key` must already be resolved
    (see `resolve_colour`); an unknown key draws slate."""
    screen = QGuiApplication.primaryScreen()
    ratio = screen.devicePixelRatio() if screen is not None else 1.0
    pixmap = QPixmap(QSize(round(size * ratio), round(size * ratio)))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing)
    ring = {"working": theme.colors().green, "waiting": theme.colors().amber}.get(state)
    # With a ring the disc shrinks so the ring sits inside the same square and rows don't shift.
    inset = max(2.0, size / 12) if ring else 0.0
    disc = QRectF(inset, inset, size - 2 * inset, size - 2 * inset)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(shade(colour_key))
    painter.drawEllipse(disc)
    if ring:
        width = max(1.5, size / 16)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(QPen(QColor(ring), width))
        painter.drawEllipse(QRectF(width / 2, width / 2, size - width, size - width))
    font = QFont(theme.font("strong"))
    font.setPixelSize(max(8, round(disc.height() * 0.46)))
    painter.setFont(font)
    painter.setPen(QColor("#ffffff"))
    painter.drawText(disc, Qt.AlignmentFlag.AlignCenter, initial(name))
    painter.end()
    return pixmap

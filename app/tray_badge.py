"""The needs-you count drawn on the tray icon: a small amber circle with the number, none at 0, "9+" above 9.

Drawn on the app icon's pixmap at a few sizes, so the tray picks a sharp one for its own size.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPen, QPixmap

# Amber, as the needs-you dots (warn) elsewhere; dark text reads on it in both schemes.
BADGE_FILL = QColor("#F59E0B")
BADGE_TEXT = QColor("#1F1300")
BADGE_RING = QColor("#FFFFFF")
SIZES = (16, 22, 24, 32, 48, 64)


def badge_text(count: int) -> str:
    """What the badge says: '' at 0 (no badge), the number up to 9, then '9+'."""
    if count <= 0:
        return ""
    return str(count) if count <= 9 else "9+"


def badge_pixmap(base: QIcon, size: int, count: int) -> QPixmap:
    """The icon at `size` px with the badge in its bottom-right corner (the plain icon at 0)."""
    pixmap = base.pixmap(size, size)
    text = badge_text(count)
    if not text or pixmap.isNull():
        return pixmap
    # Draw on a copy in device pixels so the badge is as sharp as the icon on a HiDPI screen.
    ratio = pixmap.devicePixelRatio()
    out = QPixmap(pixmap)
    painter = QPainter(out)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        side = out.width() / ratio
        diameter = side * (0.62 if len(text) == 1 else 0.72)
        rect = QRectF(side - diameter, side - diameter, diameter, diameter)
        ring = max(1.0, side / 22)
        painter.setPen(QPen(BADGE_RING, ring))
        painter.setBrush(BADGE_FILL)
        painter.drawEllipse(rect.adjusted(ring / 2, ring / 2, -ring / 2, -ring / 2))
        font = QFont()
        font.setBold(True)
        font.setPixelSize(max(6, round(diameter * (0.62 if len(text) == 1 else 0.46))))
        painter.setFont(font)
        painter.setPen(BADGE_TEXT)
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)
    finally:
        painter.end()
    return out


def badged_icon(base: QIcon, count: int) -> QIcon:
    """The tray icon for a needs-you count: `base` itself at 0."""
    if not badge_text(count):
        return base
    icon = QIcon()
    for size in SIZES:
        icon.addPixmap(badge_pixmap(base, size, count))
    return icon

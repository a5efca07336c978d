"""Monochrome SVG icons tinted with a theme colour, so one drawing serves both schemes."""

from __future__ import annotations

from functools import cache

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer

from ui.assets import icon_path


@cache
def _renderer(name: str) -> QSvgRenderer:
    return QSvgRenderer(str(icon_path(name)))


def tinted_pixmap(name: str, color: str | QColor, size: int) -> QPixmap:
    ratio = QGuiApplication.primaryScreen().devicePixelRatio() if QGuiApplication.primaryScreen() else 1.0
    pixmap = QPixmap(QSize(int(size * ratio), int(size * ratio)))
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    _renderer(name).render(painter, QRectF(0, 0, pixmap.width(), pixmap.height()))
    # Keep the drawing's alpha, replace its colour.
    painter.setCompositionMode(QPainter.CompositionMode.CompositionMode_SourceIn)
    painter.fillRect(pixmap.rect(), QColor(color))
    painter.end()
    pixmap.setDevicePixelRatio(ratio)
    return pixmap


def tinted_icon(name: str, color: str | QColor, size: int = 16) -> QIcon:
    return QIcon(tinted_pixmap(name, color, size))

"""A QR code drawn for a screen: what a WeChat login shows (docs/desktop.md#connecting-wechat).

segno encodes the text; the modules are painted here one square each, black on white with the standard
four-module quiet zone, at a whole number of device pixels per module so no edge is smoothed into grey
(a phone's camera reads hard edges best). The white is part of the image, so the code reads the same on
the dark theme. segno is imported on first use: the window never pays for it unless a code is shown.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor, QImage, QPainter

QUIET_ZONE = 4  # modules of white around the code, as the QR standard asks
MIN_SIDE_PX = 220


def qr_matrix(content: str) -> list[list[bool]]:
    """The code's dark (True) and light modules, row by row, without the quiet zone."""
    import segno

    # Medium error correction: a login URL stays a small code that still reads off a glossy screen.
    code = segno.make_qr(content, error="m", boost_error=False)
    return [[bool(module) for module in row] for row in code.matrix]


def qr_image(matrix: list[list[bool]], min_side: int = MIN_SIDE_PX, ratio: float = 1.0) -> QImage:
    """The modules at `ratio` device pixels per logical pixel, at least `min_side` logical pixels wide."""
    modules = len(matrix) + 2 * QUIET_ZONE
    scale = max(1, math.ceil(min_side * ratio / modules))  # device pixels per module, a whole number
    side = modules * scale
    image = QImage(side, side, QImage.Format.Format_RGB32)
    image.fill(QColor("#ffffff"))
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor("#000000"))
    for y, row in enumerate(matrix):
        for x, dark in enumerate(row):
            if dark:
                painter.drawRect(QRect((x + QUIET_ZONE) * scale, (y + QUIET_ZONE) * scale, scale, scale))
    painter.end()
    image.setDevicePixelRatio(ratio)
    return image

"""Draw the tray icon as panels show it: at 16, 22, 24 and 32 px, with no badge, 3 and 12 waiting, on a
light and a dark panel strip, scaled up 4x so the pixels can be looked at.

    .venv/bin/python -m bench.render_tray [OUT_DIR]

Writes OUT_DIR/tray-icon-panels.png (default /tmp/errand-shots).
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QApplication

from app.tray import app_icon
from app.tray_badge import badge_pixmap

PANELS = (("light panel", QColor("#ECECEC")), ("dark panel", QColor("#1E1E1E")))
SIZES = (16, 22, 24, 32)
COUNTS = (0, 3, 12)
SCALE = 4
GAP = 8


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/errand-shots")
    out_dir.mkdir(parents=True, exist_ok=True)
    _app = QApplication.instance() or QApplication([])
    icon = app_icon()
    cell = max(SIZES) + GAP
    width = (len(SIZES) * len(COUNTS)) * cell + GAP
    height = len(PANELS) * cell + GAP
    image = QImage(width * SCALE, height * SCALE, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    painter.scale(SCALE, SCALE)
    painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, False)
    for row, (_name, colour) in enumerate(PANELS):
        top = row * cell
        painter.fillRect(0, top, width, cell + GAP, colour)
        for i, (size, count) in enumerate((s, c) for s in SIZES for c in COUNTS):
            pixmap = badge_pixmap(icon, size, count)
            left = GAP + i * cell + (max(SIZES) - size) // 2
            painter.drawPixmap(left, top + GAP // 2 + (max(SIZES) - size) // 2, pixmap)
    painter.end()
    path = out_dir / "tray-icon-panels.png"
    image.scaled(image.size(), Qt.AspectRatioMode.KeepAspectRatio).save(str(path))
    print(path)


if __name__ == "__main__":
    main()

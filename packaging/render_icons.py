"""Renders resources/icons/errand.svg to build/icons/errand-<size>.png for the Windows and macOS specs
(PyInstaller makes the .ico and .icns from them). Run from the build venv: python packaging/render_icons.py"""

from __future__ import annotations

from pathlib import Path

from app.launcher_entry import render_png_with_qt
from ui.assets import icon_path

ROOT = Path(__file__).resolve().parents[1]

if __name__ == "__main__":
    out = ROOT / "build" / "icons"
    out.mkdir(parents=True, exist_ok=True)
    svg = icon_path("errand").read_bytes()
    for size in (16, 32, 48, 64, 128, 256, 512, 1024):
        (out / f"errand-{size}.png").write_bytes(render_png_with_qt(svg, size))
    print(f"icons in {out}")

"""Light and dark looks: a restrained palette, a stylesheet per scheme, and fonts with a CJK fallback.

The scheme follows the system (QStyleHints.colorScheme) unless ERRAND_THEME=light|dark pins it. Colours
live twice on purpose: the .qss files style ordinary widgets, `Colors` feeds the few things drawn by hand
(list rows, state dots, tinted icons). tests/ui/test_theme.py keeps the two in step.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Literal

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QFontDatabase, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from ui.assets import style_path

log = logging.getLogger(__name__)

Scheme = Literal["light", "dark"]
DotState = Literal["working", "needs", "failed", "idle"]


@dataclass(frozen=True, slots=True)
class Colors:
    window: str
    sidebar: str
    surface: str
    well: str
    line: str
    text: str
    muted: str
    faint: str
    accent: str
    on_accent: str
    bubble: str
    selection: str
    hover: str
    danger: str
    danger_well: str
    green: str
    amber: str
    red: str
    grey: str

    def dot(self, state: DotState) -> QColor:
        by_state = {"working": self.green, "needs": self.amber, "failed": self.red, "idle": self.grey}
        return QColor(by_state[state])


LIGHT = Colors(
    window="#fbfbfa",
    sidebar="#f3f3f1",
    surface="#ffffff",
    well="#f3f3f0",
    line="#e3e3df",
    text="#1f2328",
    muted="#646a72",
    faint="#8d9299",
    accent="#2f6bd8",
    on_accent="#ffffff",
    bubble="#e7edf8",
    selection="#e3e7ee",
    hover="#ebebe8",
    danger="#b8322f",
    danger_well="#fbeeed",
    green="#2e9e5b",
    amber="#c98a12",
    red="#d1423f",
    grey="#a0a5ab",
)

DARK = Colors(
    window="#1c1d1f",
    sidebar="#161718",
    surface="#242528",
    well="#232427",
    line="#313337",
    text="#e4e4e2",
    muted="#a0a4ab",
    faint="#7c8088",
    accent="#4c7fe6",
    on_accent="#ffffff",
    bubble="#283143",
    selection="#2a2d33",
    hover="#2a2c30",
    danger="#f07a75",
    danger_well="#35201f",
    green="#3fb968",
    amber="#d9a53a",
    red="#f0605b",
    grey="#6e747c",
)

# After the platform's own UI font: families that carry Simplified Chinese glyph shapes, so Han text never
# falls back to Japanese forms or to tofu. Qt takes the first family that has a glyph.
CJK_FAMILIES = [
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "PingFang SC",
    "Microsoft YaHei UI",
    "Microsoft YaHei",
    "WenQuanYi Micro Hei",
    "Droid Sans Fallback",
]


class _Current:
    scheme: Scheme = "light"
    base_font: QFont | None = None
    following = False
    chosen: Scheme | None = None  # the person's choice in Settings; None follows the system


_current = _Current()


def colors() -> Colors:
    return DARK if _current.scheme == "dark" else LIGHT


def scheme() -> Scheme:
    return _current.scheme


def system_scheme() -> Scheme:
    override = os.environ.get("ERRAND_THEME", "").strip().lower()
    if override in ("light", "dark"):
        return "dark" if override == "dark" else "light"
    hints = QGuiApplication.styleHints()
    return "dark" if hints.colorScheme() == Qt.ColorScheme.Dark else "light"


def apply_theme(app: QApplication, chosen: Scheme | None = None) -> Scheme:
    """Style the whole application; with no explicit scheme, also follow later system changes."""
    if _current.base_font is None:
        app.setStyle("Fusion")  # the same widget shapes on every platform; the stylesheet only adds colour
        _current.base_font = _ui_font(app.font())
        app.setFont(_current.base_font)
    picked = chosen or system_scheme()
    _current.scheme = picked
    _current.chosen = chosen
    app.setPalette(_palette(colors()))
    app.setStyleSheet(_stylesheet(picked))
    if chosen is None and not _current.following and not os.environ.get("ERRAND_THEME"):
        _current.following = True
        QGuiApplication.styleHints().colorSchemeChanged.connect(lambda _s: _follow_system(app))
    return picked


def _follow_system(app: QApplication) -> None:
    if _current.chosen is None:  # a scheme picked in Settings stays put when the system's changes
        apply_theme(app)


FontRole = Literal["body", "title", "strong", "small", "caption", "mono"]


def font(role: FontRole) -> QFont:
    result = QFont(_current.base_font or QApplication.font())
    size = result.pointSizeF() if result.pointSizeF() > 0 else 10.0
    if role == "title":
        result.setPointSizeF(size + 2)
        result.setWeight(QFont.Weight.DemiBold)
    elif role == "strong":
        result.setWeight(QFont.Weight.DemiBold)
    elif role == "small":
        result.setPointSizeF(size - 1)
    elif role == "caption":
        result.setPointSizeF(size - 1.5)
    elif role == "mono":
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        mono.setFamilies([mono.family(), "Noto Sans Mono CJK SC", *CJK_FAMILIES])
        mono.setPointSizeF(size - 1.5)
        return mono
    return result


def _ui_font(system: QFont) -> QFont:
    chosen = QFont(system)
    chosen.setFamilies([system.family(), *CJK_FAMILIES])
    # Some desktops report 9 pt, which is cramped for CJK strokes; never go below 10.
    if chosen.pointSizeF() < 10:
        chosen.setPointSizeF(10)
    chosen.setHintingPreference(QFont.HintingPreference.PreferNoHinting)
    return chosen


def _palette(c: Colors) -> QPalette:
    pal = QPalette()
    roles = {
        QPalette.ColorRole.Window: c.window,
        QPalette.ColorRole.WindowText: c.text,
        QPalette.ColorRole.Base: c.surface,
        QPalette.ColorRole.AlternateBase: c.well,
        QPalette.ColorRole.Text: c.text,
        QPalette.ColorRole.PlaceholderText: c.faint,
        QPalette.ColorRole.Button: c.surface,
        QPalette.ColorRole.ButtonText: c.text,
        QPalette.ColorRole.Highlight: c.accent,
        QPalette.ColorRole.HighlightedText: c.on_accent,
        QPalette.ColorRole.ToolTipBase: c.surface,
        QPalette.ColorRole.ToolTipText: c.text,
        QPalette.ColorRole.Link: c.accent,
        QPalette.ColorRole.Mid: c.line,
    }
    for role, value in roles.items():
        pal.setColor(role, QColor(value))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor(c.faint))
    return pal


def _stylesheet(picked: Scheme) -> str:
    """The scheme's main sheet followed by its area sheets (`light.settings.qss`, ...)."""
    main = style_path(picked)
    parts: list[str] = []
    for path in [main, *sorted(main.parent.glob(f"{picked}.*.qss"))]:
        try:
            parts.append(path.read_text(encoding="utf-8"))
        except OSError:
            log.exception("cannot read stylesheet %s", path)
    return "\n".join(parts)

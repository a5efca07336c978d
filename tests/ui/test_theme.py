"""Light and dark: the stylesheets and the hand-drawn colours stay in step, and the choice can be pinned."""

from __future__ import annotations

import re

import pytest
from PySide6.QtWidgets import QApplication

from ui import theme
from ui.assets import style_path


@pytest.mark.parametrize(("scheme", "colors"), [("light", theme.LIGHT), ("dark", theme.DARK)])
def test_stylesheet_uses_the_scheme_colours(scheme: theme.Scheme, colors: theme.Colors) -> None:
    qss = style_path(scheme).read_text(encoding="utf-8").lower()
    shared = ("window", "sidebar", "surface", "line", "text", "muted", "faint", "accent", "bubble", "danger")
    for name in shared:
        assert getattr(colors, name) in qss, f"{scheme}.qss lacks {name} {getattr(colors, name)}"


def test_the_two_stylesheets_style_the_same_things() -> None:
    def selectors(scheme: theme.Scheme) -> list[str]:
        text = style_path(scheme).read_text(encoding="utf-8")
        return re.findall(r"^([^\s/][^{]*)\{", text, flags=re.MULTILINE)

    assert selectors("light") == selectors("dark")


@pytest.mark.parametrize("pinned", ["light", "dark"])
def test_errand_theme_pins_the_scheme(
    monkeypatch: pytest.MonkeyPatch, qapp: QApplication, pinned: str
) -> None:
    monkeypatch.setenv("ERRAND_THEME", pinned)
    assert theme.system_scheme() == pinned
    assert theme.apply_theme(qapp) == pinned
    assert theme.scheme() == pinned
    assert (theme.DARK if pinned == "dark" else theme.LIGHT).window in qapp.styleSheet()


def test_the_ui_font_falls_back_to_simplified_chinese(qapp: QApplication) -> None:
    families = qapp.font().families()
    assert "Noto Sans CJK SC" in families
    assert families.index("Noto Sans CJK SC") > 0  # the platform's UI font stays first for Latin text


def test_a_scheme_chosen_in_settings_stays_when_the_system_changes(
    qapp: QApplication, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(theme, "system_scheme", lambda: "light")
    theme.apply_theme(qapp, "dark")
    theme._follow_system(qapp)  # what the system's colour-scheme signal calls
    assert theme.scheme() == "dark"

    theme.apply_theme(qapp, None)  # back to 跟随系统
    monkeypatch.setattr(theme, "system_scheme", lambda: "dark")
    theme._follow_system(qapp)
    assert theme.scheme() == "dark"
    monkeypatch.setattr(theme, "system_scheme", lambda: "light")
    theme._follow_system(qapp)
    assert theme.scheme() == "light"

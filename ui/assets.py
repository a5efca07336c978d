"""Where the files under `resources/` live, whether run from a checkout or an installed package."""

from __future__ import annotations

from pathlib import Path

import resources
from core import translations


def _root() -> Path:
    return resources.ROOT


def icon_path(name: str) -> Path:
    return _root() / "icons" / f"{name}.svg"


def style_path(name: str) -> Path:
    return _root() / "styles" / f"{name}.qss"


def translation_path(language: str) -> Path:
    """The UI's catalogue file for `language` ('zh_CN', 'en'); core's loader owns where it lives."""
    return translations.translation_path(language, "ui")

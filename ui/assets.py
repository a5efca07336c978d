"""Where the files under `resources/` live, whether run from a checkout or an installed package."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from core import translations


def _root() -> Path:
    # `resources` is a regular package on disk (also in a PyInstaller bundle): its traversable is a Path.
    return Path(str(files("resources")))


def icon_path(name: str) -> Path:
    return _root() / "icons" / f"{name}.svg"


def style_path(name: str) -> Path:
    return _root() / "styles" / f"{name}.qss"


def translation_path(language: str) -> Path:
    """The UI's catalogue file for `language` ('zh_CN', 'en'); core's loader owns where it lives."""
    return translations.translation_path(language, "ui")

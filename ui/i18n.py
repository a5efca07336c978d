"""UI text in Chinese or English, chosen by the system locale and overridable with ERRAND_LANG.

Every string a person sees goes through `t(key, **fmt)`. The words are the UI's book of the one catalogue
(`core.translations`): read once per language, a key missing from the chosen language falls back to
English, then to the key itself, so a gap shows up as visible text instead of an exception in a paint path.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QLocale

from core import translations
from core.translations import Language

__all__ = ["Language", "catalogue", "language", "system_language", "t", "use_language"]


class _Choice:
    language: Language | None = None


_choice = _Choice()


def system_language() -> Language:
    override = os.environ.get("ERRAND_LANG", "").strip().lower()
    if override.startswith("zh"):
        return "zh"
    if override.startswith("en"):
        return "en"
    return "zh" if QLocale.system().name().lower().startswith("zh") else "en"


def language() -> Language:
    if _choice.language is None:
        _choice.language = system_language()
    return _choice.language


def use_language(lang: Language | None) -> None:
    """Switch the language for text built from now on; None goes back to the system's choice."""
    _choice.language = lang


def catalogue(lang: Language) -> dict[str, str]:
    """The UI's words in `lang`: its main file merged with its area files (`zh_CN.settings.json`, ...)."""
    return translations.catalogue(lang, "ui")


def t(key: str, **fmt: object) -> str:
    return translations.translate("ui", language(), key, fmt)

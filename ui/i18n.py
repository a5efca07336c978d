"""UI text in Chinese or English, chosen by the system locale and overridable with ERRAND_LANG.

Every string a person sees goes through `t(key, **fmt)`. The catalogue is read once per language; a key
missing from the chosen language falls back to English, then to the key itself, so a gap shows up as
visible text instead of an exception in a paint path.
"""

from __future__ import annotations

import json
import logging
import os
from functools import cache
from typing import Literal

from PySide6.QtCore import QLocale

from ui.assets import translation_path

log = logging.getLogger(__name__)

Language = Literal["zh", "en"]

_FILES: dict[Language, str] = {"zh": "zh_CN", "en": "en"}


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


@cache
def catalogue(lang: Language) -> dict[str, str]:
    """The language's main file merged with its area files (`zh_CN.settings.json`, ...), so each part of
    the UI keeps its own strings."""
    main = translation_path(_FILES[lang])
    merged: dict[str, str] = {}
    for path in [main, *sorted(main.parent.glob(f"{_FILES[lang]}.*.json"))]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.exception("cannot read UI translations %s", path)
            continue
        merged.update({str(k): str(v) for k, v in data.items()})
    return merged


def t(key: str, **fmt: object) -> str:
    text = catalogue(language()).get(key) or catalogue("en").get(key) or key
    if not fmt:
        return text
    try:
        return text.format(**fmt)
    except (KeyError, IndexError, ValueError):
        log.warning("translation %r does not fit its arguments %r", key, sorted(fmt))
        return text

"""Every word a person reads, in Chinese or English, from the catalogue files in `resources/translations`.

There are two books, one loader and one fallback rule. The UI's book is `translations/<file>.json`; core's
(pushed messages, needs-you rows, run lines, schedules in words, exports) is `translations/core/<file>.json`.
Core's book is separate because its Chinese keeps the ASCII punctuation it has always had in pushed and
exported text, which the UI's style rule (full-width punctuation) would refuse.

A book for a language is its main file merged with its area files (`zh_CN.settings.json`, ...), read once.
A key missing from the language falls back to English, then to the key itself, so a gap shows up as
visible text instead of an exception in a paint path or a push.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Literal

import resources

log = logging.getLogger(__name__)

Language = Literal["zh", "en"]
LANGUAGES: tuple[Language, ...] = ("zh", "en")
Book = Literal["ui", "core"]
BOOKS: tuple[Book, ...] = ("ui", "core")

_FILES: Mapping[Language, str] = {"zh": "zh_CN", "en": "en"}
_FOLDERS: Mapping[Book, tuple[str, ...]] = {"ui": (), "core": ("core",)}


def as_language(locale: str) -> Language:
    """'zh' for any Chinese locale ('zh', 'zh_CN', 'zh-Hans'), 'en' for anything else."""
    return "zh" if locale.lower().startswith("zh") else "en"


def translations_root() -> Path:
    return resources.ROOT / "translations"


def translation_path(name: str, book: Book = "ui") -> Path:
    """The file `name` ('zh_CN', 'en.settings') of a book."""
    return translations_root().joinpath(*_FOLDERS[book]) / f"{name}.json"


@cache
def catalogue(lang: Language, book: Book = "core") -> dict[str, str]:
    """The language's main file of the book merged with its area files, so each part keeps its own
    strings."""
    main = translation_path(_FILES[lang], book)
    merged: dict[str, str] = {}
    for path in [main, *sorted(main.parent.glob(f"{_FILES[lang]}.*.json"))]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log.exception("cannot read translations %s", path)
            continue
        merged.update({str(k): str(v) for k, v in data.items()})
    return merged


def translate(book: Book, lang: Language, key: str, fields: Mapping[str, object]) -> str:
    """The text of `key` with `fields` filled in. A text that does not fit its fields is shown unfilled
    (and logged) rather than raising where a person is waiting for it."""
    found = catalogue(lang, book).get(key) or catalogue("en", book).get(key) or key
    if not fields:
        return found
    try:
        return found.format(**fields)
    except (KeyError, IndexError, ValueError):
        log.warning("translation %r does not fit its arguments %r", key, sorted(fields))
        return found


def has_text(key: str, book: Book = "core") -> bool:
    """Whether the book words `key` (in English at least, which every language falls back to)."""
    return key in catalogue("en", book)


def text(lang: Language, key: str, **fields: object) -> str:
    """Core's text for `key` in `lang`: `text("zh", "push.failure", title=..., reason=...)`."""
    return translate("core", lang, key, fields)

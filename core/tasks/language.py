"""Which language to push a message in: the conversation's (DESIGN.md "Defaults"), from the user's words."""

from __future__ import annotations

from core import translations
from core.translations import Language

__all__ = ["Language", "language_of", "pushed"]


def language_of(text: str) -> Language:
    """Chinese when the text has any CJK ideograph, English otherwise."""
    return "zh" if any("\u4e00" <= ch <= "\u9fff" for ch in text) else "en"


def pushed(lang: Language, key: str, **fields: str) -> str:
    """A pushed message's words (`push.<key>` in core's catalogue)."""
    return translations.text(lang, f"push.{key}", **fields)

"""App-wide preferences the person sets in Settings: language, theme, start at login. Stored in the
`settings` table; the UI reads and writes them through `PreferencesFacade`, never the store."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

LanguageChoice = Literal["auto", "zh", "en"]
ThemeChoice = Literal["auto", "light", "dark"]
LANGUAGE_CHOICES: tuple[LanguageChoice, ...] = ("auto", "zh", "en")
THEME_CHOICES: tuple[ThemeChoice, ...] = ("auto", "light", "dark")
# Each preference is its own row of the `settings` table.
LANGUAGE_KEY = "preferences.language"
THEME_KEY = "preferences.theme"
START_AT_LOGIN_KEY = "preferences.start_at_login"


@dataclass(frozen=True, slots=True)
class Preferences:
    language: LanguageChoice = "auto"  # auto = the system locale
    theme: ThemeChoice = "auto"  # auto = follow the system scheme
    start_at_login: bool = False


@dataclass(frozen=True, slots=True)
class PreferencesUpdate:
    """None leaves a field as it is. A value outside the choices raises InvalidInputError naming it."""

    language: str | None = None
    theme: str | None = None
    start_at_login: bool | None = None


class PreferencesFacade(Protocol):
    async def preferences(self) -> Preferences: ...

    async def update_preferences(self, changes: PreferencesUpdate) -> Preferences: ...


def coerced(language: object, theme: object, start: object) -> Preferences:
    """Stored values as preferences; anything missing or not one of the choices is the default."""
    default = Preferences()
    return Preferences(
        language=language if language in LANGUAGE_CHOICES else default.language,
        theme=theme if theme in THEME_CHOICES else default.theme,
        start_at_login=start if isinstance(start, bool) else default.start_at_login,
    )


def stored_preferences(db_file: Path) -> Preferences:
    """The preferences as stored, read before the host starts (the window's language and theme are chosen
    before it is built). Read-only and tolerant: no database yet, an older schema or a bad value all read
    as the defaults."""
    default = Preferences()
    if not db_file.exists():
        return default
    keys = (LANGUAGE_KEY, THEME_KEY, START_AT_LOGIN_KEY)
    try:
        with contextlib.closing(sqlite3.connect(f"{db_file.as_uri()}?mode=ro", uri=True, timeout=1)) as conn:
            rows = conn.execute("SELECT key, value FROM settings WHERE key IN (?, ?, ?)", keys).fetchall()
        stored = {str(key): json.loads(value) for key, value in rows}
    except (sqlite3.Error, ValueError):
        return default
    return coerced(stored.get(LANGUAGE_KEY), stored.get(THEME_KEY), stored.get(START_AT_LOGIN_KEY))

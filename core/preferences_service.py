"""App preferences (language, theme, start at login) over the `settings` table.

Each preference is its own row (`preferences.language`, ...), so a value written by a newer or older Errand
under another key never clobbers these. A stored value that is not one of the choices reads as the default:
a hand-edited database must not keep the app from starting."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

from sqlalchemy.orm import Session

from core.clock import Clock
from core.errors import InvalidInputError
from core.preferences import (
    LANGUAGE_CHOICES,
    THEME_CHOICES,
    Preferences,
    PreferencesUpdate,
)
from core.store import settings as setting_rows
from core.store.database import Database

LANGUAGE_KEY = "preferences.language"
THEME_KEY = "preferences.theme"
START_AT_LOGIN_KEY = "preferences.start_at_login"


def _read(s: Session) -> Preferences:
    return _coerce(
        setting_rows.get_setting(s, LANGUAGE_KEY),
        setting_rows.get_setting(s, THEME_KEY),
        setting_rows.get_setting(s, START_AT_LOGIN_KEY),
    )


def _coerce(language: object, theme: object, start: object) -> Preferences:
    """Stored values as preferences; anything missing or not one of the choices is the default."""
    default = Preferences()
    return Preferences(
        language=language if language in LANGUAGE_CHOICES else default.language,
        theme=theme if theme in THEME_CHOICES else default.theme,
        start_at_login=start if isinstance(start, bool) else default.start_at_login,
    )


def _check(changes: PreferencesUpdate) -> None:
    if changes.language is not None and changes.language not in LANGUAGE_CHOICES:
        raise InvalidInputError("language", f"must be one of {', '.join(LANGUAGE_CHOICES)}")
    if changes.theme is not None and changes.theme not in THEME_CHOICES:
        raise InvalidInputError("theme", f"must be one of {', '.join(THEME_CHOICES)}")
    if changes.start_at_login is not None and not isinstance(changes.start_at_login, bool):
        raise InvalidInputError("startAtLogin", "must be true or false")


class PreferencesService:
    """Implements core.preferences.PreferencesFacade."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def preferences(self) -> Preferences:
        return await self._db.read(_read)

    async def update_preferences(self, changes: PreferencesUpdate) -> Preferences:
        """Every field is checked before anything is written; all of them are written in one transaction."""
        _check(changes)
        now = self._clock.time()

        def write(s: Session) -> Preferences:
            if changes.language is not None:
                setting_rows.set_setting(s, LANGUAGE_KEY, changes.language, now)
            if changes.theme is not None:
                setting_rows.set_setting(s, THEME_KEY, changes.theme, now)
            if changes.start_at_login is not None:
                setting_rows.set_setting(s, START_AT_LOGIN_KEY, changes.start_at_login, now)
            return _read(s)

        return await self._db.write(write)


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
    return _coerce(stored.get(LANGUAGE_KEY), stored.get(THEME_KEY), stored.get(START_AT_LOGIN_KEY))

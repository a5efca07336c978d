"""App preferences (language, theme, start at login) over the `settings` table.

Each preference is its own row (`preferences.language`, ...), so a value written by a newer or older Errand
under another key never clobbers these. A stored value that is not one of the choices reads as the default:
a hand-edited database must not keep the app from starting."""

from __future__ import annotations

from sqlalchemy.orm import Session

from core.clock import Clock
from core.errors import InvalidInputError
from core.preferences import (
    LANGUAGE_CHOICES,
    LANGUAGE_KEY,
    START_AT_LOGIN_KEY,
    THEME_CHOICES,
    THEME_KEY,
    Preferences,
    PreferencesUpdate,
    coerced,
)
from core.store import settings as setting_rows
from core.store.database import Database


def _read(s: Session) -> Preferences:
    return coerced(
        setting_rows.get_setting(s, LANGUAGE_KEY),
        setting_rows.get_setting(s, THEME_KEY),
        setting_rows.get_setting(s, START_AT_LOGIN_KEY),
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

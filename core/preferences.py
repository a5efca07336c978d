"""App-wide preferences the person sets in Settings: language, theme, start at login. Stored in the
`settings` table; the UI reads and writes them through `PreferencesFacade`, never the store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

LanguageChoice = Literal["auto", "zh", "en"]
ThemeChoice = Literal["auto", "light", "dark"]
LANGUAGE_CHOICES: tuple[LanguageChoice, ...] = ("auto", "zh", "en")
THEME_CHOICES: tuple[ThemeChoice, ...] = ("auto", "light", "dark")


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

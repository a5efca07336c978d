"""The avatar colours a person may pick for a bot. The UI owns the actual shades (light and dark); core only
knows the keys, so a stored value always has a colour to show."""

from __future__ import annotations

AVATAR_COLOURS: tuple[str, ...] = ("teal", "blue", "violet", "rose", "amber", "green", "slate")
"""Empty means "none picked": the UI derives a colour from the bot's id."""


def is_avatar(value: str) -> bool:
    return value == "" or value in AVATAR_COLOURS

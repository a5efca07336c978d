"""A task's title when the person gave none: the first line of what they asked, cut short with an
ellipsis so a cut title reads as cut (docs/desktop.md#new-task)."""

from __future__ import annotations

TITLE_LENGTH = 40  # characters, the ellipsis included
ELLIPSIS = "…"


def title_from(words: str, fallback: str = "Task") -> str:
    first = next((line.strip() for line in words.splitlines() if line.strip()), "")
    if len(first) <= TITLE_LENGTH:
        return first or fallback
    return first[: TITLE_LENGTH - 1].rstrip() + ELLIPSIS

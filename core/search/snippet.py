"""The one line a search hit shows: its text around the first match, with where each word matched."""

from __future__ import annotations

import re

# Context kept before the first match, so the line starts close to it and the match stays in view.
LEAD_CHARS = 16
MAX_CHARS = 160
ELLIPSIS = "…"


def snippet(text: str, words: list[str]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """(a line of `text` around the first of `words`, the (start, end) spans of every word found in it)."""
    line = " ".join(text.split())
    pattern = _pattern(words)
    if pattern is None:
        return line[:MAX_CHARS], ()
    first = pattern.search(line)
    start = max(0, first.start() - LEAD_CHARS) if first is not None else 0
    if start > 0:
        # Begin at a word's start when one is near, not in the middle of it.
        space = line.find(" ", start, first.start() if first is not None else start)
        if space >= 0:
            start = space + 1
    shown = line[start : start + MAX_CHARS]
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS if start + MAX_CHARS < len(line) else ""
    offset = len(prefix)
    spans = tuple((start + offset, end + offset) for start, end in match_spans(shown, words))
    return f"{prefix}{shown}{suffix}", spans


def match_spans(text: str, words: list[str]) -> tuple[tuple[int, int], ...]:
    """The (start, end) of every place in `text` one of `words` is, in any case, left to right."""
    pattern = _pattern(words)
    if pattern is None:
        return ()
    return tuple((m.start(), m.end()) for m in pattern.finditer(text) if m.end() > m.start())


def _pattern(words: list[str]) -> re.Pattern[str] | None:
    unique = sorted({w for w in words if w}, key=len, reverse=True)  # longest first: "成都的" over "成都"
    if not unique:
        return None
    return re.compile("|".join(re.escape(w) for w in unique), re.IGNORECASE)

"""A chat reply too long for one message, cut where a reader expects a break (docs/channels.md#sending):
pushes are shaped to fit one message and never cut; a long chat reply goes as several."""

from __future__ import annotations


def split_paragraphs(words: str, limit: int) -> list[str]:
    """`words` in pieces of at most `limit` characters, cut at blank lines, else at line ends, else hard."""
    pieces: list[str] = []
    rest = words.strip()
    while len(rest) > limit:
        cut = rest.rfind("\n\n", 0, limit)
        if cut <= 0:
            cut = rest.rfind("\n", 0, limit)
        if cut <= 0:
            cut = limit
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip("\n")
    if rest:
        pieces.append(rest)
    return pieces or [""]

"""Markdown flattened to the plain text a WeChat message shows (it renders no Markdown): emphasis and code
marks dropped, links as "text (url)", headings and quotes as their words, list markers kept, tables as rows
of cells, blank-line runs folded. Words are never dropped."""

from __future__ import annotations

import re

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_QUOTE = re.compile(r"^\s{0,3}>\s?")
_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_TABLE_DIVIDER = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_BULLET = re.compile(r"^(\s*)[*+]\s+")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_AUTOLINK = re.compile(r"<(https?://[^>\s]+)>")
_STRONG = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_EMPHASIS = re.compile(r"(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_CODE = re.compile(r"`([^`]+)`")


def _inline(line: str) -> str:
    line = _IMAGE.sub(lambda m: m.group(1) or m.group(2), line)
    line = _LINK.sub(
        lambda m: m.group(1) if m.group(1) == m.group(2) else f"{m.group(1)} ({m.group(2)})", line
    )
    line = _AUTOLINK.sub(r"\1", line)
    # Code spans first, so their insides keep any * or _ they hold.
    spans: list[str] = []

    def keep(match: re.Match[str]) -> str:
        spans.append(match.group(1))
        return f"\x00{len(spans) - 1}\x00"

    line = _CODE.sub(keep, line)
    line = _STRONG.sub(r"\2", line)
    line = _EMPHASIS.sub(r"\2", line)
    line = _STRIKE.sub(r"\1", line)
    return re.sub("\x00(\\d+)\x00", lambda m: spans[int(m.group(1))], line)


def plain_text(markdown: str) -> str:
    out: list[str] = []
    in_code = False
    for raw in markdown.replace("\r\n", "\n").split("\n"):
        if _FENCE.match(raw):
            in_code = not in_code
            continue
        if in_code:
            out.append(raw.rstrip())
            continue
        if _RULE.match(raw) or _TABLE_DIVIDER.match(raw):
            continue
        line = raw.rstrip()
        if heading := _HEADING.match(line):
            line = heading.group(1)
        while _QUOTE.match(line):
            line = _QUOTE.sub("", line, count=1)
        line = _BULLET.sub(r"\1- ", line)
        if line.lstrip().startswith("|") and line.rstrip().endswith("|"):
            line = " | ".join(cell.strip() for cell in line.strip().strip("|").split("|"))
        out.append(_inline(line))
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n", text).strip()

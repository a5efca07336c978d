"""Markdown to the rich text a QLabel shows, restyled to sit quietly in a chat.

Qt's Markdown importer draws tables with heavy black rules, headings at xx-large and code with no ground.
We import into a QTextDocument, adjust those formats with the theme's colours, and hand the label HTML.
Raw HTML in the Markdown is shown as text, not interpreted: a reply is words, not a web page.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from PySide6.QtGui import (
    QColor,
    QFont,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextFrameFormat,
    QTextTable,
)

from ui.theme import Colors

_FEATURE = QTextDocument.MarkdownFeature
FEATURES = _FEATURE(_FEATURE.MarkdownDialectGitHub.value | _FEATURE.MarkdownNoHTML.value)
# Extra points over the body size per heading level: present, never shouting.
HEADING_STEP = {1: 4.0, 2: 2.5, 3: 1.5}


def render(text: str, font: QFont, colors: Colors) -> QTextDocument:
    doc = QTextDocument()
    doc.setDefaultFont(font)
    doc.setMarkdown(hard_breaks(text), FEATURES)
    base = font.pointSizeF() if font.pointSizeF() > 0 else 10.0
    _restyle_tables(doc, colors)
    _restyle_blocks(doc, base, colors)
    return doc


def to_html(text: str, font: QFont, colors: Colors) -> tuple[str, str]:
    """(HTML for the label, the plain text a reader sees)."""
    doc = render(text, font, colors)
    return doc.toHtml(), doc.toPlainText()


def _restyle_tables(doc: QTextDocument, colors: Colors) -> None:
    for frame in doc.rootFrame().childFrames():
        if isinstance(frame, QTextTable):
            fmt = frame.format()
            fmt.setBorder(1)
            fmt.setBorderBrush(QColor(colors.line))
            fmt.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
            fmt.setBorderCollapse(True)
            fmt.setCellSpacing(0)
            fmt.setCellPadding(5)
            frame.setFormat(fmt)


def _restyle_blocks(doc: QTextDocument, base: float, colors: Colors) -> None:
    cursor = QTextCursor(doc)
    block = doc.begin()
    while block.isValid():
        level = block.blockFormat().headingLevel()
        is_code = block.blockFormat().nonBreakableLines()
        if level:
            cursor.setPosition(block.position())
            cursor.setPosition(block.position() + block.length() - 1, QTextCursor.MoveMode.KeepAnchor)
            heading = QTextCharFormat()
            heading.setProperty(QTextFormat.Property.FontSizeAdjustment, 0)
            heading.setFontPointSize(base + HEADING_STEP.get(level, 0.5))
            heading.setFontWeight(QFont.Weight.DemiBold)
            cursor.mergeCharFormat(heading)
            spacing = QTextBlockFormat()
            spacing.setTopMargin(8)
            spacing.setBottomMargin(4)
            cursor.mergeBlockFormat(spacing)
        elif is_code:
            cursor.setPosition(block.position())
            ground = QTextBlockFormat()
            ground.setBackground(QColor(colors.well))
            ground.setTopMargin(4)
            ground.setBottomMargin(4)
            cursor.mergeBlockFormat(ground)
        iterator = block.begin()
        while not iterator.atEnd():
            fragment = iterator.fragment()
            fmt = fragment.charFormat()
            change = QTextCharFormat()
            if fmt.isAnchor():
                change.setForeground(QColor(colors.accent))
            elif fmt.fontFixedPitch() and not is_code:
                change.setBackground(QColor(colors.well))
            if change.properties():
                cursor.setPosition(fragment.position())
                cursor.setPosition(fragment.position() + fragment.length(), QTextCursor.MoveMode.KeepAnchor)
                cursor.mergeCharFormat(change)
            iterator += 1
        block = block.next()


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _closes(line: str, fence: str) -> bool:
    marker = _FENCE.match(line)
    if marker is None:
        return False
    run = marker.group(1)
    return run[0] == fence[0] and len(run) >= len(fence) and line.strip() == run


def _with_fences(lines: list[str]) -> Iterator[tuple[str, bool]]:
    """Each line, and whether it belongs to fenced code (its opening and closing fence lines included)."""
    fence: str | None = None
    for line in lines:
        if fence is not None:
            if _closes(line, fence):
                fence = None
            yield line, True
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
        yield line, opening is not None


def hard_breaks(text: str) -> str:
    """Every line break outside fenced code kept as a break, as a chat app shows one: Markdown would join
    a question's options line and its default line into one run-on line (a soft break), and a person
    who wrote two lines meant two lines."""
    lines = text.split("\n")
    out: list[str] = []
    for position, (line, fenced) in enumerate(_with_fences(lines)):
        if fenced:
            out.append(line)
            continue
        following = lines[position + 1] if position + 1 < len(lines) else ""
        joins_next = bool(line.strip()) and bool(following.strip()) and not _FENCE.match(following)
        out.append(line.rstrip() + "  " if joins_next and not line.endswith("  ") else line)
    return "\n".join(out)


def split_blocks(text: str) -> list[str]:
    """Top-level Markdown blocks (split at blank lines outside fenced code), for rendering a growing reply
    piece by piece: finished blocks keep their rendering and only the last one is redone per delta."""
    blocks: list[str] = []
    current: list[str] = []
    for line, fenced in _with_fences(text.split("\n")):
        if not fenced and not line.strip():
            if current:
                blocks.append("\n".join(current))
                current = []
            continue
        current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks

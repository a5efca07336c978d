"""The pieces both Markdown exports are made of: words in two languages, times, amounts, quotes and fenced
blocks that text cannot break out of, a Report, and a run's steps. Pure.

Text from people, models and tools never becomes Markdown structure: one-line text is flattened
(`inline`), multi-line prose goes in a blockquote (`quote`) and tool output in a fenced block whose fence is
longer than any backtick run inside (`fence`). Quoted text is redacted before it is quoted, because a `> `
in front of each line would hide a multi-line secret (a PEM key) from the document-wide pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from core.activity_steps import ActivityStep, dropped_count
from core.cost.prices import Cost, format_cost
from core.delivery.outbox import local_zone
from core.export.redaction import redact_multiline
from core.translations import Language, has_text, text

MAX_DETAIL_CHARS = 2000  # a step's detail beyond this is clipped (the store keeps at most 2,000 anyway)
MAX_DETAIL_LINES = 40
_BLANKS = re.compile(r"\s+")
_BACKTICKS = re.compile(r"`+")
_NEWLINES = re.compile(r"\r\n?")

MINUTE = 60
HOUR = 3600
DAY = 24 * HOUR


def say(lang: Language, key: str, **fields: object) -> str:
    """The export's text for `key` (`export.<key>` in core's catalogue)."""
    return text(lang, f"export.{key}", **fields)


def word(key: str, lang: Language) -> str:
    """The word for `key` in the language; an unknown key is shown as itself (a new cause or outcome)."""
    if not has_text(f"export.{key}"):
        return key.split(".", 1)[-1]
    return say(lang, key)


def label(key: str, lang: Language) -> str:
    """「摘要:」 / "Summary: "."""
    return f"{word(key, lang)}{word('sep', lang)}"


def fact_lines(facts: Sequence[tuple[str, str]], lang: Language) -> list[str]:
    """A document's facts as a list: 「- 模式:执行」 / "- Mode: act" (`fact.<name>` in the catalogue)."""
    return [f"- {say(lang, f'fact.{name}')}{word('sep', lang)}{value}" for name, value in facts]


def outcome_words(state: str, outcome: str, lang: Language) -> str:
    """How a run ended, or its state while it has not."""
    return word(f"outcome.{outcome}", lang) if outcome else word(f"state.{state or 'running'}", lang)


def zone_of(tz: str | None) -> ZoneInfo:
    """The zone times are shown in: `tz`, else the system's."""
    return ZoneInfo(local_zone() if tz is None else tz)


def when(seconds: float, zone: ZoneInfo) -> str:
    """「2026-11-29 08:00 (Asia/Shanghai)」."""
    return f"{datetime.fromtimestamp(seconds, zone):%Y-%m-%d %H:%M} ({zone.key})"


def span(seconds: float, lang: Language) -> str:
    """How long: 「45 秒」「12 分钟」「2 小时 5 分钟」「3 天 2 小时」; "45 s", "12 min", "2 h 5 min"."""
    whole = max(0, round(seconds))
    if whole < MINUTE:
        return say(lang, "span.seconds", n=whole)
    if whole < HOUR:
        return say(lang, "span.minutes", n=whole // MINUTE)
    big, small, units = (
        (HOUR, MINUTE, ("hours", "minutes")) if whole < DAY else (DAY, HOUR, ("days", "hours"))
    )
    first, rest = divmod(whole, big)
    second = rest // small
    head = say(lang, f"span.{units[0]}", n=first)
    if not second:
        return head
    return f"{head} {say(lang, f'span.{units[1]}', n=second)}"


def money(amount: float, currency: str, lang: Language) -> str:
    """「约 $0.08」 / "about $0.08" (`format_cost`)."""
    return format_cost(Cost(Decimal(str(amount)), currency), lang)


def dollars(amount: float) -> str:
    """A budget, exactly as set: "$1.00"."""
    return f"${Decimal(str(amount)).quantize(Decimal('0.01')):,}"


def costs(
    usd: float, other: Mapping[str, float], unpriced: int, lang: Language, *, with_usd: bool = False
) -> list[str]:
    """The parts of a cost: USD, each other currency on its own (never added), and the calls without a price.
    USD is said when `with_usd`, when it is above zero or when there is nothing else to say."""
    parts = []
    if with_usd or usd > 0 or (not other and not unpriced):
        parts.append(money(usd, "USD", lang))
    for currency, amount in sorted(other.items()):
        shown = money(amount, currency, lang)
        parts.append(say(lang, "cost.plus", cost=shown) if parts else shown)
    if unpriced:
        key = "cost.unpriced_one" if unpriced == 1 else "cost.unpriced_many"
        parts.append(say(lang, key, count=unpriced))
    return parts


def join_costs(parts: Sequence[str], lang: Language) -> str:
    return say(lang, "cost.separator").join(parts)


def inline(text: str) -> str:
    """One line: runs of blanks and line breaks become one space."""
    return _BLANKS.sub(" ", text).strip()


def inline_code(text: str) -> str:
    """`text` as inline code, with more backticks around it than any run inside it."""
    flat = inline(text)
    ticks = "`" * (_longest_backticks(flat) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{ticks}{pad}{flat}{pad}{ticks}"


def _lines(text: str) -> list[str]:
    return _NEWLINES.sub("\n", text).rstrip("\n").split("\n")


def quote(text: str, indent: str = "") -> list[str]:
    """Prose (the user's words, a Report's summary) as a blockquote. Secrets that span lines are hidden
    first: once each line starts with `> `, the document-wide pass could no longer see them whole."""
    return [f"{indent}> {line}".rstrip() for line in _lines(redact_multiline(text))]


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in _BACKTICKS.findall(text)), default=0) if "`" in text else 0


def fence(text: str, indent: str = "") -> list[str]:
    """Tool output as a fenced block; its fence is longer than any backtick run inside."""
    body = _lines(text)
    marks = "`" * max(3, _longest_backticks(text) + 1)
    return [
        f"{indent}{marks}",
        *(f"{indent}{line}".rstrip() if line else "" for line in body),
        f"{indent}{marks}",
    ]


def clip(text: str, lang: Language) -> str:
    """At most MAX_DETAIL_CHARS characters and MAX_DETAIL_LINES lines, saying how much was left out."""
    cut = text[:MAX_DETAIL_CHARS]
    lines = cut.split("\n")
    if len(lines) > MAX_DETAIL_LINES:
        cut = "\n".join(lines[:MAX_DETAIL_LINES])
    left = len(text) - len(cut)
    if left <= 0:
        return text
    return say(lang, "clipped", text=cut, left=left)


def prose(title: str, text: str, lang: Language) -> list[str]:
    """A bold label over a blockquote; nothing when the text is empty."""
    if not text.strip():
        return []
    return [f"**{word(title, lang)}**", "", *quote(text), ""]


def report(data: Mapping[str, object] | None, lang: Language, level: str) -> list[str]:
    """A run's Report (summary, message, question with its options and default, files, would-do) under a
    heading of `level` (`###`). Read defensively: it is stored JSON."""
    if not data:
        return []
    state = str(data.get("state") or "")
    heading = word("report", lang) + (f" · {word(f'report.{state}', lang)}" if state else "")
    lines = [f"{level} {heading}", ""]
    lines += prose("summary", str(data.get("summary") or ""), lang)
    lines += prose("message", str(data.get("message") or ""), lang)
    lines += _question(data.get("question"), data, lang)
    files = [str(f) for f in _list(data.get("files")) if str(f).strip()]
    if files:
        lines += [f"**{word('files', lang)}**", "", *(f"- {inline_code(f)}" for f in files), ""]
    lines += prose("would", str(data.get("would") or ""), lang)
    if len(lines) == 2:  # a Report with nothing in it but its state
        lines.append(say(lang, "empty_report"))
        lines.append("")
    return lines


def _question(raw: object, data: Mapping[str, object], lang: Language) -> list[str]:
    if isinstance(raw, Mapping):
        text = str(raw.get("text") or raw.get("question") or "")
        options = [str(o) for o in _list(raw.get("options"))]
        default = raw.get("default")
    else:
        text = str(raw or "")
        options = [str(o) for o in _list(data.get("options"))]
        default = data.get("default")
    lines = prose("question", text, lang)
    if not lines:
        return []
    if options:
        lines += [f"{label('options', lang)}{' / '.join(inline(o) for o in options)}", ""]
    if default is not None and str(default):
        chosen = inline(str(default))
        lines += [say(lang, "question_default", default=chosen), ""]
    return lines


def _list(value: object) -> list[object]:
    return list(value) if isinstance(value, list | tuple) else []


def parse_steps(rows: Sequence[Mapping[str, object]]) -> tuple[list[ActivityStep], int]:
    """Stored step rows as steps, and how many older steps the store dropped (its first note says)."""
    steps: list[ActivityStep] = []
    for row in rows:
        try:
            steps.append(ActivityStep.from_json(dict(row)))
        except (TypeError, ValueError):
            continue  # one unreadable step does not hide the others
    return split_dropped(steps)


def split_dropped(steps: Sequence[ActivityStep]) -> tuple[list[ActivityStep], int]:
    """The steps without the store's leading 「N earlier steps not kept」 note, and that N (0 without it)."""
    count = dropped_count(steps[0]) if steps else None
    return (list(steps[1:]), count) if count is not None else (list(steps), 0)


def steps_section(steps: Sequence[ActivityStep], dropped: int, lang: Language, level: str) -> list[str]:
    """「处理过程(12 步)」 and one numbered item per step; a failed step is marked, a detail is fenced."""
    if not steps and not dropped:
        return []
    total = len(steps) + dropped
    heading = say(lang, "steps_heading", steps=word("steps", lang), total=total)
    lines = [f"{level} {heading}", ""]
    if dropped:
        lines += [say(lang, "steps_dropped", count=dropped), ""]
    for number, step in enumerate(steps, start=dropped + 1):
        marker = f"{number}. "
        parts = [word(f"step.{step.kind}", lang)]
        if step.title.strip():
            parts.append(inline(step.title))
        if step.duration_ms > 0:
            parts.append(say(lang, "step_seconds", seconds=step.duration_ms / 1000))
        if step.tokens_in or step.tokens_out:
            parts.append(f"{step.tokens_in:,} → {step.tokens_out:,} tokens")
        failed = "" if step.ok else f"**{word('failed_step', lang)}** · "
        lines.append(f"{marker}{failed}{' · '.join(parts)}")
        if step.detail.strip():
            lines += fence(clip(step.detail, lang), " " * len(marker))
    lines.append("")
    return lines

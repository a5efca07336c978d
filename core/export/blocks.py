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

from core.activity import dropped_count
from core.chat.views import ActivityStep
from core.cost.prices import Cost, format_cost
from core.delivery.outbox import local_zone
from core.export.redaction import redact_multiline

MAX_DETAIL_CHARS = 2000  # a step's detail beyond this is clipped (the store keeps at most 2,000 anyway)
MAX_DETAIL_LINES = 40
_BLANKS = re.compile(r"\s+")
_BACKTICKS = re.compile(r"`+")
_NEWLINES = re.compile(r"\r\n?")

MINUTE = 60
HOUR = 3600
DAY = 24 * HOUR


def is_zh(lang: str) -> bool:
    return lang.lower().startswith("zh")


_WORDS: Mapping[str, tuple[str, str]] = {
    # run causes
    "cause.launch": ("开始", "started"),
    "cause.answer": ("回答后继续", "after your answer"),
    "cause.followup": ("补充后继续", "after your follow-up"),
    "cause.retry": ("重试", "retry"),
    "cause.continue": ("继续", "continued"),
    "cause.recover": ("重启后恢复", "resumed after a restart"),
    "cause.schedule": ("定时", "scheduled"),
    "cause.manual": ("手动", "run by hand"),
    "cause.event": ("事件触发", "on an event"),
    # run outcomes; a live run says its state
    "outcome.done": ("完成", "done"),
    "outcome.needs_you": ("等你", "waiting for you"),
    "outcome.failed": ("失败", "failed"),
    "outcome.budget": ("预算用完", "budget used up"),
    "outcome.stopped": ("已停止", "stopped"),
    "outcome.interrupted": ("被中断", "interrupted"),
    "outcome.skipped": ("跳过", "skipped"),
    "state.queued": ("排队中", "queued"),
    "state.running": ("进行中", "running"),
    "state.settling": ("收尾中", "settling"),
    # Report states
    "report.progress": ("进展", "progress"),
    "report.needs_you": ("需要你", "needs you"),
    "report.done": ("完成", "done"),
    "report.failed": ("失败", "failed"),
    # step kinds
    "step.model": ("模型", "model"),
    "step.tool": ("工具", "tool"),
    "step.job": ("后台命令", "job"),
    "step.note": ("备注", "note"),
    # labels
    "report": ("报告", "Report"),
    "summary": ("摘要", "Summary"),
    "message": ("发给你的消息", "Message to you"),
    "question": ("问题", "Question"),
    "options": ("选项", "Options"),
    "files": ("文件", "Files"),
    "would": ("本会做", "Would have done"),
    "steps": ("处理过程", "Steps"),
    "failed_step": ("失败", "failed"),
    "sep": (":", ": "),
}


def word(key: str, lang: str) -> str:
    """The word for `key` in the language; an unknown key is shown as itself (a new cause or outcome)."""
    pair = _WORDS.get(key)
    if pair is None:
        return key.split(".", 1)[-1]
    return pair[0] if is_zh(lang) else pair[1]


def label(key: str, lang: str) -> str:
    """「摘要:」 / "Summary: "."""
    return f"{word(key, lang)}{word('sep', lang)}"


def outcome_words(state: str, outcome: str, lang: str) -> str:
    """How a run ended, or its state while it has not."""
    return word(f"outcome.{outcome}", lang) if outcome else word(f"state.{state or 'running'}", lang)


def zone_of(tz: str | None) -> ZoneInfo:
    """The zone times are shown in: `tz`, else the system's."""
    return ZoneInfo(local_zone() if tz is None else tz)


def when(seconds: float, zone: ZoneInfo) -> str:
    """「2026-11-29 08:00 (Asia/Shanghai)」."""
    return f"{datetime.fromtimestamp(seconds, zone):%Y-%m-%d %H:%M} ({zone.key})"


def span(seconds: float, lang: str) -> str:
    """How long: 「45 秒」「12 分钟」「2 小时 5 分钟」「3 天 2 小时」; "45 s", "12 min", "2 h 5 min"."""
    zh = is_zh(lang)
    whole = max(0, round(seconds))
    if whole < MINUTE:
        return f"{whole} 秒" if zh else f"{whole} s"
    if whole < HOUR:
        return f"{whole // MINUTE} 分钟" if zh else f"{whole // MINUTE} min"
    big, small, units = (
        (HOUR, MINUTE, ("小时", "分钟", "h", "min")) if whole < DAY else (DAY, HOUR, ("天", "小时", "d", "h"))
    )
    first, rest = divmod(whole, big)
    second = rest // small
    head = f"{first} {units[0]}" if zh else f"{first} {units[2]}"
    if not second:
        return head
    return f"{head} {second} {units[1]}" if zh else f"{head} {second} {units[3]}"


def money(amount: float, currency: str, lang: str) -> str:
    """「约 $0.08」 / "about $0.08" (`format_cost`)."""
    return format_cost(Cost(Decimal(str(amount)), currency), lang)


def dollars(amount: float) -> str:
    """A budget, exactly as set: "$1.00"."""
    return f"${Decimal(str(amount)).quantize(Decimal('0.01')):,}"


def costs(
    usd: float, other: Mapping[str, float], unpriced: int, lang: str, *, with_usd: bool = False
) -> list[str]:
    """The parts of a cost: USD, each other currency on its own (never added), and the calls without a price.
    USD is said when `with_usd`, when it is above zero or when there is nothing else to say."""
    zh = is_zh(lang)
    parts = []
    if with_usd or usd > 0 or (not other and not unpriced):
        parts.append(money(usd, "USD", lang))
    for currency, amount in sorted(other.items()):
        shown = money(amount, currency, lang)
        parts.append(f"另计 {shown}" if zh and parts else (f"plus {shown}" if parts else shown))
    if unpriced:
        parts.append(
            f"{unpriced} 次调用未定价" if zh else f"{unpriced} call{'s' if unpriced != 1 else ''} not priced"
        )
    return parts


def join_costs(parts: Sequence[str], lang: str) -> str:
    return ("；" if is_zh(lang) else "; ").join(parts)


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


def clip(text: str, lang: str) -> str:
    """At most MAX_DETAIL_CHARS characters and MAX_DETAIL_LINES lines, saying how much was left out."""
    cut = text[:MAX_DETAIL_CHARS]
    lines = cut.split("\n")
    if len(lines) > MAX_DETAIL_LINES:
        cut = "\n".join(lines[:MAX_DETAIL_LINES])
    left = len(text) - len(cut)
    if left <= 0:
        return text
    return f"{cut}\n… (还有 {left:,} 字)" if is_zh(lang) else f"{cut}\n… ({left:,} more characters)"


def prose(title: str, text: str, lang: str) -> list[str]:
    """A bold label over a blockquote; nothing when the text is empty."""
    if not text.strip():
        return []
    return [f"**{word(title, lang)}**", "", *quote(text), ""]


def report(data: Mapping[str, object] | None, lang: str, level: str) -> list[str]:
    """A run's Report (summary, message, question with its options and default, files, would-do) under a
    heading of `level` (`###`). Read defensively: it is stored JSON."""
    if not data:
        return []
    zh = is_zh(lang)
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
        lines.append("(空)" if zh else "(empty)")
        lines.append("")
    return lines


def _question(raw: object, data: Mapping[str, object], lang: str) -> list[str]:
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
        lines += [f"不回复就按{chosen}做" if is_zh(lang) else f"Without an answer: {chosen}", ""]
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


def steps_section(steps: Sequence[ActivityStep], dropped: int, lang: str, level: str) -> list[str]:
    """「处理过程(12 步)」 and one numbered item per step; a failed step is marked, a detail is fenced."""
    if not steps and not dropped:
        return []
    zh = is_zh(lang)
    total = len(steps) + dropped
    heading = f"{word('steps', lang)} · {total} 步" if zh else f"{word('steps', lang)} · {total}"
    lines = [f"{level} {heading}", ""]
    if dropped:
        lines += [f"前面还有 {dropped} 步没有保留。" if zh else f"{dropped} earlier steps were not kept.", ""]
    for number, step in enumerate(steps, start=dropped + 1):
        marker = f"{number}. "
        parts = [word(f"step.{step.kind}", lang)]
        if step.title.strip():
            parts.append(inline(step.title))
        if step.duration_ms > 0:
            parts.append(f"{step.duration_ms / 1000:.1f} 秒" if zh else f"{step.duration_ms / 1000:.1f} s")
        if step.tokens_in or step.tokens_out:
            parts.append(f"{step.tokens_in:,} → {step.tokens_out:,} tokens")
        failed = "" if step.ok else f"**{word('failed_step', lang)}** · "
        lines.append(f"{marker}{failed}{' · '.join(parts)}")
        if step.detail.strip():
            lines += fence(clip(step.detail, lang), " " * len(marker))
    lines.append("")
    return lines

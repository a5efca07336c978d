"""A rule and its run log as a Markdown document (P3 §6 "Auditing a rule", §10 `GET /rules/:id/export`).
Pure.

    # <title>
    - mode, schedule in words, next run, this month's cost against the budget, paused (why), version
    ## 你的原话 / Your words       the instruction verbatim, as a blockquote
    ## 版本 / Versions             newest first, each with its words and date
    ## 运行记录 / Run log          newest first, one heading line per run: time · mode · outcome · cost,
                                   and under it: cause, version, permission, what it said or would have
                                   said, its Report and its steps

The whole document is redacted (`core.export.redaction`) before it is returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from zoneinfo import ZoneInfo

from core.export import blocks
from core.export.blocks import is_zh, word
from core.export.redaction import redact
from core.rules.views import RuleVersionView, RuleView, RunLogEntry

_MODES = {"act": ("执行", "act"), "observe": ("观察", "observe"), "off": ("关", "off")}
_KINDS = {"check": ("检查", "check"), "remind": ("提醒", "reminder")}
_PAUSED = {
    "failures": ("连续失败 3 次", "after 3 failures in a row"),
    "budget": ("本月预算用完", "this month's budget is used up"),
}
_PERMISSIONS = {
    "read-only": ("只读", "read-only"),
    "workspace-write": ("可写工作区", "can write in its workspace"),
    "full": ("完全权限", "full access"),
}


def _pick(table: dict[str, tuple[str, str]], key: str, lang: str) -> str:
    pair = table.get(key)
    return key if pair is None else pair[0 if is_zh(lang) else 1]


def rule_markdown(
    rule: RuleView,
    versions: Sequence[RuleVersionView],
    runs: Sequence[RunLogEntry],
    *,
    lang: str,
    exported_at: float,
    tz: str | None = None,
) -> str:
    """The rule, its versions and its run log (`runs` newest first, as `RuleService.runs` gives them).
    Times are in `tz` (default: the system's zone)."""
    zone = blocks.zone_of(tz)
    zh = is_zh(lang)
    lines = _head(rule, lang, exported_at, zone)
    lines += [f"## {'你的原话' if zh else 'Your words'}", ""]
    lines += (
        [*blocks.quote(rule.instruction), ""]
        if rule.instruction.strip()
        else ["(无)" if zh else "(none)", ""]
    )
    lines += _versions(rule, versions, lang, zone)
    lines += [f"## {'运行记录' if zh else 'Run log'}", ""]
    if runs:
        shown = f"共 {len(runs)} 次,最新在前" if zh else f"{len(runs)} runs, newest first"
        lines += [shown, ""]
    else:
        lines += ["还没有运行过。" if zh else "No runs yet.", ""]
    for entry in runs:
        lines += _entry(entry, lang, zone)
    return redact("\n".join(lines).rstrip("\n") + "\n")


def _head(rule: RuleView, lang: str, exported_at: float, zone: ZoneInfo) -> list[str]:
    zh = is_zh(lang)
    facts: list[tuple[tuple[str, str], str]] = [
        (("模式", "Mode"), _pick(_MODES, rule.mode, lang)),
        (("类型", "Kind"), _pick(_KINDS, rule.kind, lang)),
    ]
    if rule.trigger.get("kind") == "event":
        source = blocks.inline(str(rule.trigger.get("source") or ""))
        facts.append((("触发", "Trigger"), f"事件 {source}" if zh else f"event {source}"))
    if rule.schedule_words:
        facts.append((("时间表", "Schedule"), blocks.inline(rule.schedule_words)))
    if rule.next_run_at > 0:
        facts.append((("下次运行", "Next run"), blocks.when(rule.next_run_at, zone)))
    else:
        facts.append((("下次运行", "Next run"), "不会再运行" if zh else "none"))
    spent = blocks.money(rule.month_cost_usd, "USD", lang)
    budget = blocks.dollars(rule.month_budget_usd)
    per_run = blocks.dollars(rule.run_budget_usd)
    facts.append(
        (
            ("本月花费", "This month"),
            f"{spent} / 预算 {budget}(每次 {per_run})"
            if zh
            else f"{spent} / budget {budget} ({per_run} a run)",
        )
    )
    if rule.paused_reason:
        facts.append((("已暂停", "Paused"), _pick(_PAUSED, rule.paused_reason, lang)))
    facts.append((("当前版本", "Version"), f"第 {rule.version} 版" if zh else f"v{rule.version}"))
    conversation = f"对话 {rule.conversation_id}" if zh else f"conversation {rule.conversation_id}"
    facts.append((("结果发往", "Results go to"), conversation))
    facts.append((("创建于", "Created"), blocks.when(rule.created_at, zone)))
    facts.append((("导出于", "Exported"), blocks.when(exported_at, zone)))
    lines = [f"# {blocks.inline(rule.title) or rule.id}", ""]
    lines += [f"- {names[0] if zh else names[1]}{word('sep', lang)}{value}" for names, value in facts]
    lines.append("")
    return lines


def _versions(rule: RuleView, versions: Sequence[RuleVersionView], lang: str, zone: ZoneInfo) -> list[str]:
    if not versions:
        return []
    zh = is_zh(lang)
    lines = [f"## {'版本' if zh else 'Versions'}", ""]
    for version in sorted(versions, key=lambda v: v.version, reverse=True):
        name = f"第 {version.version} 版" if zh else f"v{version.version}"
        current = (" (当前)" if zh else " (current)") if version.version == rule.version else ""
        lines += [f"### {name}{current} · {blocks.when(version.created_at, zone)}", ""]
        lines += [*blocks.quote(version.instruction), ""]
    return lines


def _entry(entry: RunLogEntry, lang: str, zone: ZoneInfo) -> list[str]:
    """One run: a heading line (time · mode · outcome · cost) and its detail under it."""
    zh = is_zh(lang)
    parts = [blocks.when(entry.time, zone), _pick(_MODES, entry.mode, lang), blocks.inline(entry.line)]
    if entry.cost_usd > 0:
        parts.append(blocks.money(entry.cost_usd, "USD", lang))
    lines = [f"### {' · '.join(parts)}", ""]
    facts: list[tuple[tuple[str, str], str]] = [
        (("触发", "Cause"), word(f"cause.{entry.cause}", lang)),
        (("结果", "Outcome"), blocks.outcome_words(entry.state, entry.outcome, lang)),
        (("版本", "Version"), f"第 {entry.version} 版" if zh else f"v{entry.version}"),
    ]
    if entry.permission and entry.outcome != "skipped":  # a skipped run never ran with it
        facts.append((("权限", "Permission"), _pick(_PERMISSIONS, entry.permission, lang)))
    if entry.reason and entry.outcome == "failed":
        facts.append((("原因", "Reason"), blocks.inline(entry.reason)))
    lines += [f"- {names[0] if zh else names[1]}{word('sep', lang)}{value}" for names, value in facts]
    lines.append("")
    if entry.said.strip():
        lines += [f"**{'已发送' if zh else 'Sent'}**", "", *blocks.quote(entry.said), ""]
    if entry.would.strip():
        lines += [f"**{'本会发送' if zh else 'Would have sent'}**", "", *blocks.quote(entry.would), ""]
    lines += blocks.report(entry.report, lang, "####")
    steps, dropped = blocks.split_dropped(entry.steps)
    lines += blocks.steps_section(steps, dropped, lang, "####")
    return lines

"""A rule and its run log as a Markdown document (docs/retention.md#markdown-export).
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
from core.export.blocks import say, word
from core.export.redaction import redact
from core.rules.views import RuleVersionView, RuleView, RunLogEntry
from core.translations import Language, as_language, has_text


def _pick(table: str, key: str, lang: Language) -> str:
    """A mode, kind, pause reason or permission in words; one the catalogue doesn't know, as itself."""
    return say(lang, f"{table}.{key}") if has_text(f"export.{table}.{key}") else key


def rule_markdown(
    rule: RuleView,
    versions: Sequence[RuleVersionView],
    runs: Sequence[RunLogEntry],
    *,
    lang: str,  # a locale: any Chinese one reads zh, anything else en
    exported_at: float,
    tz: str | None = None,
) -> str:
    """The rule, its versions and its run log (`runs` newest first, as `RuleService.runs` gives them).
    Times are in `tz` (default: the system's zone)."""
    zone = blocks.zone_of(tz)
    language = as_language(lang)
    lines = _head(rule, language, exported_at, zone)
    lines += [f"## {say(language, 'your_words')}", ""]
    words = rule.instruction.strip()
    lines += [*blocks.quote(rule.instruction), ""] if words else [say(language, "none"), ""]
    lines += _versions(rule, versions, language, zone)
    lines += [f"## {say(language, 'rule.run_log')}", ""]
    if runs:
        lines += [say(language, "rule.run_count", count=len(runs)), ""]
    else:
        lines += [say(language, "no_runs"), ""]
    for entry in runs:
        lines += _entry(entry, language, zone)
    return redact("\n".join(lines).rstrip("\n") + "\n")


def _head(rule: RuleView, lang: Language, exported_at: float, zone: ZoneInfo) -> list[str]:
    facts: list[tuple[str, str]] = [
        ("mode", _pick("mode", rule.mode, lang)),
        ("kind", _pick("kind", rule.kind, lang)),
    ]
    if rule.trigger.get("kind") == "event":
        source = blocks.inline(str(rule.trigger.get("source") or ""))
        facts.append(("trigger", say(lang, "rule.event", source=source)))
    if rule.schedule_words:
        facts.append(("schedule", blocks.inline(rule.schedule_words)))
    if rule.next_run_at > 0:
        facts.append(("next_run", blocks.when(rule.next_run_at, zone)))
    else:
        facts.append(("next_run", say(lang, "rule.no_next_run")))
    spent = blocks.money(rule.month_cost_usd, "USD", lang)
    budget = blocks.dollars(rule.month_budget_usd)
    per_run = blocks.dollars(rule.run_budget_usd)
    facts.append(("month", say(lang, "rule.month_cost", spent=spent, budget=budget, per_run=per_run)))
    if rule.paused_reason:
        facts.append(("paused", _pick("paused", rule.paused_reason, lang)))
    facts.append(("version", say(lang, "rule.version", version=rule.version)))
    facts.append(("results_to", say(lang, "conversation", id=rule.conversation_id)))
    facts.append(("created", blocks.when(rule.created_at, zone)))
    facts.append(("exported", blocks.when(exported_at, zone)))
    lines = [f"# {blocks.inline(rule.title) or rule.id}", ""]
    lines += blocks.fact_lines(facts, lang)
    lines.append("")
    return lines


def _versions(
    rule: RuleView, versions: Sequence[RuleVersionView], lang: Language, zone: ZoneInfo
) -> list[str]:
    if not versions:
        return []
    lines = [f"## {say(lang, 'rule.versions')}", ""]
    for version in sorted(versions, key=lambda v: v.version, reverse=True):
        name = say(lang, "rule.version", version=version.version)
        current = say(lang, "rule.current") if version.version == rule.version else ""
        lines += [f"### {name}{current} · {blocks.when(version.created_at, zone)}", ""]
        lines += [*blocks.quote(version.instruction), ""]
    return lines


def _entry(entry: RunLogEntry, lang: Language, zone: ZoneInfo) -> list[str]:
    """One run: a heading line (time · mode · outcome · cost) and its detail under it."""
    parts = [blocks.when(entry.time, zone), _pick("mode", entry.mode, lang), blocks.inline(entry.line)]
    if entry.cost_usd > 0:
        parts.append(blocks.money(entry.cost_usd, "USD", lang))
    lines = [f"### {' · '.join(parts)}", ""]
    facts: list[tuple[str, str]] = [
        ("cause", word(f"cause.{entry.cause}", lang)),
        ("outcome", blocks.outcome_words(entry.state, entry.outcome, lang)),
        ("run_version", say(lang, "rule.version", version=entry.version)),
    ]
    if entry.permission and entry.outcome != "skipped":  # a skipped run never ran with it
        facts.append(("permission", _pick("permission", entry.permission, lang)))
    if entry.reason and entry.outcome == "failed":
        facts.append(("reason", blocks.inline(entry.reason)))
    lines += blocks.fact_lines(facts, lang)
    lines.append("")
    if entry.said.strip():
        lines += [f"**{say(lang, 'rule.sent')}**", "", *blocks.quote(entry.said), ""]
    if entry.would.strip():
        lines += [f"**{say(lang, 'rule.would_send')}**", "", *blocks.quote(entry.would), ""]
    lines += blocks.report(entry.report, lang, "####")
    steps, dropped = blocks.split_dropped(entry.steps)
    lines += blocks.steps_section(steps, dropped, lang, "####")
    return lines

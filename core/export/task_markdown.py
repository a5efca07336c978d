"""A task as a Markdown document (docs/retention.md#markdown-export). Pure.

    # <title>
    - stage, origin (channel, conversation, time), cost against the budget, usage, folder, export time
    ## 你的原话 / Your words            the request verbatim, as a blockquote
    ## 第 N 次 · <cause> · <outcome>    each run, oldest first: started, took, cost, error,
    ### 报告 / Report                   its Report,
    ### 处理过程 / Steps                and its steps, numbered, a failed one marked, details fenced
    ## 审计记录 / Audit trail           what the task did outside its folder, oldest first (docs/audit.md)

The whole document is redacted (`core.export.redaction`) before it is returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from zoneinfo import ZoneInfo

from core.export import blocks
from core.export.blocks import say, word
from core.export.redaction import redact
from core.tasks.views import RunView, TaskDetail
from core.translations import Language, as_language


def task_markdown(
    detail: TaskDetail,
    steps: Mapping[str, Sequence[Mapping[str, object]]],
    *,
    lang: str,  # a locale: any Chinese one reads zh, anything else en
    exported_at: float,
    tz: str | None = None,
    audit: Sequence[Mapping[str, object]] = (),
) -> str:
    """The task with every run, its Report and its steps (`steps[run_id]`: stored step rows, as
    `ActivityStep.to_json`), and its audit events. Times are in `tz` (default: the system's zone)."""
    zone = blocks.zone_of(tz)
    language = as_language(lang)
    lines = _head(detail, language, exported_at, zone)
    for number, run in enumerate(detail.runs, start=1):
        lines += _run(number, run, steps.get(run.id, ()), language, exported_at, zone)
    if detail.report and all(run.report != detail.report for run in detail.runs):
        lines += blocks.report(detail.report, language, "##")
    if audit:
        lines += _audit(audit, language)
    return redact("\n".join(lines).rstrip("\n") + "\n")


def _head(detail: TaskDetail, lang: Language, exported_at: float, zone: ZoneInfo) -> list[str]:
    task = detail.task
    conversation = say(lang, "conversation", id=task.conversation_id)
    origin = f"{say(lang, 'task.desktop')} · {conversation} · {blocks.when(task.created_at, zone)}"
    spent = blocks.costs(task.spent_usd, task.spent_other, task.unpriced_calls, lang, with_usd=True)
    budget = say(lang, "task.budget", budget=blocks.dollars(task.budget_usd))
    facts = [
        ("stage", task.stage_label or task.stage),
        ("from", origin),
        ("cost", blocks.join_costs([f"{spent[0]} / {budget}", *spent[1:]], lang)),
    ]
    if task.tokens_in or task.tokens_out:
        facts.append(("usage", f"{task.tokens_in:,} → {task.tokens_out:,} tokens"))
    if detail.folder:
        facts.append(("folder", blocks.inline_code(detail.folder)))
    if detail.cleanup_at > 0:
        facts.append(("folder_kept", blocks.when(detail.cleanup_at, zone)))
    facts.append(("exported", blocks.when(exported_at, zone)))
    lines = [f"# {blocks.inline(task.title) or task.id}", ""]
    lines += blocks.fact_lines(facts, lang)
    lines += ["", f"## {say(lang, 'your_words')}", ""]
    lines += [*blocks.quote(detail.words), ""] if detail.words.strip() else [say(lang, "none"), ""]
    if detail.brief.strip() and detail.brief.strip() != detail.words.strip():
        lines += [f"## {say(lang, 'task.brief')}", "", *blocks.quote(detail.brief), ""]
    if not detail.runs:
        lines += [say(lang, "no_runs"), ""]
    return lines


MAX_AUDIT_LINES = 500


def _audit(events: Sequence[Mapping[str, object]], lang: Language) -> list[str]:
    """One line per event: its time as written (UTC), kind, decision and result, target, rule."""
    lines = [f"## {say(lang, 'audit')}", ""]
    for event in events[-MAX_AUDIT_LINES:]:
        parts = [
            str(event.get("at", "")),
            str(event.get("kind", "")),
            f"{event.get('decision', '')} → {event.get('result', '')}",
        ]
        target = str(event.get("target", ""))
        if target:
            parts.append(blocks.inline_code(target[:300]))
        if event.get("rule"):
            parts.append(f"{say(lang, 'audit.rule')} {blocks.inline_code(str(event['rule']))}")
        if event.get("actor") and event.get("kind") == "approval":
            parts.append(f"{say(lang, 'audit.by')} {event['actor']}")
        lines.append("- " + " · ".join(parts))
    if len(events) > MAX_AUDIT_LINES:
        lines.append(f"- {say(lang, 'audit.more', count=len(events) - MAX_AUDIT_LINES)}")
    return [*lines, ""]


def _run(
    number: int,
    run: RunView,
    rows: Sequence[Mapping[str, object]],
    lang: Language,
    exported_at: float,
    zone: ZoneInfo,
) -> list[str]:
    title = say(lang, "task.run", number=number)
    cause = word(f"cause.{run.cause}", lang)
    outcome = blocks.outcome_words(run.state, run.outcome, lang)
    lines = [f"## {title} · {cause} · {outcome}", ""]
    facts: list[tuple[str, str]] = []
    if run.started_at > 0:
        facts.append(("started", blocks.when(run.started_at, zone)))
        end = run.ended_at if run.state == "ended" and run.ended_at > 0 else exported_at
        if end >= run.started_at:
            facts.append(("took", blocks.span(end - run.started_at, lang)))
    elif run.queued_at > 0:
        facts.append(("queued", blocks.when(run.queued_at, zone)))
    cost = blocks.costs(run.cost_usd, run.cost_other, run.unpriced_calls, lang)
    if run.cost_usd > 0 or run.cost_other or run.unpriced_calls:
        facts.append(("cost", blocks.join_costs(cost, lang)))
    if run.tokens_in or run.tokens_out:
        facts.append(("usage", f"{run.tokens_in:,} → {run.tokens_out:,} tokens"))
    error = run.error.strip()
    one_line_error = error and "\n" not in error and "\r" not in error and len(error) <= 300
    if one_line_error:
        facts.append(("error", blocks.inline(error)))
    lines += blocks.fact_lines(facts, lang)
    if facts:
        lines.append("")
    if error and not one_line_error:
        lines += [f"**{say(lang, 'fact.error')}**", "", *blocks.fence(blocks.clip(error, lang)), ""]
    lines += blocks.report(run.report, lang, "###")
    parsed, dropped = blocks.parse_steps(rows)
    lines += blocks.steps_section(parsed, dropped, lang, "###")
    return lines

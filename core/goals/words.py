"""What a goal round says (docs/goals.md#what-is-said): to the agent, the checks that failed and why, so
its next round can fix them; to the person, once, each criterion with its last verdict and its source."""

from __future__ import annotations

from collections.abc import Sequence

from core import translations
from core.channels.channel import cut, one_line
from core.goals.acceptance import Criterion
from core.goals.file_checks import Verdict
from core.translations import Language

CRITERION_LIMIT = 40  # characters of a criterion's text in a pushed message


def criteria_brief(criteria: Sequence[Criterion]) -> str:
    """The criteria as the task's first input names them (model-facing, English)."""
    lines = []
    for n, c in enumerate(criteria, start=1):
        check = c.to_json().get("check")
        how = ""
        if check is not None and check["type"] == "command":
            how = f" (the host runs `{check['command']}` in your folder; it must exit 0)"
        elif check is not None and check["type"] == "file":
            how = f" (the host checks that {check['path']} exists and is not empty)"
        elif check is not None:
            how = f" (the host checks that {check['path']} contains {check['text']!r})"
        lines.append(f"{n}. {c.text}{how}")
    return (
        "Acceptance criteria: the task is done only when every one is met. When you report done, the host "
        "checks each itself (a model judges the ones without a check, from your report and the files you "
        "list in it), and tells you what failed.\n" + "\n".join(lines)
    )


def round_feedback(
    number: int, max_rounds: int, criteria: Sequence[Criterion], verdicts: Sequence[Verdict]
) -> str:
    """The next round's input (model-facing, English)."""
    failed = [(n, c, v) for n, (c, v) in enumerate(zip(criteria, verdicts, strict=True), 1) if not v.passed]
    lines = [
        f"[Goal check after round {number} of {max_rounds}] {len(failed)} of {len(criteria)} acceptance "
        "criteria are not met, so the task is not done. Your report does not change a failed check."
    ]
    for n, criterion, verdict in failed:
        lines.append(f"{n}. {criterion.text} (checked by {verdict.source}): {verdict.detail}")
    lines.append("Fix what failed, then report done again with the task_report tool.")
    return "\n".join(lines)


def verdict_summary(lang: Language, criteria: Sequence[Criterion], verdicts: Sequence[Verdict | None]) -> str:
    """Each criterion with its last verdict and where it came from, on one line: a pushed message has two
    lines and 300 characters (docs/push-rules.md#message-shape), so the details stay in the task detail."""
    marks = []
    for n, criterion in enumerate(criteria):
        verdict = verdicts[n] if n < len(verdicts) else None
        text = cut(one_line(criterion.text), CRITERION_LIMIT)
        if verdict is None:
            marks.append(translations.text(lang, "goal.unchecked", text=text))
            continue
        key = "goal.passed" if verdict.passed else "goal.failed"
        source = translations.text(lang, f"goal.source.{verdict.source}")
        marks.append(translations.text(lang, key, text=text, source=source))
    return "; ".join(marks)

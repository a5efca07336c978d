"""The model's judgement of criteria without a host check (docs/goals.md#the-judge): a separate model turn,
with no tools, shown the task's Report and the files it names, that must quote its evidence.

A pass counts only when its quote is really in what the judge was shown: a judge cannot pass a criterion
on words it made up, and a summary cannot turn a failed check into a pass (those criteria never reach it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from core.goals.file_checks import Verdict
from core.tasks.report import Report

FILE_LIMIT = 12_000  # characters of each file the judge is shown
EVIDENCE_LIMIT = 60_000
MAX_FILES = 10
MAX_QUOTE = 600

JUDGE_SECTION = """You are judging a background task for the user: {title}.
You decide, for each numbered criterion, whether the work meets it. Use only the evidence below: the task's
report and the files it produced. Do not trust claims: a criterion is met only when the evidence shows it.

Answer with one JSON object and nothing else:
{{"verdicts": [{{"criterion": 1, "passed": true, "evidence": "<words copied exactly from the evidence>",
"reason": "<one sentence>"}}]}}
Give one verdict per criterion. For a pass, `evidence` must be copied word for word from the evidence
(at most 600 characters); a pass without such a quote counts as a failure. For a failure, say in `reason`
what is missing."""


class JudgementError(ValueError):
    """The judge's answer could not be read as verdicts; the message says why, for a second try."""


@dataclass(frozen=True, slots=True)
class Evidence:
    text: str


def _inside(folder: Path, relative: str) -> Path | None:
    root = folder.resolve()
    target = (root / relative).resolve()
    return target if root in target.parents else None


def gather_evidence(report: Report, folder: Path) -> Evidence:
    """The report and the files it names (those inside the folder), cut to size. Blocking: off the loop."""
    parts = [f"Report summary:\n{report.summary}"]
    if report.message:
        parts.append(f"Message to the user:\n{report.message}")
    for name in list(report.files)[:MAX_FILES]:
        target = _inside(folder, name)
        if target is None or not target.is_file():
            parts.append(f"File {name}: (not found in the task folder)")
            continue
        with target.open("rb") as f:
            data = f.read(FILE_LIMIT * 4).decode("utf-8", errors="replace")[:FILE_LIMIT]
        parts.append(f"File {name}:\n{data}")
    return Evidence("\n\n".join(parts)[:EVIDENCE_LIMIT])


def judge_prompt(criteria: Sequence[str], evidence: Evidence) -> str:
    numbered = "\n".join(f"{n}. {text}" for n, text in enumerate(criteria, start=1))
    return f"Criteria:\n{numbered}\n\nEvidence:\n<<<\n{evidence.text}\n>>>"


_SPACE = re.compile(r"\s+")
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


def _plain(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def parse_judgement(answer: str, count: int, evidence: Evidence) -> tuple[Verdict, ...]:
    """One verdict per criterion (1..count), or JudgementError saying what was wrong with the answer."""
    try:
        raw = json.loads(_FENCE.sub("", answer))
    except ValueError as exc:
        raise JudgementError(f"the answer is not JSON ({exc.args[0]})") from None
    items = raw.get("verdicts") if isinstance(raw, dict) else None
    if not isinstance(items, list):
        raise JudgementError('the answer needs a "verdicts" list')
    found: dict[int, Verdict] = {}
    seen = _plain(evidence.text)
    for item in items:
        if not isinstance(item, dict):
            raise JudgementError("each verdict must be an object")
        number = item.get("criterion")
        if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= count:
            raise JudgementError(f"criterion must be a number from 1 to {count} (got {number!r})")
        passed = item.get("passed")
        if not isinstance(passed, bool):
            raise JudgementError(f"criterion {number}: passed must be true or false")
        quote = str(item.get("evidence") or "").strip()[:MAX_QUOTE]
        reason = str(item.get("reason") or "").strip()[:MAX_QUOTE]
        if passed and not quote:
            found[number] = Verdict(False, "model", "judged met but quoted no evidence")
        elif passed and _plain(quote) not in seen:
            found[number] = Verdict(
                False, "model", f"judged met, but its quote is not in the evidence: {quote!r}"
            )
        elif passed:
            found[number] = Verdict(True, "model", f"met: {quote!r}")
        else:
            found[number] = Verdict(False, "model", f"not met: {reason or 'no reason given'}")
    missing = [n for n in range(1, count + 1) if n not in found]
    if missing:
        raise JudgementError(f"no verdict for criterion {', '.join(map(str, missing))}")
    return tuple(found[n] for n in range(1, count + 1))

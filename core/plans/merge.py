"""The aggregator's answer, read strictly (docs/plans.md#the-merge): one message for the user and a summary
for the task's record. An answer that cannot be read raises MergeError, worded for the retry."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from core.plans.prompts import PartResult

MAX_MESSAGE = 300
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


class MergeError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Merged:
    message: str
    summary: str


def parse_merge(answer: str) -> Merged:
    try:
        raw = json.loads(_FENCE.sub("", answer))
    except ValueError as exc:
        raise MergeError(f"the answer is not JSON ({exc.args[0]})") from None
    if not isinstance(raw, dict):
        raise MergeError("the answer must be a JSON object with message and summary")
    message, summary = raw.get("message"), raw.get("summary")
    if not isinstance(message, str) or not message.strip():
        raise MergeError("message must be a non-empty string")
    if len(message.strip()) > MAX_MESSAGE:
        raise MergeError(f"message is {len(message.strip())} characters; at most {MAX_MESSAGE}")
    return Merged(message.strip(), summary.strip() if isinstance(summary, str) else "")


def plain_merge(results: Sequence[PartResult]) -> Merged:
    """The parts' own messages, one after another: the merge when no model turn may be spent on it (the
    budget is used up) or its answers could not be read."""
    done = [r for r in results if r.outcome == "done"]
    message = "; ".join(f"{r.title}: {r.message}" for r in done if r.message) or "; ".join(
        r.title for r in done
    )
    summary = "\n".join(f"{r.title} ({r.outcome}): {r.summary}" for r in results)
    if len(message) > MAX_MESSAGE:
        message = message[: MAX_MESSAGE - 1].rstrip() + "…"
    return Merged(message, summary)

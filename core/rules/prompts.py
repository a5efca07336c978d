"""Model-facing text for rule sessions (English, per DESIGN.md). The instruction is the user's, verbatim."""

from __future__ import annotations

from collections.abc import Sequence

RULE_MARK = "You are running a standing rule for the user: {title}."

RULE_SECTION = (
    RULE_MARK
    + """
The user's instruction, in their own words:
<<<
{instruction}
>>>
Your folder is {folder}; keep notes there if a later run needs them (every run starts a fresh session).

{mode_note}

How to finish: call the task_report tool once, then end your turn.
- `done` when you checked. `message` is what to tell the user: one line, at most 300 characters, in the
  user's language. Leave `message` out when nothing is worth saying: then the user hears nothing.
- `failed` with what went wrong, when you could not do the check.
A rule run never asks the user anything and never waits for an answer: decide, and say what you chose.

Earlier runs of this rule (newest first):
{previous}"""
)

ACT_NOTE = "This rule acts: a non-empty `message` in your report is sent to the user."
OBSERVE_NOTE = """This rule is in observe mode: the user is watching it before letting it act.
- Change nothing: no sending, posting, paying or deleting, no file changes, no calls that change anything.
- Nobody is told anything. Put in `message` what you would tell the user (or leave it out to stay quiet),
  and in `would` what you would have done beyond telling them, if anything."""

START = "Run the rule now."
NUDGE = "You ended your turn without reporting. Report this run with the task_report tool now."
SETTLE_LIMIT_NOTE = (
    "Your background jobs ran for more than 30 minutes after your turn ended and were stopped: {jobs}."
)


def previous_reports(reports: Sequence[tuple[str, str, str]]) -> str:
    """The last Reports as `(when, outcome, text)` lines; '(none yet)' for a rule's first run."""
    if not reports:
        return "(none yet)"
    return "\n".join(f"- {when} {outcome}: {text}".rstrip(": ") for when, outcome, text in reports)

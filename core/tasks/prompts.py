"""Model-facing text for task sessions and for the chat agent's task tools (English, per DESIGN.md)."""

from __future__ import annotations

from collections.abc import Sequence

MAX_BRIEF = 1500
RECENT_MESSAGES = 6
MAX_ATTACHMENTS = 20

TASK_SECTION = """You are working on a background task for the user: {title}.
Your folder is {folder}; keep your files there.

How to work:
- Decide for yourself and say what you chose in your result. Never ask about language, format, scope or
  style: use the conversation's language and the most reasonable option.
- Ask only when a wrong guess would cause harm or cost money, when you need something only the user has
  (a login, a file, a password), or when a step cannot be undone (paying, deleting the user's data,
  messaging other people). Then report `needs_you` with one concrete question.
- Before and after each outside action (sending, posting, paying, deleting, calling an API that changes
  something), append one line to `.task/journal.md` in your folder saying what you are about to do and
  what happened.
- Report with the task_report tool: `done` with a one-line `message` (at most 300 characters, in the
  user's language) when the result is ready; `failed` with what went wrong and what the user can do;
  `needs_you` with a question when you must ask; `progress` is for your own notes and is never shown.
- A draft is not done, and a failure is a failure: report honestly."""

CHAT_TASK_RULES = """Background tasks: when the user's request clearly needs more than a few minutes or many
steps (building something, research, a report), or the user asks for it in the background (「后台做」), start
a task with task_start instead of doing it here, and confirm in one sentence what you will do, e.g.
「好,后台开始调研三家云的 GPU 价格,好了告诉你。」. Do not start a task for something you can answer now.
Pass the user's request in `brief` with what you know that helps; the user's own words are added for you.
When the user says what must be true for the work to count (the tests pass, a file exists), pass that as
`acceptance`: the task is then done only when the host's checks pass. Pass `plan: true` when the goal has
two or more parts that can be delivered on their own, or one part must come first.
When the user refers to a task ("the GPU one, make it English"), use task_message. task_list shows open
tasks."""

CHAT_RULE_RULES = """Rules: when the user gives a standing instruction with a time or an interval
(「每天早上 8 点看看 X 的价格,低于 200 告诉我」, "remind me every Monday at 9"), create it with rule_create:
`instruction` is the user's words verbatim, and you supply `title` and the structured `schedule`. Never
create a rule for one-off work (that is task_start), and do not do the check now. A rule acts by default;
pass `mode: "observe"` only when the user asks to watch it first (「先观察」). A fixed reminder of the user's
own text is `kind: "remind"`. If the tool says a field is wrong, fix it and call again. Confirm once, in one
sentence, as the tool result says."""

NUDGE = "You ended your turn without reporting. Report your state now with the task_report tool."
SETTLE_LIMIT_NOTE = (
    "Your background jobs ran for more than 30 minutes after your turn ended and were stopped: {jobs}."
)


def task_brief(
    *, words: str, brief: str, recent: Sequence[tuple[str, str]], attachments: Sequence[str] = ()
) -> str:
    """The task's first input (docs/chat.md#starting-a-task-from-chat): the user's words verbatim, the agent's
    brief, recent chat, and the files the user sent there, by their absolute paths (`[image: /…]`)."""
    parts = [f"The user asked:\n{words.strip()}"]
    if brief.strip() and brief.strip() != words.strip():
        parts.append(f"Brief from the chat assistant:\n{brief.strip()[:MAX_BRIEF]}")
    if recent:
        lines = "\n".join(f"{role}: {text.strip()[:500]}" for role, text in recent[-RECENT_MESSAGES:])
        parts.append(f"The last messages of the conversation:\n{lines}")
    if attachments:
        listed = "\n".join(attachments[-MAX_ATTACHMENTS:])
        parts.append(f"Files the user sent in the conversation (open them by these paths):\n{listed}")
    return "\n\n".join(parts)

"""The restart recovery planner (docs/recovery.md).

A restart (app start, or the agent runtime coming back) loses the running turns, queued inbox
messages, background jobs and pending approvals; session history and folders survive (docs/recovery.md). The
host stored what it owes each session, and this module decides, from those facts alone, what to do about it.
It is a pure function of its inputs: planning twice on the same facts gives the same plan, and a plan
once applied (runs ended, recover runs queued) plans nothing new on the next start."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from core.tasks.stage import is_waiting_for_person

RECOVERY_NOTE = (
    "The app restarted while you were working on this task. Your last step may not have finished, "
    "and these background jobs were stopped: {jobs}. Before repeating any outside action (sending, "
    "posting, paying, deleting, or calling an API that changes something), read `.task/journal.md`, "
    "check your folder and check the outside system. Then continue and report with task_report."
)
_MAX_JOB_TEXT = 200  # a job's command as the note shows it; the note must stay readable
_IN_FLIGHT = frozenset({"running", "settling"})


@dataclass(frozen=True, slots=True)
class LiveRun:
    """A run that had not ended when the host went away (`runs.state` queued, running or settling)."""

    run_id: str
    # "" for a rule run: the rule runner ends it `interrupted` at start and its schedule goes on from now
    # (docs/recovery.md#what-a-start-does)
    task_id: str
    bot_id: str
    state: str
    queued_at: float
    task_created_at: float
    asked_question_without_default: bool  # it had already asked; the question survives the restart


@dataclass(frozen=True, slots=True)
class TaskFacts:
    task_id: str
    created_at: float
    stage_key: str  # the stage before the restart (`core.tasks.stage`)
    blocked_on_approval: bool  # its open item was an approval, which the restart expired with the turn
    stopped: bool


@dataclass(frozen=True, slots=True)
class PendingInput:
    """A `run_inputs` row: something the host handed, or meant to hand, to a session."""

    input_id: str
    task_id: str
    kind: str
    taken: bool  # the session was seen taking it; then it is never delivered again
    created_at: float


@dataclass(frozen=True, slots=True)
class RecoveryPlan:
    """What the host does at start. The lists are disjoint where they name runs.

    - `interrupted`: run ids that end with outcome `interrupted` (queued runs are left queued).
    - `needs_you`: run ids that end `needs_you` instead: they had asked a question without a default, so
      the task waits for the answer rather than being recovered.
    - `recover`: task ids that get a `recover` run, oldest task first (the queue order for slots).
    - `redeliver`: input ids to deliver again, oldest first: never taken, and not of a stopped task.
    - `notes`: task id -> recovery note for every task whose run was cut off and that isn't stopped.
      The caller stores each as an input of the task, so it is the first message of the task's next
      run: the recover run, or (for a task waiting for a person) the run the person's input starts.
      The redelivered inputs follow it in their own order."""

    interrupted: list[str] = field(default_factory=list)
    needs_you: list[str] = field(default_factory=list)
    recover: list[str] = field(default_factory=list)
    redeliver: list[str] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)


def recovery_note(jobs: Iterable[str]) -> str:
    """RECOVERY_NOTE with the stopped jobs filled in: each command on one line, in backticks, or 'none'."""
    shown = [f"`{_one_line(command)}`" for command in jobs if command.strip()]
    return RECOVERY_NOTE.format(jobs=", ".join(shown) if shown else "none")


def _one_line(command: str) -> str:
    text = " ".join(command.split())
    return text if len(text) <= _MAX_JOB_TEXT else text[: _MAX_JOB_TEXT - 1] + "…"


def plan_recovery(
    runs: Sequence[LiveRun],
    tasks: Sequence[TaskFacts],
    inputs: Sequence[PendingInput],
    killed_jobs: Mapping[str, Sequence[str]],
) -> RecoveryPlan:
    """Plan restart recovery from the stored facts (docs/recovery.md#what-a-start-does).

    - Every run in `running` or `settling` was cut off. It ends `needs_you` if it had asked a question
      without a default (that question survives), otherwise `interrupted`.
    - Its task gets one `recover` run unless the task is stopped, already has a queued run (which will
      resume the session and take the note), or waits for a person (stage rows 2-5). The exception is
      a task blocked on an approval: the approval expired with the turn, so nothing else would ever
      wake it; the recover run lets the agent ask again if it still needs to.
    - A task with no facts (a caller gap) is treated as working, because not resuming a task that was
      running is the worse failure."""
    facts = {t.task_id: t for t in tasks}
    plan = RecoveryPlan()

    def stopped(task_id: str) -> bool:
        f = facts.get(task_id)
        return f is not None and f.stopped

    cut_off = sorted((r for r in runs if r.state in _IN_FLIGHT), key=lambda r: (r.queued_at, r.run_id))
    queued_tasks = {r.task_id for r in runs if r.state == "queued"}
    to_recover: dict[str, float] = {}
    noted: set[str] = set()
    for run in cut_off:
        task_id = run.task_id
        if task_id and run.asked_question_without_default and not stopped(task_id):
            plan.needs_you.append(run.run_id)
        else:
            plan.interrupted.append(run.run_id)
            if task_id and _should_recover(facts.get(task_id)) and task_id not in queued_tasks:
                f = facts.get(task_id)
                to_recover[task_id] = f.created_at if f is not None else run.task_created_at
        if task_id and not stopped(task_id):
            noted.add(task_id)

    plan.recover.extend(sorted(to_recover, key=lambda t: (to_recover[t], t)))
    plan.notes.update({t: recovery_note(killed_jobs.get(t, ())) for t in sorted(noted)})
    plan.redeliver.extend(
        i.input_id
        for i in sorted(inputs, key=lambda i: (i.created_at, i.input_id))
        if not i.taken and not stopped(i.task_id)
    )
    return plan


def _should_recover(f: TaskFacts | None) -> bool:
    if f is None:
        return True
    if f.stopped:
        return False
    return f.blocked_on_approval or not is_waiting_for_person(f.stage_key)

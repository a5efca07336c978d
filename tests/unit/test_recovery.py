"""The restart recovery planner (docs/recovery.md): which runs end how, which tasks are
recovered and in what order, which inputs are delivered again, and the note the agent reads."""

from __future__ import annotations

from core.tasks.recovery import (
    RECOVERY_NOTE,
    LiveRun,
    PendingInput,
    RecoveryPlan,
    TaskFacts,
    plan_recovery,
    recovery_note,
)


def run(
    run_id: str,
    task_id: str,
    state: str = "running",
    *,
    at: float = 0,
    created: float = 0,
    asked: bool = False,
) -> LiveRun:
    return LiveRun(
        run_id=run_id,
        task_id=task_id,
        bot_id="bot",
        state=state,
        queued_at=at,
        task_created_at=created,
        asked_question_without_default=asked,
    )


def task(
    task_id: str, stage: str = "working", *, created: float = 0, approval: bool = False, stopped: bool = False
) -> TaskFacts:
    return TaskFacts(
        task_id=task_id, created_at=created, stage_key=stage, blocked_on_approval=approval, stopped=stopped
    )


def inp(
    input_id: str, task_id: str, *, at: float, taken: bool = False, kind: str = "followup"
) -> PendingInput:
    return PendingInput(input_id=input_id, task_id=task_id, kind=kind, taken=taken, created_at=at)


def plan(
    runs: list[LiveRun],
    tasks: list[TaskFacts],
    inputs: list[PendingInput] | None = None,
    jobs: dict[str, list[str]] | None = None,
) -> RecoveryPlan:
    return plan_recovery(runs, tasks, inputs or [], jobs or {})


NOTE_NO_JOBS = RECOVERY_NOTE.format(jobs="none")


# --- runs -----------------------------------------------------------------------------------------------


def test_running_and_settling_runs_end_interrupted_and_queued_runs_stay_queued() -> None:
    p = plan(
        [run("r1", "t1", "running"), run("r2", "t2", "settling", at=1), run("r3", "t3", "queued")],
        [task("t1"), task("t2"), task("t3")],
    )
    assert p.interrupted == ["r1", "r2"]
    assert p.needs_you == []
    assert p.recover == ["t1", "t2"]  # t3 is already queued: its run resumes it
    assert set(p.notes) == {"t1", "t2"}


def test_ended_runs_are_ignored() -> None:
    assert plan([run("r1", "t1", "ended")], [task("t1")]) == RecoveryPlan()


def test_a_run_that_had_asked_a_question_without_a_default_ends_needs_you_and_is_not_recovered() -> None:
    p = plan([run("r1", "t1", "settling", asked=True)], [task("t1", "needs-you/answer")])
    assert (p.interrupted, p.needs_you, p.recover) == ([], ["r1"], [])
    # Its note waits as an input and reaches the session with the answer.
    assert p.notes == {"t1": NOTE_NO_JOBS}


def test_a_question_without_a_default_wins_over_a_lost_approval() -> None:
    p = plan([run("r1", "t1", asked=True)], [task("t1", "needs-you/answer", approval=True)])
    assert (p.needs_you, p.recover) == (["r1"], [])


def test_a_rule_run_is_interrupted_but_left_to_the_rules_grace_period() -> None:
    p = plan([run("rr", "", "running", asked=True)], [])
    assert (p.interrupted, p.needs_you, p.recover, p.notes) == (["rr"], [], [], {})


# --- which tasks are recovered --------------------------------------------------------------------------


def test_a_working_task_is_recovered() -> None:
    p = plan([run("r1", "t1")], [task("t1", "working")])
    assert p.recover == ["t1"]


def test_a_task_with_a_result_still_settling_is_recovered() -> None:
    # A done Report while background jobs still ran: the run was cut off, so the task goes on.
    assert plan([run("r1", "t1", "settling")], [task("t1", "ready")]).recover == ["t1"]


def test_tasks_waiting_for_a_person_are_not_recovered() -> None:
    stages = ["needs-you/delivery", "needs-you/answer", "needs-you/budget", "failed"]
    runs = [run(f"r{i}", f"t{i}") for i in range(len(stages))]
    tasks = [task(f"t{i}", stage) for i, stage in enumerate(stages)]
    p = plan(runs, tasks)
    assert p.recover == []
    assert p.interrupted == [r.run_id for r in runs]
    assert set(p.notes) == {t.task_id for t in tasks}  # the note goes with the person's next input


def test_a_task_blocked_on_an_approval_is_recovered_because_the_approval_was_lost() -> None:
    p = plan([run("r1", "t1")], [task("t1", "needs-you/answer", approval=True)])
    assert (p.interrupted, p.recover) == (["r1"], ["t1"])


def test_a_stopped_task_is_never_recovered_and_gets_no_note() -> None:
    p = plan(
        [run("r1", "t1")], [task("t1", "stopped", approval=True, stopped=True)], jobs={"t1": ["sleep 9"]}
    )
    assert (p.interrupted, p.recover, p.notes) == (["r1"], [], {})


def test_a_stopped_task_with_an_asked_question_is_just_interrupted() -> None:
    p = plan([run("r1", "t1", asked=True)], [task("t1", "stopped", stopped=True)])
    assert (p.interrupted, p.needs_you) == (["r1"], [])


def test_a_task_without_facts_is_treated_as_working() -> None:
    p = plan([run("r1", "t9", created=5)], [])
    assert (p.interrupted, p.recover) == (["r1"], ["t9"])


def test_recovery_goes_oldest_task_first() -> None:
    runs = [run("r-new", "t-new", at=1), run("r-old", "t-old", at=9), run("r-mid", "t-mid", at=5)]
    tasks = [task("t-new", created=300), task("t-old", created=100), task("t-mid", created=200)]
    p = plan(runs, tasks)
    assert p.recover == ["t-old", "t-mid", "t-new"]
    assert p.interrupted == ["r-new", "r-mid", "r-old"]  # runs in the order they were queued


def test_task_age_falls_back_to_the_runs_copy_and_ties_break_by_id() -> None:
    p = plan([run("r1", "t-b", created=50), run("r2", "t-a", created=50), run("r3", "t-c", created=10)], [])
    assert p.recover == ["t-c", "t-a", "t-b"]


def test_a_task_is_recovered_once_even_with_two_cut_off_runs() -> None:
    p = plan([run("r1", "t1", "running"), run("r2", "t1", "settling", at=1)], [task("t1")])
    assert (p.interrupted, p.recover, list(p.notes)) == (["r1", "r2"], ["t1"], ["t1"])


# --- inputs ---------------------------------------------------------------------------------------------


def test_inputs_never_taken_are_delivered_again_oldest_first() -> None:
    inputs = [inp("i3", "t1", at=30), inp("i1", "t1", at=10), inp("i2", "t2", at=20), inp("i0", "t1", at=10)]
    p = plan([run("r1", "t1")], [task("t1"), task("t2")], inputs)
    assert p.redeliver == ["i0", "i1", "i2", "i3"]


def test_a_taken_input_is_never_delivered_again() -> None:
    inputs = [inp("i1", "t1", at=1, taken=True), inp("i2", "t1", at=2)]
    assert plan([run("r1", "t1")], [task("t1")], inputs).redeliver == ["i2"]


def test_a_stopped_tasks_inputs_are_not_delivered_again() -> None:
    inputs = [inp("i1", "t1", at=1), inp("i2", "t2", at=2)]
    p = plan([], [task("t1", "stopped", stopped=True), task("t2", "needs-you/answer")], inputs)
    assert p.redeliver == ["i2"]  # a waiting task's input goes with its next run


# --- the note -------------------------------------------------------------------------------------------


def test_the_note_is_the_p3_wording() -> None:
    assert RECOVERY_NOTE == (
        "The app restarted while you were working on this task. Your last step may not have finished, and "
        "these background jobs were stopped: {jobs}. Before repeating any outside action (sending, posting, "
        "paying, deleting, or calling an API that changes something), read `.task/journal.md`, check your "
        "folder and check the outside system. Then continue and report with task_report."
    )


def test_the_note_names_the_stopped_jobs_or_none() -> None:
    p = plan(
        [run("r1", "t1"), run("r2", "t2")],
        [task("t1"), task("t2")],
        jobs={"t1": ["npm run build", "sleep 600"], "other": ["x"]},
    )
    assert p.notes["t1"] == RECOVERY_NOTE.format(jobs="`npm run build`, `sleep 600`")
    assert p.notes["t2"] == NOTE_NO_JOBS
    assert "stopped: none. Before" in p.notes["t2"]


def test_a_job_command_is_shown_on_one_line_and_clipped() -> None:
    note = recovery_note(["python long.py \\\n  --flag", "  ", "y" * 500])
    assert "`python long.py \\ --flag`, `" + "y" * 199 + "…`." in note


# --- idempotence ----------------------------------------------------------------------------------------


def test_planning_twice_on_the_same_facts_gives_the_same_plan() -> None:
    runs = [run("r1", "t1", at=1), run("r2", "t2", "settling", asked=True), run("r3", "t3", "queued")]
    tasks = [task("t1", created=2), task("t2", "needs-you/answer", created=1), task("t3")]
    inputs = [inp("i1", "t1", at=1), inp("i2", "t2", at=2, taken=True)]
    jobs = {"t1": ["sleep 600"]}
    first = plan(runs, tasks, inputs, jobs)
    assert plan(runs, tasks, inputs, jobs) == first
    assert plan(list(reversed(runs)), list(reversed(tasks)), list(reversed(inputs)), jobs) == first


def test_a_plan_once_applied_plans_no_second_recovery() -> None:
    # After the first start: r1 ended interrupted and a recover run was queued; the host stops again
    # before that run starts.
    after = [run("r1", "t1", "ended"), run("rec1", "t1", "queued", at=5)]
    p = plan(after, [task("t1")], [inp("note", "t1", at=5, kind="recovery")])
    assert (p.interrupted, p.needs_you, p.recover, p.notes) == ([], [], [], {})
    assert p.redeliver == ["note"]  # still untaken: its run will take it, once

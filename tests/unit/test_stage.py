"""The task stage table (docs/task-stages.md), row by row, then the rows that compete: first match wins."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.tasks.stage import (
    ALL_STAGES,
    ASKING,
    BUDGET,
    FAILED,
    NEEDS_ANSWER,
    NEEDS_APPROVAL,
    QUEUED,
    READY,
    STOPPED,
    UNDELIVERED,
    WORKING,
    Stage,
    StageFacts,
    is_waiting_for_person,
    task_stage,
)

# A task with a run going and nothing else true: row 9.
BASE = StageFacts(
    stopped=False,
    undelivered=False,
    awaiting_answer=False,
    awaiting_approval=False,
    budget_stopped=False,
    latest_report_state=None,
    launch_failed=False,
    person_input_since_report=False,
    run_active=True,
    inputs_waiting=False,
    question_with_default_open=False,
)


def stage(**changes: object) -> Stage:
    return task_stage(replace(BASE, **changes))  # type: ignore[arg-type]


# --- one row each ---------------------------------------------------------------------------------------


def test_row_1_a_person_stopped_it() -> None:
    assert stage(stopped=True) is STOPPED


def test_row_2_its_latest_message_did_not_reach_the_conversation() -> None:
    assert stage(undelivered=True, run_active=False, latest_report_state="done") is UNDELIVERED


def test_row_3_an_open_question_without_a_default() -> None:
    assert stage(awaiting_answer=True, run_active=False, latest_report_state="needs_you") is NEEDS_ANSWER


def test_row_3_an_open_approval_reads_waiting_for_approval_under_the_same_key() -> None:
    got = stage(awaiting_answer=True, awaiting_approval=True)
    assert got is NEEDS_APPROVAL
    assert (got.key, got.row, got.group) == (NEEDS_ANSWER.key, 3, "needs")
    assert (got.label("zh"), got.label("en")) == ("等你批准", "Waiting for your approval")


def test_row_4_a_run_stopped_at_the_task_budget() -> None:
    assert stage(budget_stopped=True, run_active=False) is BUDGET


def test_row_5_the_latest_report_is_failed() -> None:
    assert stage(latest_report_state="failed", run_active=False) is FAILED


def test_row_5_the_launch_failed() -> None:
    assert stage(launch_failed=True, run_active=False) is FAILED


def test_row_6_the_latest_report_is_done() -> None:
    assert stage(latest_report_state="done", run_active=False) is READY


def test_row_7_inputs_wait_but_no_run_holds_a_slot() -> None:
    assert stage(inputs_waiting=True, run_active=False) is QUEUED


def test_row_8_a_run_is_going_and_a_question_with_a_default_waits() -> None:
    assert stage(question_with_default_open=True, latest_report_state="needs_you") is ASKING


def test_row_9_otherwise_working() -> None:
    assert stage() is WORKING
    assert stage(latest_report_state="progress") is WORKING


# --- precedence: first match wins -----------------------------------------------------------------------


def test_stopped_beats_everything() -> None:
    everything = {
        "undelivered": True,
        "awaiting_answer": True,
        "budget_stopped": True,
        "latest_report_state": "failed",
        "inputs_waiting": True,
        "question_with_default_open": True,
    }
    assert stage(stopped=True, **everything) is STOPPED


def test_undelivered_beats_an_open_question_and_the_budget() -> None:
    assert stage(undelivered=True, awaiting_answer=True, budget_stopped=True) is UNDELIVERED


def test_an_open_question_beats_the_budget() -> None:
    assert stage(awaiting_answer=True, budget_stopped=True) is NEEDS_ANSWER


def test_the_budget_beats_a_failed_report() -> None:
    assert stage(budget_stopped=True, latest_report_state="failed") is BUDGET


def test_a_failed_launch_beats_a_done_report() -> None:
    assert stage(launch_failed=True, latest_report_state="done", run_active=False) is FAILED


def test_failed_and_ready_beat_waiting_inputs_that_are_not_a_persons() -> None:
    # Automatic inputs (a recovery note, a job wake-up) never lift a failure or a result.
    assert stage(latest_report_state="failed", inputs_waiting=True, run_active=False) is FAILED
    assert stage(latest_report_state="done", inputs_waiting=True, run_active=False) is READY
    assert stage(latest_report_state="failed", question_with_default_open=True) is FAILED


@pytest.mark.parametrize("report", ["failed", "done"])
def test_a_persons_input_after_a_result_moves_the_task_to_queued_asking_or_working(report: str) -> None:
    after = {"latest_report_state": report, "person_input_since_report": True}
    assert stage(**after, inputs_waiting=True, run_active=False) is QUEUED
    assert stage(**after, run_active=True, question_with_default_open=True) is ASKING
    assert stage(**after, run_active=True) is WORKING


def test_a_persons_input_lifts_a_failed_launch() -> None:
    assert stage(
        launch_failed=True, person_input_since_report=True, inputs_waiting=True, run_active=False
    ) is (QUEUED)


def test_a_persons_input_does_not_lift_rows_2_to_4() -> None:
    # Those rows go away only when their cause does (delivered, answered, budget added): the caller's facts.
    assert stage(undelivered=True, person_input_since_report=True) is UNDELIVERED
    assert stage(awaiting_answer=True, person_input_since_report=True) is NEEDS_ANSWER
    assert stage(budget_stopped=True, person_input_since_report=True) is BUDGET


def test_a_blocking_question_beats_a_question_with_a_default() -> None:
    assert stage(awaiting_answer=True, question_with_default_open=True) is NEEDS_ANSWER


def test_queued_beats_asking_when_no_run_holds_a_slot() -> None:
    assert stage(inputs_waiting=True, question_with_default_open=True, run_active=False) is QUEUED


def test_waiting_inputs_while_a_run_is_going_are_still_working() -> None:
    # A follow-up steered into a running run waits as an input, but the task is plainly working.
    assert stage(inputs_waiting=True, run_active=True) is WORKING
    assert stage(inputs_waiting=True, run_active=True, question_with_default_open=True) is ASKING


def test_a_question_with_a_default_and_no_run_going_is_plain_working() -> None:
    assert stage(question_with_default_open=True, run_active=False) is WORKING


# --- the stages themselves ------------------------------------------------------------------------------


def test_groups_follow_p3() -> None:
    groups = {s.key: s.group for s in ALL_STAGES}
    assert groups == {
        "stopped": "ended",
        "needs-you/delivery": "needs",
        "needs-you/answer": "needs",
        "needs-you/budget": "needs",
        "failed": "needs",
        "ready": "ended",
        "working/queued": "working",
        "working/asking": "working",
        "working": "working",
    }


def test_labels_in_both_languages() -> None:
    labels = [(s.label("zh_CN"), s.label("en")) for s in ALL_STAGES]
    assert labels == [
        ("已停止", "Stopped"),
        ("未送达", "Not delivered"),
        ("等你回答", "Waiting for your answer"),
        ("等你批准", "Waiting for your approval"),
        ("预算用完", "Budget used up"),
        ("失败", "Failed"),
        ("已完成", "Done"),
        ("排队中", "Queued"),
        ("进行中,有个问题等你回答", "Working, asking you something"),
        ("进行中", "Working"),
    ]
    assert WORKING.label("zh-Hans") == "进行中"
    assert WORKING.label("fr_FR") == "Working"


def test_rows_are_numbered_in_table_order() -> None:
    assert [s.row for s in ALL_STAGES] == [1, 2, 3, 3, 4, 5, 6, 7, 8, 9]


def test_an_unknown_report_state_is_refused() -> None:
    with pytest.raises(ValueError, match="latest_report_state"):
        replace(BASE, latest_report_state="finished")


def test_facts_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        StageFacts(False, False, False, False, False, None, False, False, False, False, False)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("key", "waiting"),
    [
        ("needs-you/delivery", True),
        ("needs-you/answer", True),
        ("needs-you/budget", True),
        ("failed", True),
        ("stopped", False),
        ("ready", False),
        ("working/queued", False),
        ("working/asking", False),
        ("working", False),
    ],
)
def test_which_stage_keys_wait_for_a_person(key: str, waiting: bool) -> None:
    assert is_waiting_for_person(key) is waiting

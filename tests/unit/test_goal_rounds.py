"""The decision after each goal round (docs/goals.md#rounds): met, one more round, or a stop and why."""

from __future__ import annotations

from core.goals.file_checks import Verdict
from core.goals.rounds import GoalState, RoundLimits, RoundResult, next_round, restarted

OK = Verdict(True, "file", "out.txt exists (3 bytes)")
FAIL = Verdict(False, "command", "`pytest -q` exited 1; 1 failed in 0.03s")


def decide(
    before: GoalState, *verdicts: Verdict, fingerprint: str = "f1", now: float = 100.0, machine: bool = True
) -> RoundResult:
    return next_round(before, verdicts, fingerprint, now=now, created_at=0.0, machine_checks=machine)


def test_all_passed_is_met_and_counts_the_round() -> None:
    result = decide(GoalState(), OK, OK)
    assert result.decision == "met" and result.state.met and result.state.round == 1


def test_a_failed_first_round_goes_on_with_what_failed() -> None:
    result = decide(GoalState(), OK, FAIL)
    assert (result.decision, result.failed, result.state.stopped) == ("again", (1,), "")


def test_the_last_allowed_round_stops_with_the_count() -> None:
    before = GoalState(round=4, fingerprint="f0", failure_key="other")
    result = decide(before, FAIL)
    assert result.decision == "stop" and result.state.stopped == "the goal was not met in 5 rounds"
    assert result.stop is not None and result.stop.words("zh") == "5 轮后仍未达成目标"


def test_the_wall_clock_limit_counts_from_the_start_of_the_goal() -> None:
    result = decide(GoalState(round=1, started_at=10.0, fingerprint="f0"), FAIL, now=10.0 + 3600)
    assert result.state.stopped == "the goal was not met within 60 minutes"
    assert decide(GoalState(round=1, started_at=10.0, fingerprint="f0"), FAIL, now=3000).decision == "again"


def test_a_round_that_changed_no_file_stops_at_once_when_the_host_checks() -> None:
    before = GoalState(round=1, fingerprint="same", failure_key="x")
    assert (
        decide(before, FAIL, fingerprint="same").state.stopped == "round 2 changed no file in the task folder"
    )
    # Criteria only a model judges may be met by a better report: no file change is a stall, not a stop.
    assert decide(before, FAIL, fingerprint="same", machine=False).decision == "again"


def test_the_same_failure_twice_stops_even_when_its_numbers_differ() -> None:
    first = decide(GoalState(), FAIL)
    again = Verdict(False, "command", "`pytest -q` exited 1; 1 failed in 0.41s")
    result = decide(first.state, again, fingerprint="f2")
    assert result.state.stopped == "the same criteria failed the same way two rounds in a row"


def test_two_rounds_without_progress_stop() -> None:
    judged = GoalState()
    reasons = ["not met: no capital", "not met: still no capital", "not met: nothing"]
    for n, why in enumerate(reasons):
        result = next_round(
            judged, (Verdict(False, "model", why),), "same", now=1.0, created_at=0.0, machine_checks=False
        )
        judged = result.state
        if n < 2:
            assert result.decision == "again"
    assert result.state.stopped == "no progress in 2 rounds"


def test_one_more_criterion_passed_is_progress() -> None:
    before = GoalState(round=1, verdicts=(FAIL, FAIL), fingerprint="same", failure_key="k", stalled=1)
    result = next_round(
        before, (OK, FAIL), "same", now=1.0, created_at=0.0, machine_checks=False, limits=RoundLimits()
    )
    assert result.decision == "again" and result.state.stalled == 0


def test_the_state_survives_its_json_and_bad_json_reads_as_fresh() -> None:
    state = decide(GoalState(), OK, FAIL).state
    assert GoalState.loads(state.dumps()) == state
    assert GoalState.loads("not json") == GoalState() == GoalState.loads("")


def test_a_person_going_on_restarts_the_count_from_now() -> None:
    stopped = GoalState(round=5, started_at=1.0, verdicts=(FAIL,), stopped="the goal was not met in 5 rounds")
    fresh = restarted(stopped, 500.0)
    assert (fresh.round, fresh.started_at, fresh.stopped, fresh.verdicts) == (0, 500.0, "", (FAIL,))

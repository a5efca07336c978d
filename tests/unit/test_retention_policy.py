"""The retention policy (docs/retention.md), decision by decision."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from core.tasks.retention import (
    ARCHIVE_AFTER_S,
    DATE_AT_S,
    DAY_S,
    DELETE_AFTER_S,
    MIN_NOTICE_S,
    RUN_LOG_KEEP_S,
    RunInfo,
    TaskDecision,
    TaskFacts,
    decide,
    deletion_date,
    due_for_deletion,
    month_start,
    run_log_time,
    runs_to_prune,
    should_archive,
    wants_folder_check,
)

T0 = 1_790_000_000.0  # the task's last use


def at(days: float) -> float:
    return T0 + days * DAY_S


def test_constants_are_the_decided_days() -> None:
    assert (ARCHIVE_AFTER_S, DATE_AT_S, DELETE_AFTER_S, MIN_NOTICE_S, RUN_LOG_KEEP_S) == (
        30 * DAY_S,
        27 * DAY_S,
        30 * DAY_S,
        3 * DAY_S,
        30 * DAY_S,
    )


# -- archiving -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("days", "archived"), [(0, False), (29.99, False), (30, True), (45, True)])
def test_archived_at_30_idle_days(days: float, archived: bool) -> None:
    assert should_archive(TaskFacts(idle_since=T0), at(days)) is archived
    assert decide(TaskFacts(idle_since=T0), at(days)).archive is archived


def test_a_live_run_protects_from_everything() -> None:
    facts = TaskFacts(idle_since=T0, cleanup_at=at(30), live_run=True, has_files=True)
    assert decide(facts, at(60)) == TaskDecision()
    assert not due_for_deletion(facts, at(60))
    assert not wants_folder_check(TaskFacts(idle_since=T0, live_run=True), at(28))


def test_an_archived_task_is_not_archived_again() -> None:
    assert not decide(TaskFacts(idle_since=T0, archived_at=at(30)), at(31)).archive


# -- the deletion date ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("days", "dated"), [(26.99, False), (27, True)])
def test_a_folder_with_files_gets_its_date_at_27_idle_days(days: float, dated: bool) -> None:
    decision = decide(TaskFacts(idle_since=T0, has_files=True), at(days))
    assert (decision.cleanup_at is not None) is dated
    if dated:
        assert decision.cleanup_at == at(30)  # 30 idle days: 3 days' notice when set on day 27
        assert not decision.archive


def test_date_set_on_day_29_still_gives_3_days() -> None:
    assert decide(TaskFacts(idle_since=T0, has_files=True), at(29)).cleanup_at == at(32)


def test_after_a_long_time_off_the_date_is_3_days_out_not_now() -> None:
    # Off from day 10 to day 40: archived now, the folder goes on day 43.
    decision = decide(TaskFacts(idle_since=T0, has_files=True), at(40))
    assert decision == TaskDecision(archive=True, cleanup_at=at(43), delete_now=False)
    assert deletion_date(T0, at(40)) == at(40) + MIN_NOTICE_S


@pytest.mark.parametrize("has_files", [False, None])
def test_an_empty_missing_or_unread_folder_gets_no_date(has_files: bool | None) -> None:
    decision = decide(TaskFacts(idle_since=T0, has_files=has_files), at(31))
    assert decision == TaskDecision(archive=True)


def test_folders_are_looked_at_only_when_a_date_could_follow() -> None:
    assert not wants_folder_check(TaskFacts(idle_since=T0), at(26))
    assert wants_folder_check(TaskFacts(idle_since=T0), at(27))
    assert not wants_folder_check(TaskFacts(idle_since=T0, cleanup_at=at(30)), at(28))


def test_a_dated_task_is_not_dated_again() -> None:
    facts = TaskFacts(idle_since=T0, cleanup_at=at(30), has_files=True)
    assert decide(facts, at(28)) == TaskDecision()


# -- deleting ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("days", "due"), [(29.99, False), (30, True), (31, True)])
def test_deleted_when_the_date_comes(days: float, due: bool) -> None:
    facts = TaskFacts(idle_since=T0, cleanup_at=at(30))
    assert due_for_deletion(facts, at(days)) is due
    assert decide(facts, at(days)).delete_now is due


def test_the_date_after_a_time_off_holds_for_its_3_days() -> None:
    facts = TaskFacts(idle_since=T0, archived_at=at(40), cleanup_at=at(43))
    assert not decide(facts, at(42.9)).delete_now
    assert decide(facts, at(43)) == TaskDecision(delete_now=True)


def test_archive_and_delete_on_the_same_day() -> None:
    assert decide(TaskFacts(idle_since=T0, cleanup_at=at(30)), at(30)) == TaskDecision(
        archive=True, delete_now=True
    )


def test_a_task_used_since_its_date_was_set_loses_the_date() -> None:
    # 保留 on day 29 (idle since then) should have cleared the date; if it did not, the pass does.
    facts = TaskFacts(idle_since=at(29), cleanup_at=at(30), has_files=True)
    assert decide(facts, at(30)) == TaskDecision(cleanup_at=0.0)
    assert not due_for_deletion(facts, at(30))


def test_kept_task_restarts_its_30_days() -> None:
    kept = TaskFacts(idle_since=at(20), has_files=True)
    assert decide(kept, at(35)) == TaskDecision()
    assert decide(kept, at(47)).cleanup_at == at(50)
    assert decide(kept, at(50)).archive


# -- run logs ------------------------------------------------------------------------------------------

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=ZoneInfo("UTC")).timestamp()


def ended(id: str, days_ago: float, *, task: str = "", rule: str = "", tz: str = "", **kw: float) -> RunInfo:
    when = NOW - days_ago * DAY_S
    return RunInfo(
        id=id,
        task_id=task,
        rule_id=rule,
        tz=tz,
        state="ended",
        queued_at=kw.get("queued_at", when - 60),
        started_at=kw.get("started_at", when - 30),
        ended_at=when,
    )


def test_old_runs_pruned_but_each_tasks_latest_kept() -> None:
    runs = [
        ended("r1", 50, task="t_a"),
        ended("r2", 40, task="t_a"),
        ended("r3", 31, task="t_a"),  # latest of t_a
        ended("r4", 45, task="t_b"),
        ended("r5", 2, task="t_b"),  # latest of t_b, recent
    ]
    assert runs_to_prune(runs, NOW) == ["r1", "r2", "r4"]


def test_runs_ended_less_than_30_days_ago_are_kept() -> None:
    runs = [ended("old", 30.01, task="t"), ended("young", 29.99, task="t"), ended("latest", 1, task="t")]
    assert runs_to_prune(runs, NOW) == ["old"]


def test_a_never_started_run_counts_from_when_it_was_queued() -> None:
    skipped = RunInfo(id="s", rule_id="ru_x", tz="UTC", queued_at=NOW - 70 * DAY_S, ended_at=NOW - DAY_S)
    stopped_long_run = RunInfo(
        id="l", task_id="t", queued_at=NOW - 70 * DAY_S, started_at=NOW - 70 * DAY_S, ended_at=NOW - DAY_S
    )
    assert run_log_time(skipped) == NOW - 70 * DAY_S
    assert run_log_time(stopped_long_run) == NOW - DAY_S
    assert runs_to_prune([skipped, stopped_long_run, ended("newest", 0, task="t")], NOW) == ["s"]


def test_live_runs_are_never_pruned() -> None:
    live = [
        RunInfo(id=f"r_{state}", task_id="t", state=state, queued_at=NOW - 90 * DAY_S)
        for state in ("queued", "running", "settling")
    ]
    assert runs_to_prune([*live, ended("newer", 1, task="t")], NOW) == []


def test_latest_is_by_queued_time_then_id() -> None:
    same = NOW - 60 * DAY_S
    runs = [ended("r_a", 50, task="t", queued_at=same), ended("r_b", 55, task="t", queued_at=same)]
    assert runs_to_prune(runs, NOW) == ["r_a"]


def rule_run(tz: str, queued_at: float) -> RunInfo:
    return RunInfo(
        id=f"r_{tz}",
        rule_id="ru_1",
        tz=tz,
        queued_at=queued_at,
        started_at=queued_at,
        ended_at=queued_at + 60,
    )


ZONES = ("Asia/Shanghai", "UTC", "America/New_York")


def local(tz: str, month: int, day: int, hour: int, minute: int) -> float:
    return datetime(2026, month, day, hour, minute, tzinfo=ZoneInfo(tz)).timestamp()


@pytest.mark.parametrize(
    ("queued", "now", "kept_in"),
    [
        # 2026-12-01 00:30 in Shanghai is still November 30th in UTC and New York.
        (
            local("Asia/Shanghai", 12, 1, 0, 30),
            local("Asia/Shanghai", 12, 31, 20, 0),
            "Asia/Shanghai",
        ),
        # 2026-12-31 23:00 UTC is already January in Shanghai; December 1st 00:30 UTC is November in New York.
        (local("UTC", 12, 1, 0, 30), local("UTC", 12, 31, 23, 0), "UTC"),
    ],
)
def test_rule_runs_of_the_current_month_kept_in_the_rules_zone(
    queued: float, now: float, kept_in: str
) -> None:
    assert now - queued > RUN_LOG_KEEP_S
    pruned = runs_to_prune([rule_run(tz, queued) for tz in ZONES], now)
    assert pruned == [f"r_{tz}" for tz in ZONES if tz != kept_in]


def test_rule_runs_from_the_start_of_the_month_are_kept_even_when_older_than_30_days() -> None:
    tz = "Europe/Berlin"
    first = datetime(2026, 12, 1, 0, 5, tzinfo=ZoneInfo(tz)).timestamp()
    now = datetime(2026, 12, 31, 23, 0, tzinfo=ZoneInfo(tz)).timestamp()
    last_month = datetime(2026, 11, 30, 23, 55, tzinfo=ZoneInfo(tz)).timestamp()
    runs = [
        RunInfo(id="dec", rule_id="ru", tz=tz, queued_at=first, started_at=first, ended_at=first + 60),
        RunInfo(
            id="nov", rule_id="ru", tz=tz, queued_at=last_month, started_at=last_month, ended_at=last_month
        ),
    ]
    assert now - first > RUN_LOG_KEEP_S
    assert runs_to_prune(runs, now) == ["nov"]


def test_an_unknown_zone_reads_as_utc() -> None:
    assert month_start("Mars/Olympus", NOW) == month_start("UTC", NOW)
    assert month_start("", NOW) == datetime(2026, 11, 1, tzinfo=ZoneInfo("UTC")).timestamp()

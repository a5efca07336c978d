"""Background slots (docs/runs.md#the-background-lane-and-slots): per-bot and overall caps, the reserved
person slot, and who starts first."""

from __future__ import annotations

import pytest

from core.tasks.slots import Priority, QueuedRun, SlotError, SlotPolicy, Slots, pick, priority_of

PERSON = Priority.PERSON_WAKE
LAUNCH = Priority.LAUNCH


def busy(*bots: str, priority: Priority = LAUNCH) -> Slots:
    """Slots with one run held per bot named (repeat a bot for more)."""
    slots = Slots()
    for i, bot in enumerate(bots):
        slots.take(f"held-{i}", bot, priority)
    return slots


def q(run_id: str, bot: str, cause: str, at: float) -> QueuedRun:
    return QueuedRun(run_id=run_id, bot_id=bot, cause=cause, queued_at=at)


# --- priorities -----------------------------------------------------------------------------------------


def test_priority_order_is_person_wake_then_launch_then_recovery_then_rule_run() -> None:
    assert Priority.PERSON_WAKE > Priority.LAUNCH > Priority.RECOVERY > Priority.RULE_RUN


@pytest.mark.parametrize(
    ("cause", "priority"),
    [
        ("answer", Priority.PERSON_WAKE),
        ("approval", Priority.PERSON_WAKE),
        ("followup", Priority.PERSON_WAKE),
        ("retry", Priority.PERSON_WAKE),
        ("continue", Priority.PERSON_WAKE),
        ("launch", Priority.LAUNCH),
        ("recover", Priority.RECOVERY),
        ("schedule", Priority.RULE_RUN),
        ("manual", Priority.RULE_RUN),
    ],
)
def test_each_run_cause_has_its_priority(cause: str, priority: Priority) -> None:
    assert priority_of(cause) is priority


def test_an_unknown_cause_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown run cause 'nudge'"):
        priority_of("nudge")


# --- caps -----------------------------------------------------------------------------------------------


def test_defaults_are_two_per_bot_four_overall_one_reserved() -> None:
    assert SlotPolicy() == SlotPolicy(per_bot=2, overall=4, reserved_per_bot=1)


def test_a_bot_runs_at_most_two_ordinary_runs() -> None:
    slots = busy("a")
    assert slots.can_take("a", LAUNCH)
    slots.take("r2", "a", LAUNCH)
    assert (slots.held("a"), slots.total) == (2, 2)
    for priority in (Priority.LAUNCH, Priority.RECOVERY, Priority.RULE_RUN):
        assert not slots.can_take("a", priority)
    assert slots.can_take("b", LAUNCH)


def test_all_bots_together_run_at_most_four_ordinary_runs() -> None:
    slots = busy("a", "a", "b", "b")
    assert slots.total == 4
    assert slots.held("c") == 0
    assert not slots.can_take("c", LAUNCH)
    assert not slots.can_take("c", Priority.RULE_RUN)


def test_a_third_run_on_a_bot_with_two_busy_slots_starts_only_if_it_is_a_person_wake() -> None:
    slots = busy("a", "a")
    assert not slots.can_take("a", LAUNCH)
    assert not slots.can_take("a", Priority.RECOVERY)
    assert slots.can_take("a", PERSON)
    slots.take("answer", "a", PERSON)
    assert slots.held("a") == 3
    assert not slots.can_take("a", PERSON)  # one reserved slot per bot


def test_a_person_wake_on_an_idle_bot_starts_even_when_the_overall_pool_is_full() -> None:
    slots = busy("a", "a", "b", "b")
    assert slots.can_take("c", PERSON)
    slots.take("answer-c", "c", PERSON)
    assert slots.total == 5
    # c's reserve is in use and the pool is full: a second person wake on c waits...
    assert not slots.can_take("c", PERSON)
    # ...but another bot's reserve is still there for its own person.
    assert slots.can_take("d", PERSON)
    assert slots.can_take("a", PERSON)


def test_the_total_never_exceeds_overall_plus_one_reserve_per_bot() -> None:
    slots = busy("a", "a", "b", "b")
    for bot in ("a", "b", "c"):
        slots.take(f"answer-{bot}", bot, PERSON)
    assert slots.total == 7
    assert not any(slots.can_take(bot, PERSON) for bot in ("a", "b", "c"))
    assert not slots.can_take("d", LAUNCH)


def test_person_wakes_use_ordinary_slots_first_and_ordinary_work_never_uses_the_reserve() -> None:
    slots = Slots()
    slots.take("p1", "a", PERSON)
    slots.take("p2", "a", PERSON)
    # Both sit in ordinary slots, so a launch on a can't squeeze in ahead of a third person wake.
    assert not slots.can_take("a", LAUNCH)
    assert slots.can_take("a", PERSON)


def test_ordinary_work_waits_while_a_person_wake_is_over_the_overall_cap() -> None:
    slots = busy("a", "a", "b")
    slots.take("answer", "c", PERSON)
    assert slots.total == 4
    assert not slots.can_take("b", LAUNCH)  # the pool is full; c's person doesn't make room for others


def test_a_reserve_of_zero_means_person_wakes_obey_the_ordinary_caps() -> None:
    slots = Slots(SlotPolicy(reserved_per_bot=0))
    slots.take("r1", "a", LAUNCH)
    slots.take("r2", "a", LAUNCH)
    assert not slots.can_take("a", PERSON)


def test_a_bigger_reserve_lets_more_person_wakes_through() -> None:
    slots = Slots(SlotPolicy(per_bot=1, overall=1, reserved_per_bot=2))
    slots.take("r1", "a", LAUNCH)
    slots.take("p1", "a", PERSON)
    slots.take("p2", "a", PERSON)
    assert not slots.can_take("a", PERSON)
    assert slots.can_take("b", PERSON)


def test_a_policy_with_no_slots_is_refused() -> None:
    with pytest.raises(ValueError, match="slot counts"):
        SlotPolicy(per_bot=0)
    with pytest.raises(ValueError, match="slot counts"):
        SlotPolicy(reserved_per_bot=-1)


# --- take and release -----------------------------------------------------------------------------------


def test_taking_a_slot_that_is_not_free_raises() -> None:
    slots = busy("a", "a")
    with pytest.raises(SlotError, match="no slot for run r3"):
        slots.take("r3", "a", LAUNCH)
    assert slots.total == 2


def test_taking_twice_for_one_run_raises() -> None:
    slots = busy("a")
    with pytest.raises(SlotError, match="already holds"):
        slots.take("held-0", "a", PERSON)
    assert slots.total == 1


def test_release_makes_room_and_is_idempotent() -> None:
    slots = busy("a", "a")
    assert not slots.can_take("a", LAUNCH)
    slots.release("held-0")
    assert (slots.held("a"), slots.total, slots.holds("held-0")) == (1, 1, False)
    assert slots.can_take("a", LAUNCH)
    slots.release("held-0")
    slots.release("never-held")
    assert slots.total == 1


def test_when_a_run_ends_the_person_wake_fits_the_ordinary_slots_and_the_reserve_frees() -> None:
    slots = busy("a", "a")
    slots.take("answer", "a", PERSON)
    slots.release("held-0")
    assert not slots.can_take("a", LAUNCH)  # a still holds 2: its ordinary slots are full
    assert slots.can_take("a", PERSON)  # but the reserve is free again for the next person


def test_copy_is_independent() -> None:
    slots = busy("a")
    clone = slots.copy()
    clone.take("r2", "a", LAUNCH)
    assert (slots.total, clone.total) == (1, 2)


# --- pick -----------------------------------------------------------------------------------------------


def test_pick_starts_by_priority_then_oldest() -> None:
    queued = [
        q("rule", "a", "schedule", 1),
        q("recover", "b", "recover", 2),
        q("launch-new", "c", "launch", 9),
        q("launch-old", "c", "launch", 3),
        q("answer", "d", "answer", 10),
    ]
    assert [r.run_id for r in pick(Slots(), queued)] == ["answer", "launch-old", "launch-new", "recover"]


def test_a_person_wake_goes_ahead_of_queued_launches_on_a_full_bot() -> None:
    slots = busy("a")
    queued = [
        q("launch-1", "a", "launch", 1),
        q("launch-2", "a", "launch", 2),
        q("followup", "a", "followup", 3),
    ]
    assert [r.run_id for r in pick(slots, queued)] == ["followup"]
    # The follow-up took the ordinary slot, so the launches wait; with the bot full a second person
    # wake would still get the reserve.
    assert [r.run_id for r in pick(slots, [*queued, q("retry", "a", "retry", 4)])] == ["followup", "retry"]


def test_pick_does_not_change_the_slots_it_is_given() -> None:
    slots = busy("a")
    pick(slots, [q("r1", "b", "launch", 1), q("r2", "b", "launch", 2)])
    assert (slots.total, slots.held("b")) == (1, 0)


def test_a_full_bot_does_not_hold_back_another_bots_work() -> None:
    queued = [q(f"a{i}", "a", "launch", i) for i in range(5)] + [q("b0", "b", "launch", 100)]
    assert [r.run_id for r in pick(Slots(), queued)] == ["a0", "a1", "b0"]


def test_the_overall_cap_is_shared_fairly_oldest_first_across_bots() -> None:
    queued = [q("a1", "a", "launch", 1), q("b1", "b", "launch", 2), q("a2", "a", "launch", 3)]
    queued += [q("c1", "c", "launch", 4), q("c2", "c", "launch", 5), q("b2", "b", "launch", 6)]
    assert [r.run_id for r in pick(Slots(), queued)] == ["a1", "b1", "a2", "c1"]


def test_pick_with_all_slots_busy_starts_only_person_wakes() -> None:
    slots = busy("a", "a", "b", "b")
    queued = [q("launch", "c", "launch", 1), q("rule", "a", "schedule", 0), q("answer", "b", "answer", 5)]
    assert [r.run_id for r in pick(slots, queued)] == ["answer"]


def test_after_a_release_pick_fills_the_freed_slot() -> None:
    slots = busy("a", "a")
    queued = [q("launch", "a", "launch", 1)]
    assert pick(slots, queued) == []
    slots.release("held-1")
    assert pick(slots, queued) == queued


def test_ties_on_queued_at_are_broken_by_run_id() -> None:
    queued = [q("r-b", "x", "launch", 1), q("r-a", "y", "launch", 1)]
    assert [r.run_id for r in pick(Slots(), queued)] == ["r-a", "r-b"]


def test_pick_skips_runs_that_already_hold_a_slot_and_duplicates() -> None:
    slots = busy("a")
    queued = [q("held-0", "a", "launch", 0), q("r1", "b", "launch", 1), q("r1", "b", "launch", 1)]
    assert [r.run_id for r in pick(slots, queued)] == ["r1"]


def test_pick_of_nothing_is_nothing() -> None:
    assert pick(Slots(), []) == []

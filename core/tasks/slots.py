"""Background slots (docs/runs.md#the-background-lane-and-slots).

Task and rule runs hold a slot while running or settling; chat turns never take one. Each bot has
`per_bot` ordinary slots (or its own count from its settings), drawn from a pool of `overall` shared by all
bots, plus `reserved_per_bot` slots that only a person's wake may use, so an answer never waits behind
background work."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum


class Priority(IntEnum):
    """Who goes first for a free slot; a higher value goes first
    (docs/runs.md#the-background-lane-and-slots)."""

    RULE_RUN = 1
    RECOVERY = 2
    LAUNCH = 3
    PERSON_WAKE = 4  # an answer, an approval, a follow-up, "retry" or "continue"


_PRIORITY_BY_CAUSE: dict[str, Priority] = {
    "answer": Priority.PERSON_WAKE,
    "approval": Priority.PERSON_WAKE,
    "followup": Priority.PERSON_WAKE,
    "retry": Priority.PERSON_WAKE,
    "continue": Priority.PERSON_WAKE,
    "launch": Priority.LAUNCH,
    "recover": Priority.RECOVERY,
    "schedule": Priority.RULE_RUN,
    "manual": Priority.RULE_RUN,
    "event": Priority.RULE_RUN,  # a rule started by an event trigger (EventTriggers)
}


def priority_of(cause: str) -> Priority:
    """The priority of a run cause (`runs.cause`, docs/domain.md#runs). An unknown cause is a bug, not a
    guess."""
    try:
        return _PRIORITY_BY_CAUSE[cause]
    except KeyError:
        raise ValueError(
            f"unknown run cause {cause!r}; expected one of {sorted(_PRIORITY_BY_CAUSE)}"
        ) from None


@dataclass(frozen=True, slots=True)
class SlotPolicy:
    per_bot: int = 2
    overall: int = 4
    reserved_per_bot: int = 1

    def __post_init__(self) -> None:
        if self.per_bot < 1 or self.overall < 1 or self.reserved_per_bot < 0:
            raise ValueError(f"slot counts must be positive (reserved may be 0): {self}")


class SlotError(RuntimeError):
    """A run asked for a slot it may not take, or holds one already."""


@dataclass(frozen=True, slots=True)
class _Held:
    bot_id: str
    person: bool


class Slots:
    """The slots held now, by run id.

    The exact rule (`can_take`):
    - Ordinary work (launch, recovery, rule run) must fit without touching any reserve: the bot holds
      fewer than its `per_bot` runs and all bots together fewer than `overall`. Every held run counts,
      person wakes included, so background work can never occupy a bot's reserved slot.
    - A person wake may start when its bot holds fewer than `per_bot + reserved_per_bot` runs and,
      counting it, `total <= overall + sum over bots of min(person wakes held there, reserved_per_bot)`.
      That is: each bot's reserve lifts the overall cap only by the person wakes that can sit in it,
      so a person wake on an idle bot starts even when the other bots fill the overall pool, and the
      total never exceeds `overall` plus one reserve per bot.
    Slots are counted, not numbered: when a run ends, a person wake in a "reserved" slot simply fits
    the ordinary ones again, and the reserve is free for the next person."""

    def __init__(self, policy: SlotPolicy | None = None) -> None:
        self.policy = policy or SlotPolicy()
        self._held: dict[str, _Held] = {}
        self._per_bot: dict[str, int] = {}

    def copy(self) -> Slots:
        clone = Slots(self.policy)
        clone._held = dict(self._held)
        clone._per_bot = dict(self._per_bot)
        return clone

    def set_per_bot(self, limits: Mapping[str, int]) -> None:
        """Each listed bot's own ordinary slot count (its `task_slots` setting), replacing the policy's
        `per_bot` for it; the overall cap still applies. Runs already holding a slot keep it when a count
        drops: lowering it only stops new runs from starting."""
        bad = {bot: n for bot, n in limits.items() if n < 1}
        if bad:
            raise ValueError(f"a bot needs at least one slot: {bad}")
        self._per_bot = dict(limits)

    def per_bot(self, bot_id: str) -> int:
        return self._per_bot.get(bot_id, self.policy.per_bot)

    def held(self, bot_id: str) -> int:
        return sum(1 for h in self._held.values() if h.bot_id == bot_id)

    @property
    def total(self) -> int:
        return len(self._held)

    def holds(self, run_id: str) -> bool:
        return run_id in self._held

    def can_take(self, bot_id: str, priority: Priority) -> bool:
        p = self.policy
        held = self.held(bot_id)
        per_bot = self.per_bot(bot_id)
        if priority is not Priority.PERSON_WAKE:
            return held < per_bot and self.total < p.overall
        if held >= per_bot + p.reserved_per_bot:
            return False
        return self.total + 1 <= p.overall + self._reserve_credit(extra_person_on=bot_id)

    def _reserve_credit(self, extra_person_on: str) -> int:
        """Sum over bots of min(person wakes held there, reserved_per_bot), counting one more on a bot."""
        persons: dict[str, int] = {extra_person_on: 1}
        for h in self._held.values():
            if h.person:
                persons[h.bot_id] = persons.get(h.bot_id, 0) + 1
        return sum(min(n, self.policy.reserved_per_bot) for n in persons.values())

    def take(self, run_id: str, bot_id: str, priority: Priority) -> None:
        if run_id in self._held:
            raise SlotError(f"run {run_id} already holds a slot")
        if not self.can_take(bot_id, priority):
            raise SlotError(
                f"no slot for run {run_id} ({priority.name}) on bot {bot_id}: "
                f"bot holds {self.held(bot_id)}, all bots {self.total}"
            )
        self._held[run_id] = _Held(bot_id, priority is Priority.PERSON_WAKE)

    def release(self, run_id: str) -> None:
        """Give the slot back. Releasing twice, or a run that held none, is fine: runs end on many paths."""
        self._held.pop(run_id, None)


@dataclass(frozen=True, slots=True)
class QueuedRun:
    run_id: str
    bot_id: str
    cause: str
    queued_at: float

    @property
    def priority(self) -> Priority:
        return priority_of(self.cause)


def pick(slots: Slots, queued: Sequence[QueuedRun]) -> list[QueuedRun]:
    """The queued runs that may start now, in the order to start them.

    Highest priority first, then oldest `queued_at` (then run id, so ties are stable). Each run takes
    a slot on a copy of `slots` if it can; one that can't is skipped rather than blocking the rest, so a
    full bot doesn't hold back another bot's work. `slots` itself is left untouched: the caller takes
    the slots as it actually starts the runs."""
    trial = slots.copy()
    started: list[QueuedRun] = []
    for run in sorted(queued, key=lambda r: (-r.priority, r.queued_at, r.run_id)):
        if trial.holds(run.run_id) or not trial.can_take(run.bot_id, run.priority):
            continue
        trial.take(run.run_id, run.bot_id, run.priority)
        started.append(run)
    return started

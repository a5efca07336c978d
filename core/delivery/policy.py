"""The attention budget: which pushed messages go out now, which wait, and which merge (docs/push-rules.md).

Pure decision logic: no I/O and no clock reads. Times come in as epoch seconds with an IANA time zone name,
and the outbox applies the decisions (sends, marks deliveries held with the reason, wakes up again at the
earliest `not_before`). The rules, for messages nobody asked for at that moment (`unsolicited`):

- **Coalescing.** A conversation's due messages go out as one: two or more become a digest 「N 条提醒:」 /
  "N updates:" with a line each. On a channel that rings, a message first gathers for `coalesce_window_s`
  (2 minutes) after it is due (`retry_later`), so whatever becomes due meanwhile goes with it: rule runs
  that fire together but finish seconds apart cost one notification. No gathering for a retry, for
  messages due long ago (released after quiet hours or a closed window: they go at once, together), or
  where it would run into quiet hours. The desktop conversation gets its messages at once and merges only
  those due together.
- **Quiet hours** (default 22:00-08:00 local). Results, rule hits and everything else that is not a decision
  wait until they end (`quiet_hours`). A question or approval waits too, unless the user wrote to that
  conversation in the last 10 minutes.
- **Daily cap** per conversation (WeChat 3, Feishu 5). A question or approval counts; once the cap is reached
  it waits (`daily_cap`) until the next allowed time. The other messages roll into one digest at the next
  allowed time: the next local midnight, or the end of quiet hours when midnight is in them. Questions take
  the last place under the cap before results do: a result can wait in the tasks view, a question blocks work.
- **One open pushed question or approval per conversation**; a second one waits (`question_open`) until the
  first is answered or withdrawn (the outbox then calls again with `open_pushed_question=False`).
- **Manual pause.** While the conversation's bot is paused, everything due waits (`paused`), asked-for or
  not, on every channel; the outbox looks again when the bot is unpaused.
- **Channel state.** A closed window (WeChat's 24 h) holds everything (`window_closed`), as does an empty send
  quota (`quota`), an unknown conversation or a delivery whose retries are used up (`channel_down`).

A message the user asked for (`unsolicited=False`: a reply to their answer, within their active turn) is not
budgeted: it goes out at once, alone, uncounted, subject only to the channel state.

On a channel that doesn't ring by itself (the desktop conversation), quiet hours and the cap govern only the
OS notification: the message is sent at once and `Decision.ring` says whether to notify. One open question
and the channel state apply there as everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from functools import lru_cache
from typing import Literal
from zoneinfo import ZoneInfo

from core.channels.channel import SHAPE_MAX_CHARS, ChannelCapabilities, cut, one_line, shape, strip_markers
from core.store.deliveries import DeliveryPurpose

DecisionKind = Literal["send", "hold", "digest", "retry_later"]
HeldReason = Literal[
    "", "quiet_hours", "window_closed", "quota", "daily_cap", "channel_down", "question_open", "paused"
]

COALESCE_WINDOW_S = 120.0
USER_ACTIVE_S = 600.0
"""A question may go out during quiet hours when the user wrote to the conversation this recently."""

RETRY_FIRST_S = 5.0
RETRY_CEILING_S = 300.0
RETRIES = 3
"""Automatic retries of a failed send (docs/push-rules.md#retries); after that the delivery waits and
needs-you shows it."""

QUESTION_PURPOSES: frozenset[str] = frozenset({"question", "approval"})
"""Decisions the user must make: one open at a time, never merged, may ring late in an active chat."""

_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_DAY = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class QuietHours:
    """A daily span of local wall-clock time, "HH:MM" to "HH:MM", that may cross midnight. Start is inside,
    end is not. Equal start and end, or `enabled=False`, means no quiet hours."""

    start: str = "22:00"
    end: str = "08:00"
    enabled: bool = True

    def __post_init__(self) -> None:
        _clock_time(self.start)
        _clock_time(self.end)

    @property
    def active(self) -> bool:
        return self.enabled and _clock_time(self.start) != _clock_time(self.end)

    def contains(self, ts: float, tz: str) -> bool:
        """Whether the local wall-clock time at `ts` in `tz` is within quiet hours."""
        if not self.active:
            return False
        local = datetime.fromtimestamp(ts, _zone(tz)).time()
        start, end = _clock_time(self.start), _clock_time(self.end)
        if start < end:
            return start <= local < end
        return local >= start or local < end

    def ends_after(self, ts: float, tz: str) -> float:
        """The next instant after `ts` at which the local clock reaches `end`: when the current quiet span
        ends, or outside quiet hours when the next one will. DST-aware: a 10-hour night is 9 or 11 hours
        long when the clocks change; an end inside a skipped hour is the instant the clock jumps past it;
        an end inside a repeated hour is its first occurrence still ahead. `ts` itself without quiet hours."""
        if not self.active:
            return ts
        zone = _zone(tz)
        end = _clock_time(self.end)
        day = datetime.fromtimestamp(ts, zone).date()
        for offset in range(3):
            ahead = [t for t in _instants(day + offset * _DAY, end, zone) if t > ts]
            if ahead:
                return min(ahead)
        raise AssertionError("unreachable: a wall-clock time recurs within three days")


@dataclass(frozen=True, slots=True)
class Pending:
    """A delivery that is not sent yet (`pending` or `held` in the store)."""

    id: str
    conversation_id: str
    purpose: DeliveryPurpose
    text: str
    due_at: float
    created_at: float
    attempts: int = 0
    """Failed sends so far. After a failure the outbox moves `due_at` to `retry_at(...)`."""
    unsolicited: bool = True
    """False for a message the user asked for just now (a reply to their answer): not budgeted."""
    released: bool = False
    """It waited for the person to write on a chat platform (a closed window, no sends left); now they have,
    so it goes at once, before anything else, whatever the hour or the cap."""


@dataclass(frozen=True, slots=True)
class ConversationFacts:
    """What the outbox knows about a conversation at the moment of deciding."""

    conversation_id: str
    caps: ChannelCapabilities
    tz: str
    last_user_message_at: float | None = None
    sent_today_unsolicited: int = 0
    """Messages that counted toward the cap since local midnight (a digest is one)."""
    open_pushed_question: bool = False
    """A question or approval pushed here earlier is still unanswered."""
    window_open: bool = True
    quota_left: int | None = None
    """Sends the channel still allows (WeChat: 10 per inbound message, less reservations); None: no limit."""
    quiet: QuietHours | None = None
    """This conversation's quiet hours (a bot setting); None uses the `quiet` passed to `decide`."""
    paused: bool = False
    """The conversation's bot is paused (docs/push-rules.md#manual-pause): every push waits until it is
    unpaused."""
    channel_ready: bool = True
    """The conversation's chat platform is connected (a login that expired, a removed channel: no)."""
    reserved: int = 0
    """Sends kept back for what live work owes this peer (docs/channels.md#sending): asked-for messages
    (chat replies) may use only `quota_left - reserved`."""


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do with some pending deliveries of one conversation.

    - `send`: send `text` (one delivery, shaped) now; `digest`: send `text` (several merged) now. Both mark
      all `ids` sent as one message. `ring` says whether it may make a sound: always for a chat channel; on
      the desktop, whether to raise an OS notification. `counts_toward_cap` says whether the message counts
      in `sent_today_unsolicited` from now on.
    - `hold`: mark `ids` held with `held_reason`; look again at `not_before` (0: when something changes, e.g.
      the user writes, answers the open question, or the channel comes back).
    - `retry_later`: leave `ids` pending and look again at `not_before` (not due yet, or waiting briefly for
      another message to merge with).
    """

    kind: DecisionKind
    ids: tuple[str, ...]
    text: str = ""
    held_reason: HeldReason = ""
    not_before: float = 0.0
    ring: bool = False
    counts_toward_cap: bool = False
    conversation_id: str = ""


def decide(
    now: float,
    pending: Sequence[Pending],
    facts: Mapping[str, ConversationFacts],
    quiet: QuietHours,
    *,
    coalesce_window_s: float = COALESCE_WINDOW_S,
) -> list[Decision]:
    """Decide every pending delivery at `now`: each id appears in exactly one decision. Conversations keep
    the order they first appear in `pending`; within one, sends come first, then holds, then retry_later."""
    by_conversation: dict[str, list[Pending]] = {}
    for item in pending:
        by_conversation.setdefault(item.conversation_id, []).append(item)
    times = _LocalTimes(now)
    decisions: list[Decision] = []
    for conversation_id, items in by_conversation.items():
        items.sort(key=_order)
        plan = _Plan(conversation_id)
        known = facts.get(conversation_id)
        if known is None:
            _hold_due_and_wait(plan, now, items, "channel_down")
        elif known.paused:
            # Held without a time: the outbox looks again when the bot is unpaused.
            _hold_due_and_wait(plan, now, items, "paused")
        elif not known.channel_ready:
            # Looked at again when the channel is connected again.
            _hold_due_and_wait(plan, now, items, "channel_down")
        else:
            _decide_conversation(plan, now, items, known, known.quiet or quiet, times, coalesce_window_s)
        decisions.extend(plan.decisions())
    return decisions


def retry_at(
    attempts: int,
    failed_at: float,
    *,
    retries: int = RETRIES,
    first_s: float = RETRY_FIRST_S,
    ceiling_s: float = RETRY_CEILING_S,
) -> float | None:
    """When to try a failed send again. `attempts` counts the failed sends so far, this one included (the
    deliveries row's `attempts` after the failure): 5 s after the first, doubling up to `ceiling_s`, for
    `retries` retries (5, 10, 20 s by default). None when they are used up: the caller raises a needs-you
    `delivery` item and the delivery waits (`channel_down`)."""
    if attempts < 1:
        raise ValueError(f"attempts counts failed sends and starts at 1, got {attempts}")
    if attempts > retries:
        return None
    return failed_at + min(first_s * 2.0 ** min(attempts - 1, 60), ceiling_s)


def digest_text(texts: Sequence[str], caps: ChannelCapabilities) -> str:
    """One message for several: 「N 条提醒:」 when any text has CJK characters, else "N updates:", then one
    line per text. It fits the channel's `max_chars`: lines that don't fit are summed up in a last line."""
    zh = any(_CJK.search(text) for text in texts)
    head = f"{len(texts)} 条提醒:" if zh else f"{len(texts)} updates:"
    lines = []
    for text in texts:
        cleaned = strip_markers(text) if caps.strips_markers else text
        lines.append("· " + cut(one_line(cleaned), SHAPE_MAX_CHARS))
    kept = len(lines)
    while kept > 0:
        rest = len(lines) - kept
        tail = [] if rest == 0 else [f"· …还有 {rest} 条" if zh else f"· … and {rest} more"]
        message = "\n".join([head, *lines[:kept], *tail])
        if len(message) <= caps.max_chars:
            return message
        kept -= 1
    return cut(f"{head}\n· …", caps.max_chars)


def next_allowed(ts: float, tz: str, quiet: QuietHours) -> float:
    """When a conversation over its daily cap may receive the overflow: the next local midnight, or the end
    of quiet hours when midnight falls in them."""
    midnight = next_midnight(ts, tz)
    return quiet.ends_after(midnight, tz) if quiet.contains(midnight, tz) else midnight


def local_midnight(ts: float, tz: str) -> float:
    """The first instant of the local day that `ts` is in."""
    zone = _zone(tz)
    return _instants(datetime.fromtimestamp(ts, zone).date(), time(0), zone)[0]


def next_midnight(ts: float, tz: str) -> float:
    """The first instant of the next local day after `ts` (past the gap where a DST change skips midnight)."""
    zone = _zone(tz)
    tomorrow = datetime.fromtimestamp(ts, zone).date() + _DAY
    return _instants(tomorrow, time(0), zone)[0]


# -- one conversation ------------------------------------------------------------------------------------


class _Plan:
    """The decisions for one conversation as they are made, emitted sends first, holds grouped."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        self._sends: list[Decision] = []
        self._holds: dict[tuple[HeldReason, float], list[str]] = {}
        self._later: list[Decision] = []

    def send(self, items: Sequence[Pending], caps: ChannelCapabilities, *, ring: bool, counts: bool) -> None:
        ids = tuple(item.id for item in items)
        if len(items) == 1:
            kind: DecisionKind = "send"
            # A chat reply is the conversation itself, not a push: it keeps its length and its lines.
            text = items[0].text if not items[0].unsolicited else shape(items[0].text, caps)
        else:
            kind = "digest"
            text = digest_text([item.text for item in items], caps)
        self._sends.append(
            Decision(
                kind,
                ids,
                text,
                ring=ring,
                counts_toward_cap=counts,
                conversation_id=self.conversation_id,
            )
        )

    def hold(self, items: Sequence[Pending], reason: HeldReason, not_before: float = 0.0) -> None:
        self._holds.setdefault((reason, not_before), []).extend(item.id for item in items)

    def later(self, items: Sequence[Pending], not_before: float) -> None:
        ids = tuple(item.id for item in items)
        self._later.append(
            Decision("retry_later", ids, not_before=not_before, conversation_id=self.conversation_id)
        )

    def decisions(self) -> list[Decision]:
        holds = [
            Decision(
                "hold",
                tuple(ids),
                held_reason=reason,
                not_before=not_before,
                conversation_id=self.conversation_id,
            )
            for (reason, not_before), ids in self._holds.items()
        ]
        return [*self._sends, *holds, *self._later]


def _hold_due_and_wait(plan: _Plan, now: float, items: Sequence[Pending], reason: HeldReason) -> None:
    due = [item for item in items if item.due_at <= now]
    if due:
        plan.hold(due, reason)
    for item in items:
        if item.due_at > now:
            plan.later([item], item.due_at)


class _Budget:
    """One conversation's attention budget while its decisions are made; sends spend it."""

    def __init__(self, now: float, facts: ConversationFacts, quiet: QuietHours, times: _LocalTimes) -> None:
        self.caps = facts.caps
        self.tz = facts.tz
        self.quiet = quiet
        self._times = times
        self.quiet_now = times.quiet(quiet, facts.tz)
        last = facts.last_user_message_at
        self.user_active = last is not None and now - last <= USER_ACTIVE_S
        cap = self.caps.daily_cap
        self.cap_left = float("inf") if cap is None else max(0, cap - facts.sent_today_unsolicited)
        self.quota_left = float("inf") if facts.quota_left is None else max(0, facts.quota_left)
        self.reserved = facts.reserved
        self.question_open = facts.open_pushed_question

    def soft_hold(self, *, question: bool) -> tuple[HeldReason, float] | None:
        """Quiet hours or the cap, if either stops an unsolicited message now: they hold it on a channel
        that rings, and only silence it on one that doesn't."""
        if self.quiet_now and not (question and self.user_active):
            return "quiet_hours", self._times.quiet_end(self.quiet, self.tz)
        if self.cap_left < 1:
            return "daily_cap", self._times.next_allowed(self.quiet, self.tz)
        return None

    def spend(self, *, counted: bool, question: bool) -> None:
        self.quota_left -= 1
        if counted:
            self.cap_left -= 1
        if question:
            self.question_open = True


def _decide_conversation(
    plan: _Plan,
    now: float,
    items: Sequence[Pending],
    facts: ConversationFacts,
    quiet: QuietHours,
    times: _LocalTimes,
    coalesce_window_s: float,
) -> None:
    if not facts.window_open:
        _hold_due_and_wait(plan, now, items, "window_closed")
        return
    budget = _Budget(now, facts, quiet, times)
    due: list[Pending] = []
    for item in items:
        if item.due_at > now:
            plan.later([item], item.due_at)
        elif item.attempts > RETRIES:
            plan.hold([item], "channel_down")
        else:
            due.append(item)
    _send_released(plan, due, budget)
    _send_asked_for(plan, due, budget)
    _send_questions(plan, due, budget)
    _send_the_rest(plan, now, due, budget, coalesce_window_s)


def _released(item: Pending) -> bool:
    return item.released and item.unsolicited and item.purpose not in QUESTION_PURPOSES


def _send_released(plan: _Plan, due: Sequence[Pending], budget: _Budget) -> None:
    """What waited for the person to write: one message, first
    (docs/channels.md#held-until-the-person-writes). Questions among it keep their own message and the
    one-open rule."""
    released = [item for item in due if _released(item)]
    if not released:
        return
    if budget.quota_left < 1:
        plan.hold(released, "quota")
        return
    plan.send(released, budget.caps, ring=True, counts=False)
    budget.spend(counted=False, question=False)


def _send_asked_for(plan: _Plan, due: Sequence[Pending], budget: _Budget) -> None:
    """Asked for just now: not budgeted, but a question still takes the one open slot."""
    for item in due:
        if item.unsolicited:
            continue
        if budget.quota_left - budget.reserved < 1:
            plan.hold([item], "quota")
            continue
        plan.send([item], budget.caps, ring=True, counts=False)
        budget.spend(counted=False, question=item.purpose in QUESTION_PURPOSES)


def _send_questions(plan: _Plan, due: Sequence[Pending], budget: _Budget) -> None:
    """Decisions the user must make: one open at a time, each its own message, the first due first."""
    for item in due:
        if not item.unsolicited or item.purpose not in QUESTION_PURPOSES:
            continue
        if budget.question_open:
            plan.hold([item], "question_open")
            continue
        if budget.quota_left < 1:
            plan.hold([item], "quota")
            continue
        held = budget.soft_hold(question=True)
        if held is not None and budget.caps.rings:
            plan.hold([item], *held)
            continue
        plan.send([item], budget.caps, ring=held is None, counts=held is None)
        budget.spend(counted=held is None, question=True)


def _send_the_rest(
    plan: _Plan, now: float, due: Sequence[Pending], budget: _Budget, coalesce_window_s: float
) -> None:
    """Results, rule hits, failures, reminders and notes: all the due ones go as one message."""
    rest = [
        item
        for item in due
        if item.unsolicited and item.purpose not in QUESTION_PURPOSES and not item.released
    ]
    if not rest:
        return
    if budget.quota_left < 1:
        plan.hold(rest, "quota")
        return
    held = budget.soft_hold(question=False)
    if held is not None and budget.caps.rings:
        plan.hold(rest, *held)
        return
    # On a channel that rings, gather for a moment: what becomes due within the window of the first goes
    # with it, as one message. Not for a retry, and never into quiet hours (the gathering would cost hours).
    if budget.caps.rings and all(item.attempts == 0 for item in rest):
        # From when the first was made, not its due time: gathering moves `due_at`, and counting from it
        # would gather again and again.
        gather_until = min(item.created_at for item in rest) + coalesce_window_s
        if now < gather_until and budget.quiet.contains(gather_until, budget.tz) == budget.quiet_now:
            plan.later(rest, gather_until)
            return
    plan.send(rest, budget.caps, ring=held is None, counts=held is None)
    budget.spend(counted=held is None, question=False)


class _LocalTimes:
    """Quiet-hour and midnight figures at `now`, computed once per (quiet hours, zone) in a `decide` call."""

    def __init__(self, now: float) -> None:
        self._now = now
        self._quiet: dict[tuple[QuietHours, str], bool] = {}
        self._quiet_end: dict[tuple[QuietHours, str], float] = {}
        self._next_allowed: dict[tuple[QuietHours, str], float] = {}

    def quiet(self, quiet: QuietHours, tz: str) -> bool:
        key = (quiet, tz)
        found = self._quiet.get(key)
        if found is None:
            found = self._quiet[key] = quiet.contains(self._now, tz)
        return found

    def quiet_end(self, quiet: QuietHours, tz: str) -> float:
        key = (quiet, tz)
        found = self._quiet_end.get(key)
        if found is None:
            found = self._quiet_end[key] = quiet.ends_after(self._now, tz)
        return found

    def next_allowed(self, quiet: QuietHours, tz: str) -> float:
        key = (quiet, tz)
        found = self._next_allowed.get(key)
        if found is None:
            found = self._next_allowed[key] = next_allowed(self._now, tz, quiet)
        return found


# -- time -------------------------------------------------------------------------------------------------


def _order(item: Pending) -> tuple[float, float, str]:
    return (item.due_at, item.created_at, item.id)


@lru_cache(maxsize=64)
def _zone(tz: str) -> ZoneInfo:
    return ZoneInfo(tz)


@lru_cache(maxsize=64)
def _clock_time(value: str) -> time:
    """Parse "HH:MM" (00:00-23:59) as a time of day."""
    hours, sep, minutes = value.partition(":")
    if not (sep and hours.isdigit() and minutes.isdigit() and len(minutes) == 2 and len(hours) <= 2):
        raise ValueError(f"expected a time of day as HH:MM, got {value!r}")
    h, m = int(hours), int(minutes)
    if h > 23 or m > 59:
        raise ValueError(f"expected a time of day as HH:MM, got {value!r}")
    return time(h, m)


def _instants(day: date, at: time, zone: ZoneInfo) -> list[float]:
    """The instants (epoch seconds, ascending) at which the local clock in `zone` reads `at` on `day`: one
    normally, two in a repeated hour, and in a skipped hour the one instant the clock jumps past it."""
    naive = datetime.combine(day, at)
    first = naive.replace(tzinfo=zone, fold=0).timestamp()
    second = naive.replace(tzinfo=zone, fold=1).timestamp()
    if first == second:
        return [first]
    lo, hi = min(first, second), max(first, second)
    if datetime.fromtimestamp(lo, zone).replace(tzinfo=None) == naive:
        return [lo, hi]  # repeated: both readings exist
    # Skipped: the clock reads earlier than `at` at `lo` and later at `hi`; find the jump (whole seconds).
    low, high = int(lo), int(hi)
    while high - low > 1:
        mid = (low + high) // 2
        if datetime.fromtimestamp(mid, zone).replace(tzinfo=None) >= naive:
            high = mid
        else:
            low = mid
    return [float(high)]

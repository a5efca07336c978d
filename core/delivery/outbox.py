"""The Outbox: pushed messages (task results, failures, questions, approvals) reach their conversation
exactly once, within the attention budget (docs/push-rules.md).

It is the one writer of `deliveries` (docs/domain.md#tables-and-writers). Ids are stable (`<run id>:result`),
so asking twice is a no-op. `policy.decide` says what goes now, what is held and until when; a held delivery
is looked at again at its `due_at`. For a desktop conversation the message is stored at once; quiet hours and
caps govern only whether it rings (an OS notification), and one pushed question at a time keeps answers
unambiguous. Quiet hours and the manual pause are the conversation's bot's settings; `flush()` after changing
them. Storing the message and marking the delivery sent are one transaction: a crash can neither lose a
delivery nor send it twice.

A conversation on a chat platform (WeChat) is reached through `ChannelSending`, and its chat replies go out
here too (purpose `reply`, outside the budget). Such a delivery is marked `sending` before the platform is
called and `sent` once it confirmed, with the platform's id kept on the message for quotes. A crash in
between leaves it `unsure`: it is never sent again by itself, and needs-you asks the person
(docs/channels.md#sending).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo

from sqlalchemy.orm import Session

from core import translations
from core.bus import EventBus
from core.changes import AttentionChanged, ConversationsChanged, MessagesChanged
from core.channels.channel import (
    CHANNEL_GONE,
    DESKTOP,
    ChannelCapabilities,
    ChannelSending,
    Outgoing,
    SendHeld,
    SendOutcomeUnknown,
    shape,
)
from core.channels.registry import SENT_BY_PLATFORM, capabilities_of
from core.channels.wechat.sender import reply_window
from core.clock import Clock
from core.delivery.policy import (
    COALESCE_WINDOW_S,
    QUESTION_PURPOSES,
    ConversationFacts,
    Decision,
    Pending,
    QuietHours,
    decide,
    local_midnight,
    retry_at,
)
from core.delivery.reserved_sends import reserved_sends
from core.delivery.window_nudge import nudge_due, nudge_id, nudge_text
from core.store import approvals as approval_rows
from core.store import bots as bot_rows
from core.store import channels as channel_rows
from core.store import conversations as conv_rows
from core.store import deliveries as delivery_rows
from core.store import messages as msg_rows
from core.store.approvals import ApprovalRecord
from core.store.bots import BotRecord
from core.store.database import Database
from core.store.deliveries import ASKED_FOR, STUCK_REASONS, DeliveryPurpose, DeliveryRecord, DeliveryStatus
from core.tasks.language import language_of
from core.translations import Language

log = logging.getLogger(__name__)

Delivered = Callable[[DeliveryRecord], Awaitable[None]]

# Held until the person wrote again, then sent before the reply to what they wrote
# (docs/channels.md#held-until-the-person-writes).
RELEASED_REASONS = ("window_closed", "quota")
RELEASED = "released"  # the held reason a delivery keeps once it went out because the person wrote
FAILURE_MARK = "\u26a0\ufe0f"  # ⚠️ before a failure where the platform shows markers
CLOSE_WAIT_S = 5.0  # how long a stop waits for sends already with a platform
OUTSIDE_BUDGET: frozenset[str] = ASKED_FOR | {"nudge"}
"""Sends outside the attention budget, never counted toward the daily cap: a chat reply, and the window
nudge (which has rules of its own)."""


IDEMPOTENT_FOR_S = 50 * 60.0  # of Feishu's hour in which a send's uuid is kept: some room for clocks


def local_zone() -> str:
    """The system's IANA zone name (quiet hours are local wall-clock times); UTC when it cannot be told.

    `datetime.now().astimezone()` gives only a fixed offset without a name, which would get DST wrong, so
    the name comes from $TZ, the /etc/localtime link, or /etc/timezone (Debian), in that order."""
    candidates = [os.environ.get("TZ", "").lstrip(":")]
    with contextlib.suppress(OSError):
        target = os.path.realpath("/etc/localtime")
        if "zoneinfo/" in target:
            candidates.append(target.split("zoneinfo/", 1)[1])
    with contextlib.suppress(OSError):
        candidates.append(Path("/etc/timezone").read_text(encoding="utf-8").strip())
    for name in candidates:
        if not name:
            continue
        try:
            ZoneInfo(name)
        except (ValueError, KeyError, OSError):
            continue
        return name
    return "UTC"


def conversation_facts(
    s: Session, conversation_ids: set[str], tz: str, *, now: float = 0.0
) -> dict[str, ConversationFacts]:
    """What `decide` needs to know about each conversation, its bot's quiet hours and pause included, and
    on a chat platform its reply window, the sends left in it and today's pushes."""
    facts = {}
    open_ids = {a.id for a in approval_rows.open_approvals(s)}
    bots: dict[str, BotRecord | None] = {}
    for cid in conversation_ids:
        last = msg_rows.last_user_message(s, cid)
        out = delivery_rows.out_to(s, cid)  # with a platform now: pushed, as far as the budget goes
        questions = [
            *delivery_rows.sent_questions(s, cid),
            *(d for d in out if d.purpose in QUESTION_PURPOSES),
        ]
        asked = any(d.id.split(":", 1)[0] in open_ids for d in questions)
        conversation = conv_rows.get_conversation(s, cid)
        bot = None
        if conversation is not None:
            if conversation.bot_id not in bots:
                bots[conversation.bot_id] = bot_rows.get_bot(s, conversation.bot_id)
            bot = bots[conversation.bot_id]
        caps = capabilities_of(conversation.channel if conversation else "desktop")
        facts[cid] = ConversationFacts(
            cid,
            caps,
            tz,
            last_user_message_at=last.created_at if last else None,
            open_pushed_question=asked,
            quiet=_quiet_hours_of(bot),
            paused=bot.paused if bot else False,
            **_platform_facts(s, cid, caps, tz, now, out),
        )
    return facts


def _platform_facts(
    s: Session,
    conversation_id: str,
    caps: ChannelCapabilities,
    tz: str,
    now: float,
    out: list[DeliveryRecord],
) -> dict[str, Any]:
    if caps.name not in SENT_BY_PLATFORM:
        return {}
    peer = channel_rows.peer_of_conversation(s, conversation_id)
    if peer is None:
        return {}  # its channel was removed: what is owed stays in the conversation, on the desktop
    channel = channel_rows.get_channel(s, peer.channel_id)
    window = reply_window(peer, now) if caps.reply_window else None
    pushed = {
        d.message_id
        for d in delivery_rows.sent_since(s, conversation_id, local_midnight(now, tz))
        if d.purpose not in OUTSIDE_BUDGET and d.held_reason != RELEASED
    }
    return {
        "window_open": window.open if window is not None else True,
        "quota_left": window.sends_left if window is not None else None,
        "reserved": reserved_sends(s, conversation_id),
        "channel_ready": channel is not None and channel.sendable,
        # A digest with a platform now counts once per delivery in it: over-counting only holds back.
        "sent_today_unsolicited": len(pushed) + sum(1 for d in out if d.purpose not in OUTSIDE_BUDGET),
    }


def _quiet_hours_of(bot: BotRecord | None) -> QuietHours | None:
    """The bot's quiet hours; None (the outbox default) without a bot or with a value no check let in."""
    if bot is None:
        return None
    try:
        return QuietHours(bot.quiet_start, bot.quiet_end)
    except ValueError:
        log.warning("bot %s has unreadable quiet hours %r-%r", bot.id, bot.quiet_start, bot.quiet_end)
        return None


class Outbox:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        *,
        quiet: QuietHours | None = None,
        tz: str | None = None,
        channels: ChannelSending | None = None,
        coalesce_window_s: float = COALESCE_WINDOW_S,
    ) -> None:
        self._channels = channels
        self._coalesce_window_s = coalesce_window_s
        self._db = db
        self._bus = bus
        self._clock = clock
        self._quiet = quiet or QuietHours()
        self._tz = tz or local_zone()
        self._delivered: list[Delivered] = []
        self._ring: list[Delivered] = []
        self._lock = asyncio.Lock()
        self._timer: asyncio.Task[None] | None = None
        # Sends to a chat platform run outside the flush lock (a slow platform must not hold up the desktop,
        # a run's end or another conversation), one conversation at a time in the order they were claimed.
        self._platform_order: dict[str, asyncio.Lock] = {}
        self._carrying: set[asyncio.Task[None]] = set()
        self._carrying_flushes: set[asyncio.Task[int]] = set()

    def on_delivered(self, listener: Delivered) -> None:
        """Called after a delivery reached its conversation (e.g. to tell the chat session about it)."""
        self._delivered.append(listener)

    def on_ring(self, listener: Delivered) -> None:
        """Called when a delivery may ring (outside quiet hours, under the cap): OS notifications."""
        self._ring.append(listener)

    async def stuck(self) -> list[DeliveryRecord]:
        """Deliveries only the person can unblock, for needs-you."""
        return await self._db.read(delivery_rows.stuck_deliveries)

    async def unsure(self) -> list[DeliveryRecord]:
        """Deliveries a crash cut off while a platform had them: they may or may not have arrived."""
        return await self._db.read(lambda s: delivery_rows.in_status(s, "unsure"))

    async def recover(self) -> int:
        """At start, before the first flush: what was `sending` when the process died becomes `unsure`.
        Returns how many."""

        now = self._clock.time()

        def mark(s: Session) -> int:
            unsure = 0
            for d in delivery_rows.in_status(s, "sending"):
                conversation = conv_rows.get_conversation(s, d.conversation_id)
                caps = capabilities_of(conversation.channel if conversation else DESKTOP.name)
                # Its key holds for an hour; due longer ago than that, it may have been claimed too long ago.
                if caps.idempotent_sends and now - d.due_at < IDEMPOTENT_FOR_S:
                    # Sent again under the same key: the platform keeps one (Feishu's uuid, for an hour). Its
                    # attempt is counted, so it is never merged into a digest with a key of its own.
                    delivery_rows.mark_failed_attempt(s, d.id, error="cut off by a restart")
                    delivery_rows.reschedule(
                        s, d.id, status="pending", due_at=d.due_at, held_reason=d.held_reason
                    )
                    continue
                delivery_rows.set_delivery_status(s, d.id, "unsure")
                unsure += 1
            return unsure

        found = await self._db.write(mark)
        if found:
            log.warning("%d deliveries were with a chat platform when Errand stopped: unsure now", found)
            self._bus.publish(AttentionChanged())
        return found

    async def settle_unsure(self, delivery_id: str, *, send_again: bool) -> None:
        """The person's word on an unsure delivery: send it again, or it arrived (sent as it is)."""
        now = self._clock.time()

        def settle(s: Session) -> bool:
            found = delivery_rows.get_delivery(s, delivery_id)
            if found is None or found.status != "unsure":
                return False
            if send_again:
                # A fresh round of retries that goes at once, ungathered (one attempt is behind it).
                delivery_rows.set_attempts(s, delivery_id, 1)
                delivery_rows.reschedule(s, delivery_id, status="pending", due_at=now)
                return True
            # It arrived: the conversation shows it as it would have.
            message_id = pushed_message(s, [found], found.text, now)
            delivery_rows.mark_sent(s, delivery_id, now=now, message_id=message_id)
            return True

        if await self._db.write(settle):
            self._bus.publish(AttentionChanged())
            if send_again:
                await self.flush()

    async def close(self) -> None:
        for flushing in list(self._carrying_flushes):
            flushing.cancel()
        await asyncio.gather(*self._carrying_flushes, return_exceptions=True)
        if self._carrying:
            # Sends already with a platform finish (or fail) first; one cut off here is `unsure` next start.
            _, cut_off = await asyncio.wait(self._carrying, timeout=CLOSE_WAIT_S)
            for task in cut_off:
                task.cancel()
            await asyncio.gather(*cut_off, return_exceptions=True)
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer

    async def push(
        self,
        *,
        delivery_id: str,
        bot_id: str,
        conversation_id: str,
        purpose: DeliveryPurpose,
        text: str,
        task_id: str = "",
        rule_id: str = "",
        run_id: str = "",
        due_at: float | None = None,
    ) -> bool:
        """Queue a message and let the policy send it (at `due_at`, default now). False when this id was
        already queued."""

        def insert(s: Session) -> bool:
            return self.stage(
                s,
                delivery_id=delivery_id,
                bot_id=bot_id,
                conversation_id=conversation_id,
                purpose=purpose,
                text=text,
                task_id=task_id,
                rule_id=rule_id,
                run_id=run_id,
                due_at=due_at,
            )

        created = await self._db.write(insert)
        if created:
            await self.flush()
        return created

    def stage(
        self,
        s: Session,
        *,
        delivery_id: str,
        bot_id: str,
        conversation_id: str,
        purpose: DeliveryPurpose,
        text: str,
        task_id: str = "",
        rule_id: str = "",
        run_id: str = "",
        message_id: int = 0,
        due_at: float | None = None,
    ) -> bool:
        """Queue a message inside the caller's transaction, so it commits with the change that owes it (a
        run's end and its result): a crash can no longer fall between the two. `flush()` after the commit.
        False when this id was already queued."""
        _, created = delivery_rows.insert_delivery(
            s,
            id=delivery_id,
            bot_id=bot_id,
            conversation_id=conversation_id,
            purpose=purpose,
            text=text,
            now=self._clock.time(),
            task_id=task_id,
            rule_id=rule_id,
            run_id=run_id,
            message_id=message_id,
            due_at=due_at,
        )
        return created

    async def queue_nudge(self, conversation_id: str, bot_id: str, window_start: float) -> None:
        """The person opened a new reply window on a chat platform: queue its one nudge
        (core.delivery.window_nudge), timed by the bot's quiet hours."""

        def stage(s: Session) -> bool:
            quiet = _quiet_hours_of(bot_rows.get_bot(s, bot_id)) or self._quiet
            return self.stage(
                s,
                delivery_id=nudge_id(conversation_id, window_start),
                bot_id=bot_id,
                conversation_id=conversation_id,
                purpose="nudge",
                text="",
                due_at=nudge_due(window_start, quiet, self._tz),
            )

        if await self._db.write(stage):
            await self.flush()  # its timer

    async def flush(self) -> int:
        """Decide on every due delivery (at start this finishes what a crash left). Returns how many sent."""
        async with self._lock:
            now = self._clock.time()
            try:
                return await self._decide_due(now)
            finally:
                # Whatever failed above, the one timer for held and retried deliveries keeps running. From
                # the `now` the due ones were read at: a later one would skip what became due meanwhile.
                await self._schedule_next(now)

    async def _decide_due(self, now: float) -> int:
        due = await self._db.read(lambda s: delivery_rows.due_deliveries(s, now=now))
        due = await self._word_nudges(due, now)
        sent = 0
        if due:
            facts = await self._db.read(lambda s: self._facts(s, {d.conversation_id for d in due}))
            pending = [
                Pending(
                    d.id,
                    d.conversation_id,
                    d.purpose,
                    d.text,
                    d.due_at,
                    d.created_at,
                    d.attempts,
                    unsolicited=d.purpose not in OUTSIDE_BUDGET,
                    released=d.held_reason in RELEASED_REASONS,
                )
                for d in due
            ]
            by_id = {d.id: d for d in due}
            decisions = decide(now, pending, facts, self._quiet, coalesce_window_s=self._coalesce_window_s)
            for decision in decisions:
                sent += await self._apply(decision, by_id)
        return sent

    async def _word_nudges(self, due: list[DeliveryRecord], now: float) -> list[DeliveryRecord]:
        """Each due window nudge gets its words now, or is dropped when it must not go
        (core.delivery.window_nudge)."""
        nudges = [d for d in due if d.purpose == "nudge"]
        if not nudges:
            return due

        def word(s: Session) -> dict[str, str]:
            worded = {}
            for d in nudges:
                lang = language_of(" ".join(msg_rows.recent_user_texts(s, d.conversation_id, 5)))
                worded[d.id] = nudge_text(s, d.id, now, self._tz, self._quiet, lang)
                if not worded[d.id]:
                    delivery_rows.set_delivery_status(s, d.id, "dropped", held_reason="not_needed")
            return worded

        worded = await self._db.write(word)
        kept = []
        for d in due:
            if d.id not in worded:
                kept.append(d)
            elif worded[d.id]:
                kept.append(replace(d, text=worded[d.id]))
        return kept

    def _facts(self, s: Session, conversation_ids: set[str]) -> dict[str, ConversationFacts]:
        return conversation_facts(s, conversation_ids, self._tz, now=self._clock.time())

    async def _apply(self, decision: Decision, by_id: dict[str, DeliveryRecord]) -> int:
        if decision.kind in ("send", "digest"):
            return await self._send(decision, [by_id[i] for i in decision.ids])
        for delivery_id in decision.ids:

            def hold(s: Session, delivery_id: str = delivery_id) -> None:
                status: DeliveryStatus = "held" if decision.kind == "hold" else "pending"
                delivery_rows.reschedule(
                    s,
                    delivery_id,
                    status=status,
                    due_at=decision.not_before,
                    held_reason=decision.held_reason,
                )

            await self._db.write(hold)
        if decision.kind == "hold" and decision.held_reason in STUCK_REASONS:
            self._bus.publish(AttentionChanged())  # a needs-you row: 没送达
        return 0

    async def _send(self, decision: Decision, deliveries: list[DeliveryRecord]) -> int:
        first = deliveries[0]
        conversation = await self._db.read(lambda s: conv_rows.get_conversation(s, first.conversation_id))
        caps = capabilities_of(conversation.channel if conversation is not None else DESKTOP.name)
        if caps.name in SENT_BY_PLATFORM and self._channels is not None:
            if caps.idempotent_sends and len(deliveries) > 1 and any(d.attempts for d in deliveries):
                # One tried before may be on the platform already under its own key: merged into a digest
                # it would go again under the digest's. Each goes alone, under the key it had.
                sent = 0
                for d in deliveries:
                    alone = replace(decision, kind="send", ids=(d.id,), text=d.text)
                    sent += await self._send_on_platform(alone, [d], caps, self._channels)
                return sent
            return await self._send_on_platform(decision, deliveries, caps, self._channels)
        now = self._clock.time()
        text = decision.text or first.text
        if first.purpose in ("result", "failure") and len(deliveries) == 1:
            # docs/push-rules.md#message-shape: one line (a second only for a blocker), at most 300
            # characters. A question keeps its option lines.
            text = shape(text, DESKTOP)

        def deliver(s: Session) -> bool:
            live = [
                d for d in deliveries if (c := delivery_rows.get_delivery(s, d.id)) and c.status != "sent"
            ]
            if not live:
                return False  # sent meanwhile: never twice
            if conv_rows.get_conversation(s, first.conversation_id) is None:
                for d in live:
                    delivery_rows.set_delivery_status(s, d.id, "dropped", held_reason="conversation_gone")
                return False
            message_id = pushed_message(s, live, text, now)
            for d in live:
                delivery_rows.mark_sent(s, d.id, now=now, message_id=message_id)
            conv_rows.touch_conversation(s, first.conversation_id, now)
            return True

        try:
            if not await self._db.write(deliver):
                return 0
        except Exception as exc:
            log.exception("delivery %s failed", first.id)
            await self._failed(deliveries, str(exc), now)
            return 0
        await self._announce_sent(deliveries, ring=decision.ring)
        return len(deliveries)

    async def _failed(self, deliveries: list[DeliveryRecord], error: str, now: float) -> None:
        """A failed attempt: retried later (5, 10, 20 s), then held for the person."""
        for d in deliveries:
            again = retry_at(d.attempts + 1, now)

            def failed(s: Session, d: DeliveryRecord = d, again: float | None = again) -> None:
                if delivery_rows.get_delivery(s, d.id) is None:
                    return  # deleted meanwhile (its task was deleted): nothing owed any more
                delivery_rows.mark_failed_attempt(s, d.id, error=error)
                if again is not None:
                    # What waited for the person still goes first, as 「你不在时:…」, when it is retried.
                    kept = d.held_reason if d.held_reason in RELEASED_REASONS else ""
                    delivery_rows.reschedule(s, d.id, status="pending", due_at=again, held_reason=kept)
                else:
                    delivery_rows.set_delivery_status(s, d.id, "held", held_reason="channel_down")

            await self._db.write(failed)
        if any(retry_at(d.attempts + 1, now) is None for d in deliveries):
            self._bus.publish(AttentionChanged())  # retries used up: 没送达 is on the needs-you list

    async def _announce_sent(self, deliveries: list[DeliveryRecord], *, ring: bool) -> None:
        first = deliveries[0]
        self._bus.publish(MessagesChanged(first.conversation_id))
        self._bus.publish(ConversationsChanged())
        if any(d.status == "held" and d.held_reason in STUCK_REASONS for d in deliveries):
            self._bus.publish(AttentionChanged())  # its 没送达 row goes
        for delivery in deliveries:
            for listener in [*self._delivered, *(self._ring if ring else [])]:
                try:
                    await listener(delivery)
                except Exception:
                    log.exception("delivery listener failed for %s", delivery.id)

    async def _send_on_platform(
        self,
        decision: Decision,
        deliveries: list[DeliveryRecord],
        caps: ChannelCapabilities,
        channels: ChannelSending,
    ) -> int:
        """Send on a chat platform: `sending` is stored before the platform is called and `sent` after it
        confirmed, so a crash between the two can be told apart from a send that never started."""
        first = deliveries[0]
        conversation_id = first.conversation_id
        asked: list[ApprovalRecord] = []
        langs: list[Language] = []

        def claim(s: Session) -> list[DeliveryRecord]:
            live = [
                c
                for d in deliveries
                if (c := delivery_rows.get_delivery(s, d.id)) is not None and c.status in ("pending", "held")
            ]
            if live and conv_rows.get_conversation(s, conversation_id) is None:
                for d in live:
                    delivery_rows.set_delivery_status(s, d.id, "dropped", held_reason="conversation_gone")
                return []
            for d in live:
                delivery_rows.set_delivery_status(s, d.id, "sending")
            # The conversation's language as well as the message's: an English result in a Chinese chat
            # still gets the Chinese hints.
            recent = " ".join(msg_rows.recent_user_texts(s, conversation_id, 5))
            langs.append(language_of(f"{recent} {first.text}"))
            if len(live) == 1 and live[0].purpose in ("question", "approval"):
                found = approval_rows.get_approval(s, live[0].id.split(":", 1)[0])
                asked.extend([found] if found is not None else [])
            return live

        live = await self._db.write(claim)
        if not live:
            return 0
        plain = decision.text or first.text
        lang = langs[0] if langs else None
        text = platform_text(plain, deliveries, caps, asked[0] if asked else None, lang)
        sole = live[0] if len(live) == 1 else None
        outgoing = Outgoing(
            key="+".join(sorted(d.id for d in live)),
            purpose=sole.purpose if sole is not None else "digest",
            plain=plain,
            task_id=sole.task_id if sole is not None else "",
            rule_id=sole_rule(live),
            question_id=asked[0].id if asked else "",
            message_id=sole.message_id if sole is not None else 0,
            lines=tuple(d.text.splitlines()[0] if d.text else "" for d in live) if sole is None else (),
            away=any(d.held_reason in RELEASED_REASONS for d in live),
            lang=lang or language_of(plain),
        )
        order = self._platform_order.setdefault(conversation_id, asyncio.Lock())
        carrying = asyncio.get_running_loop().create_task(self._carry(live, text, outgoing, channels, order))
        self._carrying.add(carrying)
        carrying.add_done_callback(self._carrying.discard)
        return len(live)

    async def _carry(
        self,
        live: list[DeliveryRecord],
        text: str,
        outgoing: Outgoing,
        channels: ChannelSending,
        order: asyncio.Lock,
    ) -> None:
        """The platform call and what it answered, for deliveries claimed as `sending`."""
        handed = False
        try:
            async with order:
                handed = True
                if await self._carry_once(live, text, outgoing, channels) == "retry":
                    self._spawn_flush()  # its retry is due later: a flush arms the one timer for it
        except asyncio.CancelledError:
            if not handed:  # stopped while waiting its turn: it never left, so it is simply owed again
                await asyncio.shield(self._db.write(lambda s: self._unclaim(s, live)))
            raise
        except Exception:
            log.exception("delivery %s: sending on its platform failed unexpectedly", live[0].id)

    @staticmethod
    def _unclaim(s: Session, live: list[DeliveryRecord]) -> None:
        for d in live:
            if (found := delivery_rows.get_delivery(s, d.id)) is not None and found.status == "sending":
                delivery_rows.reschedule(
                    s, d.id, status="pending", due_at=d.due_at, held_reason=d.held_reason
                )

    def _spawn_flush(self) -> None:
        flushing = asyncio.get_running_loop().create_task(self.flush())
        self._carrying_flushes.add(flushing)
        flushing.add_done_callback(self._carrying_flushes.discard)

    async def _carry_once(
        self, live: list[DeliveryRecord], text: str, outgoing: Outgoing, channels: ChannelSending
    ) -> Literal["sent", "held", "unsure", "retry"]:
        """What became of it."""
        first = live[0]
        conversation_id = first.conversation_id
        try:
            ref = await channels.send(conversation_id, text, outgoing)
        except SendHeld as held:
            if held.reason == CHANNEL_GONE:  # removed: the person reads it on the desktop instead
                log.info("delivery %s: its channel is gone; kept in the conversation", first.id)
                await self._db.write(lambda s: self._confirm(s, live, text, ref=""))
                await self._announce_sent(live, ring=True)
                return "sent"
            log.info("delivery %s held by its channel: %s", first.id, held)
            now, reason = self._clock.time(), held.reason

            def hold(s: Session) -> None:
                for d in _still_there(s, live):
                    delivery_rows.reschedule(s, d.id, status="held", due_at=now, held_reason=reason)

            await self._db.write(hold)
            self._bus.publish(AttentionChanged())  # a needs-you row: 没送达
            return "held"
        except SendOutcomeUnknown as exc:
            log.warning("delivery %s: the platform may or may not have it: %s", first.id, exc)
            why = str(exc)

            def unsure(s: Session) -> None:
                for d in _still_there(s, live):
                    delivery_rows.mark_failed_attempt(s, d.id, error=why)
                    delivery_rows.set_delivery_status(s, d.id, "unsure", held_reason=d.held_reason)

            await self._db.write(unsure)
            self._bus.publish(AttentionChanged())  # needs-you asks: 重试 or 知道了
            return "unsure"
        except Exception as exc:
            log.exception("delivery %s failed on its channel", first.id)
            await self._failed(live, str(exc), self._clock.time())
            return "retry"
        await self._db.write(lambda s: self._confirm(s, live, text, ref=ref))
        # The platform rang the person's phone; no OS notification on top.
        await self._announce_sent(live, ring=False)
        return "sent"

    def _confirm(self, s: Session, live: list[DeliveryRecord], text: str, *, ref: str) -> None:
        """Sent: the message in its conversation (a chat reply's is there already), with the platform's
        id of it, and the deliveries marked. One deleted meanwhile (its task was deleted) went all the
        same."""
        now = self._clock.time()
        conversation_id = live[0].conversation_id
        message_id = pushed_message(s, live, text, now)
        if ref:
            msg_rows.set_channel_ref(s, message_id, ref)
        for d in _still_there(s, live):
            delivery_rows.mark_sent(s, d.id, now=now, message_id=message_id)
            if d.held_reason in RELEASED_REASONS:  # went when the person wrote: not one of the day's pushes
                delivery_rows.set_delivery_status(s, d.id, "sent", held_reason=RELEASED)
        conv_rows.touch_conversation(s, conversation_id, now)

    async def settled(self) -> None:
        """Until every send now with a chat platform has its answer (tests, benchmarks)."""
        while self._carrying:
            await asyncio.gather(*list(self._carrying), return_exceptions=True)

    async def _schedule_next(self, now: float) -> None:
        """One timer for the earliest held or retried delivery."""
        upcoming = await self._db.read(lambda s: delivery_rows.next_due(s, after=now))
        if self._timer is not None and self._timer is not asyncio.current_task():
            self._timer.cancel()
            self._timer = None
        if upcoming is not None:
            self._timer = asyncio.get_running_loop().create_task(self._wake_at(upcoming - now))

    async def _wake_at(self, delay: float) -> None:
        await self._clock.sleep(max(0.0, delay))
        self._timer = None
        await self.flush()


def platform_text(
    text: str,
    deliveries: list[DeliveryRecord],
    caps: ChannelCapabilities,
    asked: ApprovalRecord | None = None,
    lang: Language | None = None,
) -> str:
    """A message as a chat platform gets it (docs/channels.md#message-shapes): a question with its numbered
    options and how to answer, an approval with its `y <code> / n <code>`, a result that invites a quote
    where quotes reach the task; and what waited for the person to write again says so first."""
    lang = lang or language_of(text)
    sole = deliveries[0] if len(deliveries) == 1 else None
    if not caps.text_hints:  # its cards carry buttons; the words stay as they are
        sole = None if sole is None or sole.purpose != "failure" else sole
    if sole is not None and asked is not None and sole.purpose == "question":
        lines = [f"\u2753{sole.text.splitlines()[0]}" if sole.text else "\u2753"]
        lines += [f"{n}. {option}" for n, option in enumerate(asked.options, 1)]
        if asked.default is not None:
            lines.append(translations.text(lang, "push.default", default=asked.default))
        hint = "channel_push.answer_options" if asked.options else "channel_push.answer_words"
        lines.append(translations.text(lang, hint))
        text = "\n".join(lines)
    elif sole is not None and asked is not None and sole.purpose == "approval" and asked.code:
        text = f"{sole.text} {translations.text(lang, 'channel_push.approval', code=asked.code)}"
    elif sole is not None and sole.purpose == "failure" and not caps.strips_markers:
        text = text if text.startswith(FAILURE_MARK) else f"{FAILURE_MARK}{text}"
    elif sole is not None and sole.purpose == "result" and caps.supports_quote:
        text = f"{text}\n{translations.text(lang, 'channel_push.quote_result')}"
    if any(d.held_reason in RELEASED_REASONS for d in deliveries):
        text = translations.text(lang, "channel_push.away") + text
    return text


def _still_there(s: Session, deliveries: list[DeliveryRecord]) -> list[DeliveryRecord]:
    """Those not deleted meanwhile (a task deleted while its message was with the platform)."""
    return [d for d in deliveries if delivery_rows.get_delivery(s, d.id) is not None]


def pushed_message(s: Session, deliveries: list[DeliveryRecord], text: str, now: float) -> int:
    """The message these deliveries are in their conversation: a chat reply's, stored already, or a new
    one (an error for a lone failure, carrying a lone delivery's task, and the rule all of them came from)."""
    sole = deliveries[0] if len(deliveries) == 1 else None
    if sole is not None and sole.message_id:
        return sole.message_id
    return msg_rows.insert_message(
        s,
        conversation_id=deliveries[0].conversation_id,
        role="error" if sole is not None and sole.purpose == "failure" else "assistant",
        text=text,
        state="done",
        now=now,
        task_id=sole.task_id if sole is not None else "",
        rule_id=sole_rule(deliveries),
    ).id


def sole_rule(deliveries: list[DeliveryRecord]) -> str:
    """The rule these deliveries came from when they all came from that one rule (a digest of one rule's
    message and its pause notice still names it); '' when they came from several sources or none."""
    rules = {d.rule_id for d in deliveries}
    return next(iter(rules)) if len(rules) == 1 else ""

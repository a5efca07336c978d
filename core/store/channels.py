"""The `channels`, `inbound_messages` and `channel_peers` tables: a bot's chat-platform connections, the
messages that came in on them, and what each channel knows of a peer (docs/channels.md).

A batch from a platform is stored with the cursor that follows it in one transaction (`store_batch`), so
a crash leaves either both or neither: the platform then sends the batch again and the dedupe keys drop
what was already stored. Nothing is lost, nothing is taken twice.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from core.store.errors import NotFoundError
from core.store.models import ChannelPeerRow, ChannelRow, InboundRow

USED_UP = 1_000_000  # sends_since_inbound once the platform said no more until the peer writes
# inbound_messages.message_id of a message set aside after failing to reach chat again and again, and of
# one the person then put away.
SET_ASIDE = -1
PUT_AWAY = -2
# ... of a group's message that waits for the owner to admit the group (DingTalk): handed on once allowed,
# put away if not.
WAITING = -3
ADMISSIONS = ("asked", "allowed", "refused")


@dataclass(frozen=True, slots=True)
class ChannelRecord:
    id: str
    bot_id: str
    kind: str
    account: str
    owner: str
    base_url: str
    status: str
    status_reason: str
    cursor: str
    created_at: float
    updated_at: float
    allowed: tuple[str, ...] = ()  # peers besides the owner who may use the bot here
    display_name: str = ""  # the bot's name on the platform (an app the person registered)
    bot_ref: str = ""  # the platform's id of that bot (Feishu: its open_id)

    @property
    def sendable(self) -> bool:
        """Whether sends may be tried: logged in, and connected, or reconnecting after a start (its first
        long poll may not return for half a minute; a send must not wait for that). A Feishu app sends
        through its REST calls: a send goes, or says itself why not."""
        if self.kind in ("feishu", "telegram", "dingtalk"):  # sent over HTTP calls of their own
            return bool(self.account)
        return bool(self.account) and self.status in ("connected", "connecting")

    def admits(self, peer: str) -> bool:
        """Whether `peer` may talk to the bot here: the owner, someone the owner allowed, or anyone on a
        channel with no owner yet."""
        return not self.owner or peer == self.owner or peer in self.allowed


@dataclass(frozen=True, slots=True)
class Arrival:
    """One message of a batch, as the adapter read it."""

    key: str  # its dedupe key
    peer: str
    platform_id: str
    body: dict[str, Any]
    reply_token: str  # '' when the message carried none: the peer's last one stays


@dataclass(frozen=True, slots=True)
class InboundRecord:
    id: int
    channel_id: str
    key: str
    peer: str
    platform_id: str
    body: dict[str, Any]
    received_at: float
    handled_at: float
    message_id: int
    attempts: int = 0  # hand-overs that failed so far


@dataclass(frozen=True, slots=True)
class PeerRecord:
    channel_id: str
    peer: str
    reply_token: str
    last_inbound_at: float
    conversation_id: str
    sends_since_inbound: int = 0
    refused_at: float = 0.0
    title: str = ""  # a group's name
    admission: str = ""  # a group's: '' (not asked yet) | asked | allowed | refused


def _channel(row: ChannelRow) -> ChannelRecord:
    return ChannelRecord(
        id=row.id,
        bot_id=row.bot_id,
        kind=row.kind,
        account=row.account,
        owner=row.owner,
        base_url=row.base_url,
        status=row.status,
        status_reason=row.status_reason,
        cursor=row.cursor,
        created_at=row.created_at,
        updated_at=row.updated_at,
        allowed=tuple(_peers(row.allowed)),
        display_name=row.display_name,
        bot_ref=row.bot_ref,
    )


def _peers(encoded: str) -> list[str]:
    try:
        decoded = json.loads(encoded or "[]")
    except ValueError:
        return []
    return [p for p in decoded if isinstance(p, str)] if isinstance(decoded, list) else []


def _inbound(row: InboundRow) -> InboundRecord:
    return InboundRecord(
        id=row.id,
        channel_id=row.channel_id,
        key=row.key,
        peer=row.peer,
        platform_id=row.platform_id,
        body=json.loads(row.body),
        received_at=row.received_at,
        handled_at=row.handled_at,
        message_id=row.message_id,
        attempts=row.attempts,
    )


def insert_channel(s: Session, *, id: str, bot_id: str, kind: str, now: float) -> ChannelRecord:
    row = ChannelRow(id=id, bot_id=bot_id, kind=kind, created_at=now, updated_at=now)
    s.add(row)
    s.flush()
    return _channel(row)


def get_channel(s: Session, channel_id: str) -> ChannelRecord | None:
    row = s.get(ChannelRow, channel_id)
    return _channel(row) if row is not None else None


def channels_of_bot(s: Session, bot_id: str) -> list[ChannelRecord]:
    stmt = (
        select(ChannelRow).where(ChannelRow.bot_id == bot_id).order_by(ChannelRow.created_at, ChannelRow.id)
    )
    return [_channel(row) for row in s.scalars(stmt)]


def all_channels(s: Session) -> list[ChannelRecord]:
    return [_channel(row) for row in s.scalars(select(ChannelRow).order_by(ChannelRow.created_at))]


def _row(s: Session, channel_id: str) -> ChannelRow:
    row = s.get(ChannelRow, channel_id)
    if row is None:
        raise NotFoundError("channel", channel_id)
    return row


def set_status(s: Session, channel_id: str, status: str, *, reason: str = "", now: float) -> None:
    row = _row(s, channel_id)
    row.status, row.status_reason, row.updated_at = status, reason, now


def set_app(
    s: Session, channel_id: str, *, app_id: str, domain: str, name: str, bot_ref: str, now: float
) -> None:
    """An app the person registered (Feishu): its id, platform, and the bot it is."""
    row = _row(s, channel_id)
    row.account, row.base_url, row.display_name, row.bot_ref = app_id, domain, name, bot_ref
    row.updated_at = now


def set_owner(s: Session, channel_id: str, owner: str, *, now: float) -> None:
    row = _row(s, channel_id)
    row.owner, row.updated_at = owner, now


def set_account(s: Session, channel_id: str, *, account: str, owner: str, base_url: str, now: float) -> None:
    """After a login: whose bot this is, who connected it, and the API base URL the platform gave."""
    row = _row(s, channel_id)
    row.account, row.owner, row.base_url, row.updated_at = account, owner, base_url, now
    row.cursor = ""  # a new login reads the new account's stream from its start


def delete_channel(s: Session, channel_id: str) -> None:
    """The channel with its stored messages and peers."""
    s.execute(delete(InboundRow).where(InboundRow.channel_id == channel_id))
    s.execute(delete(ChannelPeerRow).where(ChannelPeerRow.channel_id == channel_id))
    s.delete(_row(s, channel_id))


def store_batch(
    s: Session, channel_id: str, arrivals: Sequence[Arrival], *, cursor: str, now: float
) -> list[InboundRecord]:
    """Store what is new in a batch, each peer's latest reply token and time, and the cursor after the
    batch ('' keeps the old one), in the caller's one transaction. Returns the newly stored messages in
    order; a key stored before (a redelivery, also across restarts, or twice in one batch) is skipped."""
    channel = _row(s, channel_id)
    keys = {a.key for a in arrivals}
    known = set(
        s.scalars(select(InboundRow.key).where(InboundRow.channel_id == channel_id, InboundRow.key.in_(keys)))
    )
    stored: list[InboundRow] = []
    for arrival in arrivals:
        if arrival.key in known:
            continue
        known.add(arrival.key)
        row = InboundRow(
            channel_id=channel_id,
            key=arrival.key,
            peer=arrival.peer,
            platform_id=arrival.platform_id,
            body=json.dumps(arrival.body, ensure_ascii=False),
            received_at=now,
        )
        s.add(row)
        stored.append(row)
        peer = s.get(ChannelPeerRow, (channel_id, arrival.peer))
        if peer is None:
            peer = ChannelPeerRow(channel_id=channel_id, peer=arrival.peer)
            s.add(peer)
        peer.last_inbound_at = now
        peer.sends_since_inbound = 0  # the peer wrote: the platform lets us answer again
        if arrival.reply_token:
            peer.reply_token = arrival.reply_token
        title = arrival.body.get("chat_title")
        if isinstance(title, str) and title.strip():
            peer.title = title.strip()[:200]
    if cursor:
        channel.cursor = cursor
    channel.updated_at = now
    s.flush()
    return [_inbound(row) for row in stored]


def unhandled(s: Session, channel_id: str) -> list[InboundRecord]:
    """Stored messages the chat pipeline does not have yet, oldest first (after a restart: all of these)."""
    stmt = (
        select(InboundRow)
        .where(InboundRow.channel_id == channel_id, InboundRow.handled_at == 0)
        .order_by(InboundRow.id)
    )
    return [_inbound(row) for row in s.scalars(stmt)]


@dataclass(frozen=True, slots=True)
class RecentChat:
    peer: str
    last_body: dict[str, Any]  # what the latest stored message of it said (its platform time, chat type)


def recent_chats(s: Session, channel_id: str, *, since: float) -> list[RecentChat]:
    """The peers (chats) that wrote on the channel since `since`, each with its latest stored message."""
    latest = (
        select(InboundRow.peer, func.max(InboundRow.id).label("last"))
        .where(InboundRow.channel_id == channel_id, InboundRow.received_at >= since)
        .group_by(InboundRow.peer)
        .subquery()
    )
    rows = s.execute(select(InboundRow).join(latest, InboundRow.id == latest.c.last)).scalars()
    return [RecentChat(row.peer, json.loads(row.body)) for row in rows]


def mark_handled(s: Session, inbound_id: int, *, message_id: int, now: float) -> None:
    """The message reached chat as `message_id` (or stays out: NOT_IN_CHAT, WAITING). A group's message
    that was to wait, whose group the owner decided on meanwhile, goes the owner's way instead: owed again
    (allowed) or put away (refused); deciding and marking are each one transaction, so neither order loses
    it."""
    row = s.get(InboundRow, inbound_id)
    if row is None:
        raise NotFoundError("inbound message", str(inbound_id))
    if message_id == WAITING:
        peer = s.get(ChannelPeerRow, (row.channel_id, row.peer))
        admission = peer.admission if peer is not None else ""
        if admission == "allowed":
            return
        if admission == "refused":
            message_id = PUT_AWAY
    row.handled_at, row.message_id = now, message_id


def set_allowed(s: Session, channel_id: str, peers: Sequence[str], *, now: float) -> None:
    row = _row(s, channel_id)
    row.allowed, row.updated_at = json.dumps(list(peers), ensure_ascii=False), now


def count_failed_hand_over(s: Session, inbound_id: int) -> int:
    """One more failed hand-over of a stored message; how many there have been."""
    row = s.get(InboundRow, inbound_id)
    if row is None:
        raise NotFoundError("inbound message", str(inbound_id))
    row.attempts += 1
    return row.attempts


def set_aside(s: Session, inbound_id: int, *, now: float) -> None:
    """Stop trying to hand a message on (it failed too often): handled, as set aside, for needs-you."""
    row = s.get(InboundRow, inbound_id)
    if row is None:
        raise NotFoundError("inbound message", str(inbound_id))
    row.handled_at, row.message_id = now, SET_ASIDE


def set_aside_messages(s: Session) -> list[InboundRecord]:
    stmt = select(InboundRow).where(InboundRow.message_id == SET_ASIDE).order_by(InboundRow.id)
    return [_inbound(row) for row in s.scalars(stmt)]


def settle_set_aside(s: Session, inbound_id: int, *, again: bool) -> bool:
    """The person's word on a set-aside message: try it again from scratch, or put it away. False when it
    is not set aside (any more)."""
    row = s.get(InboundRow, inbound_id)
    if row is None or row.message_id != SET_ASIDE:
        return False
    if again:
        row.handled_at, row.message_id, row.attempts = 0.0, 0, 0
    else:
        row.message_id = PUT_AWAY
    return True


def peer_of_conversation(s: Session, conversation_id: str) -> PeerRecord | None:
    """The channel peer a conversation chats with; None for a desktop conversation."""
    stmt = select(ChannelPeerRow).where(ChannelPeerRow.conversation_id == conversation_id)
    row = s.scalars(stmt.limit(1)).first()
    return None if row is None else _peer(row)


def get_peer(s: Session, channel_id: str, peer: str) -> PeerRecord | None:
    row = s.get(ChannelPeerRow, (channel_id, peer))
    return None if row is None else _peer(row)


def _peer(row: ChannelPeerRow) -> PeerRecord:
    return PeerRecord(
        row.channel_id,
        row.peer,
        row.reply_token,
        row.last_inbound_at,
        row.conversation_id,
        row.sends_since_inbound,
        row.refused_at,
        row.title,
        row.admission,
    )


def count_send(s: Session, channel_id: str, peer: str, *, used_up: bool = False) -> None:
    """One more send to `peer` since it last wrote; `used_up` when the platform refused it, so nothing more
    is tried until the peer writes again."""
    row = s.get(ChannelPeerRow, (channel_id, peer))
    if row is None:
        raise NotFoundError("channel peer", f"{channel_id}/{peer}")
    row.sends_since_inbound = USED_UP if used_up else row.sends_since_inbound + 1


def mark_refused(s: Session, channel_id: str, peer: str, *, now: float) -> None:
    """`peer` was told the bot does not serve them. In a Feishu group the person is not the chat that
    wrote, so they may have no row yet."""
    row = s.get(ChannelPeerRow, (channel_id, peer))
    if row is None:
        _row(s, channel_id)
        row = ChannelPeerRow(channel_id=channel_id, peer=peer)
        s.add(row)
    row.refused_at = now


def strangers(s: Session, channel_id: str) -> list[PeerRecord]:
    """Peers who wrote but were told the bot does not serve them, the latest first (the owner may allow
    them)."""
    stmt = select(ChannelPeerRow).where(
        ChannelPeerRow.channel_id == channel_id, ChannelPeerRow.refused_at > 0
    )
    return [_peer(row) for row in s.scalars(stmt.order_by(ChannelPeerRow.refused_at.desc()))]


def set_peer_conversation(s: Session, channel_id: str, peer: str, conversation_id: str) -> None:
    row = s.get(ChannelPeerRow, (channel_id, peer))
    if row is None:
        row = ChannelPeerRow(channel_id=channel_id, peer=peer)
        s.add(row)
    row.conversation_id = conversation_id


def ask_admission(s: Session, channel_id: str, peer: str) -> bool:
    """A group's message arrived before the owner decided on the group: it is asked about (its messages
    wait, marked WAITING); whether this is the first time (the caller then tells needs-you)."""
    row = s.get(ChannelPeerRow, (channel_id, peer))
    if row is None:
        row = ChannelPeerRow(channel_id=channel_id, peer=peer, admission="")
        s.add(row)
    first = row.admission == ""
    if first:
        row.admission = "asked"
    return first


def admission_of(s: Session, channel_id: str, peer: str) -> str:
    """The owner's word on a group: '' (never asked), asked, allowed or refused."""
    row = s.get(ChannelPeerRow, (channel_id, peer))
    return row.admission if row is not None else ""


def set_admission(s: Session, channel_id: str, peer: str, *, allowed: bool) -> int:
    """The owner's word on a group: what waited is handed on (allowed) or put away; how many waited.
    NotFoundError for a peer that is not a group the channel was asked about."""
    row = s.get(ChannelPeerRow, (channel_id, peer))
    if row is None or row.admission not in ADMISSIONS:
        raise NotFoundError("group", peer)
    row.admission = "allowed" if allowed else "refused"
    waiting = list(
        s.scalars(
            select(InboundRow).where(
                InboundRow.channel_id == channel_id, InboundRow.peer == peer, InboundRow.message_id == WAITING
            )
        )
    )
    for held in waiting:
        if allowed:
            held.handled_at, held.message_id, held.attempts = 0.0, 0, 0
        else:
            held.message_id = PUT_AWAY
    return len(waiting)


def groups(s: Session, channel_id: str) -> list[PeerRecord]:
    """The groups a channel was added to and asked about, the latest to write first."""
    stmt = select(ChannelPeerRow).where(
        ChannelPeerRow.channel_id == channel_id, ChannelPeerRow.admission != ""
    )
    return [_peer(row) for row in s.scalars(stmt.order_by(ChannelPeerRow.last_inbound_at.desc()))]


def asked_groups(s: Session) -> list[PeerRecord]:
    """Groups on every channel that wait for the owner's word (needs-you)."""
    stmt = select(ChannelPeerRow).where(ChannelPeerRow.admission == "asked")
    return [_peer(row) for row in s.scalars(stmt.order_by(ChannelPeerRow.last_inbound_at))]

"""Sending on a WeChat channel within what the platform allows (docs/channels.md#sending).

WeChat takes replies only within 24 h of the peer's latest message, and only about ten per message the
peer sent; past either, a send fails with `ret=-2`, and retrying in a loop makes it worse. So we keep an
hour and one send of margin (23 h, 9 sends), count every attempt before making it (a crash can only
over-count), and when a send cannot go now say why with `SendHeld`: the caller keeps the message until the
peer writes again. A send the platform refuses all the same uses up the peer's budget until then.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from core.channels.channel import SendHeld, cut
from core.channels.wechat.frames import MAX_TEXT
from core.channels.wechat.ilink import ILinkClient, SendRefused
from core.channels.wechat.plain_text import plain_text
from core.clock import Clock
from core.store import channels as channel_rows
from core.store.channels import PeerRecord
from core.store.database import Database

WINDOW_S = 23 * 3600.0
SENDS_PER_INBOUND = 9


@dataclass(frozen=True, slots=True)
class ReplyWindow:
    open: bool  # the peer wrote recently enough and we have its reply token
    sends_left: int
    closes_at: float  # when it closes (0 when it never opened)


def reply_window(peer: PeerRecord | None, now: float) -> ReplyWindow:
    if peer is None or not peer.reply_token or peer.last_inbound_at <= 0:
        return ReplyWindow(open=False, sends_left=0, closes_at=0.0)
    closes_at = peer.last_inbound_at + WINDOW_S
    return ReplyWindow(
        open=now < closes_at,
        sends_left=max(0, SENDS_PER_INBOUND - peer.sends_since_inbound),
        closes_at=closes_at,
    )


class WeChatSender:
    def __init__(self, db: Database, clock: Clock, client: ILinkClient, *, channel_id: str) -> None:
        self._db = db
        self._clock = clock
        self._client = client
        self._channel_id = channel_id

    async def window(self, peer: str) -> ReplyWindow:
        found = await self._db.read(lambda s: channel_rows.get_peer(s, self._channel_id, peer))
        return reply_window(found, self._clock.time())

    async def send(self, peer: str, text: str) -> str:
        """Send `text` (Markdown flattened, at most 4,000 characters, never split) to `peer`; the
        platform's id of the message. SendHeld when it cannot go now; SessionExpired when the login is
        gone."""
        found = await self._db.read(lambda s: channel_rows.get_peer(s, self._channel_id, peer))
        window = reply_window(found, self._clock.time())
        if found is None or not window.open:
            raise SendHeld("window_closed", f"{peer} has not written in the last {WINDOW_S / 3600:.0f} h")
        if window.sends_left <= 0:
            raise SendHeld("quota", f"{SENDS_PER_INBOUND} messages went to {peer} since it last wrote")

        def count(s: Session) -> None:
            channel_rows.count_send(s, self._channel_id, peer)

        await self._db.write(count)
        try:
            return await self._client.send_text(peer, found.reply_token, cut(plain_text(text), MAX_TEXT))
        except SendRefused as exc:

            def used_up(s: Session) -> None:
                channel_rows.count_send(s, self._channel_id, peer, used_up=True)

            await self._db.write(used_up)
            raise SendHeld("quota", str(exc)) from exc

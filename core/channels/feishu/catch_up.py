"""Catch-up on Feishu (docs/channels.md#catch-up): what people wrote while the app was off, or while the
long connection was down, read from each chat's history and taken like any message that came in.

On every connect, for each chat that wrote in the last 7 days, the history of the last 24 hours after the
newest message we have of it (less a minute, for clocks that disagree) is read, our own messages skipped, and
at most the 20 newest kept. They go through the same store as the long connection's events, so the dedupe
by message id drops what the socket brought meanwhile, and what is new is handed on in order.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from core.channels.feishu.events import EventError, FeishuMessage, message_from_history
from core.channels.feishu.rest import FeishuError, FeishuRest
from core.clock import Clock
from core.store import channels as channel_rows
from core.store.database import Database

log = logging.getLogger(__name__)

ACTIVE_S = 7 * 24 * 3600.0  # chats that wrote within this long are read back
WINDOW_S = 24 * 3600.0  # never further back than this
SLACK_S = 60  # read from a minute before the newest message we have
PER_CHAT = 20  # at most this many of a chat's messages are taken
MAX_PAGES = 10  # of 50 each: a chat busier than this keeps only its newest anyway

# Stores messages as the long connection's events are stored; returns those that were new.
Take = Callable[[list[FeishuMessage]], Awaitable[list[FeishuMessage]]]
# Whether a message is for the bot at all (a group's other talk is not): applied before the 20 are chosen.
Wanted = Callable[[FeishuMessage], bool]


@dataclass(frozen=True, slots=True)
class CatchUpResult:
    taken: list[FeishuMessage]  # new to us, oldest first
    forbidden: bool  # some chat's history was refused for want of a permission


async def catch_up(
    db: Database, clock: Clock, rest: FeishuRest, *, channel_id: str, take: Take, wanted: Wanted
) -> CatchUpResult:
    now = clock.time()
    chats = await db.read(lambda s: channel_rows.recent_chats(s, channel_id, since=now - ACTIVE_S))
    taken: list[FeishuMessage] = []
    forbidden = False
    for chat in chats:
        chat_type = "group" if chat.last_body.get("chat_type") == "group" else "p2p"
        newest_ms = chat.last_body.get("create_time_ms")
        since = now - WINDOW_S
        if isinstance(newest_ms, int) and newest_ms > 0:
            since = max(since, newest_ms / 1000 - SLACK_S)
        try:
            found = await _read(
                rest, chat.peer, chat_type, wanted, start_s=int(since), end_s=int(now) + SLACK_S
            )
        except FeishuError as exc:
            if exc.no_permission:  # this chat (a group needs one more permission): the others go on
                forbidden = True
                continue
            log.warning("feishu channel %s: could not read chat %s back: %s", channel_id, chat.peer, exc)
            continue
        if found:
            taken.extend(await take(found))
    return CatchUpResult(taken, forbidden=forbidden)


async def _read(
    rest: FeishuRest, chat_id: str, chat_type: str, wanted: Wanted, *, start_s: int, end_s: int
) -> list[FeishuMessage]:
    """The newest PER_CHAT messages of a chat in the time range that are for the bot, oldest first. Read
    newest first, so a busy group's latest talk is reached within MAX_PAGES whatever came before it."""
    found: list[FeishuMessage] = []
    token = ""
    for _page in range(MAX_PAGES):
        page = await rest.history(chat_id, start_s=start_s, end_s=end_s, page_token=token, newest_first=True)
        for item in page.items:
            if item.get("deleted"):
                continue
            try:
                message = message_from_history(item, chat_type)
            except EventError as exc:
                log.warning("feishu: a history item of %s was skipped: %s", chat_id, exc)
                continue
            if not message.from_app and wanted(message):
                found.append(message)
        if len(found) >= PER_CHAT or not page.has_more or not page.page_token:
            break
        token = page.page_token
    newest = sorted(found[:PER_CHAT], key=lambda m: (m.create_time_ms, m.message_id))
    return newest

"""The one 「回个「ok」」 line before a chat platform's reply window closes
(docs/channels.md#the-window-nudge).

WeChat lets a bot answer only within a day of the person's latest message. When something is due to reach
them after the window closes (a rule's next run, a task still working), the bot says so once, about two
hours before it closes, and asks for any reply, which opens a new window. Nothing is sent when nothing is
coming, in quiet hours, when the bot's switch is off, or when the person wrote again meanwhile.

Each inbound message queues one `nudge:<conversation>:<window start>` delivery, due two hours before that
window closes (or before the quiet hours that time falls in); at its time `nudge_text` decides, in the
outbox's transaction, whether it goes and what it says. A newer message makes the older nudges moot
(their window start is past).
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from zoneinfo import ZoneInfo

from sqlalchemy.orm import Session

from core import translations
from core.channels.wechat.sender import WINDOW_S, reply_window
from core.delivery.policy import QuietHours
from core.delivery.reserved_sends import reserved_sends
from core.store import bots as bot_rows
from core.store import channels as channel_rows
from core.store import conversations as conv_rows
from core.store import rules as rule_rows
from core.store import tasks as task_rows
from core.translations import Language

BEFORE_CLOSE_S = 2 * 3600.0
QUIET_STEP_S = 15 * 60.0  # how a nudge that would fall in quiet hours is moved before them
MAX_NAMED = 3  # what is coming is named up to this many; the rest are counted


def nudge_id(conversation_id: str, window_start: float) -> str:
    return f"nudge:{conversation_id}:{window_start:.3f}"


def nudge_due(window_start: float, quiet: QuietHours, tz: str) -> float:
    """Two hours before the window closes; when that is in quiet hours, just before they begin (a person
    who wrote at 9 in the morning hears it the evening before, not at 6), but never before the window
    opened."""
    due = window_start + WINDOW_S - BEFORE_CLOSE_S
    while quiet.contains(due, tz) and due > window_start:
        due -= QUIET_STEP_S
    return max(due, window_start)


def nudge_text(s: Session, delivery_id: str, now: float, tz: str, quiet: QuietHours, lang: Language) -> str:
    """What the nudge says now, or '' when it must not go (see the module's rules)."""
    _, conversation_id, start = delivery_id.split(":", 2)
    conversation = conv_rows.get_conversation(s, conversation_id)
    peer = channel_rows.peer_of_conversation(s, conversation_id)
    if conversation is None or peer is None or f"{peer.last_inbound_at:.3f}" != start:
        return ""  # gone, or the person wrote again: a newer window has its own nudge
    bot = bot_rows.get_bot(s, conversation.bot_id)
    if bot is None or not bot.window_nudge or bot.paused:
        return ""
    with contextlib.suppress(ValueError):  # unreadable bot quiet hours: the outbox's own apply
        quiet = QuietHours(bot.quiet_start, bot.quiet_end)
    if quiet.contains(now, tz):
        return ""
    window = reply_window(peer, now)
    channel = channel_rows.get_channel(s, peer.channel_id)
    # Never held: a nudge that cannot go now (no sends above what live work needs, the channel away)
    # is simply not needed any more.
    if channel is None or not channel.sendable or not window.open:
        return ""
    if window.sends_left - reserved_sends(s, conversation_id) < 1:
        return ""
    coming = _coming_after(s, conversation_id, window.closes_at, tz, lang)
    if not coming:
        return ""
    named = "、".join(coming[:MAX_NAMED]) if lang == "zh" else ", ".join(coming[:MAX_NAMED])
    if len(coming) > MAX_NAMED:
        named += translations.text(lang, "channel_push.nudge_more", count=len(coming) - MAX_NAMED)
    return translations.text(lang, "channel_push.nudge", count=len(coming), named=named)


def _coming_after(s: Session, conversation_id: str, closes_at: float, tz: str, lang: Language) -> list[str]:
    """What is due to reach this conversation after `closes_at`: rules that run again after it (a repeating
    one always does; a one-off only if its run is later), and tasks still under way (their result comes
    when it comes)."""
    coming: list[str] = []
    rules = [
        r
        for r in rule_rows.rules_of_conversation(s, conversation_id)
        if r.mode != "off" and not r.paused_reason
        if r.next_run_at > closes_at or (r.next_run_at > 0 and r.schedule.get("kind") != "once")
    ]
    for rule in sorted(rules, key=lambda r: r.next_run_at):
        if rule.next_run_at > closes_at:
            when = datetime.fromtimestamp(rule.next_run_at, ZoneInfo(rule.tz or tz)).strftime("%m-%d %H:%M")
            named = translations.text(lang, "channel_push.nudge_rule", title=rule.title, when=when)
        else:
            named = translations.text(lang, "channel_push.nudge_repeating", title=rule.title)
        coming.append(named)
    for task in task_rows.tasks_of_conversation(s, conversation_id):
        if not task.ended_at:
            coming.append(translations.text(lang, "channel_push.nudge_task", title=task.title))
    return coming

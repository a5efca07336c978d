"""The outbox's attention budget (docs/push-rules.md): quiet hours, daily caps, coalescing and digests, one
open question, channel state, message shapes and the retry schedule. Pure functions: time is passed in."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from core.channels.channel import (
    DESKTOP,
    FEISHU,
    WECHAT,
    ChannelCapabilities,
    ChannelSending,
    Outgoing,
    shape,
)
from core.delivery.policy import (
    QUESTION_PURPOSES,
    ConversationFacts,
    Decision,
    Pending,
    QuietHours,
    decide,
    digest_text,
    next_allowed,
    next_midnight,
    retry_at,
)
from core.store.deliveries import DeliveryPurpose

SH = "Asia/Shanghai"
BERLIN = "Europe/Berlin"
NEW_YORK = "America/New_York"
QUIET = QuietHours()
HOUR = 3600.0
MINUTE = 60.0
GATHER = 2 * MINUTE
"""How long a message waits on a chat channel for others to merge with; due this long ago, it goes."""


def at(when: str, tz: str = SH) -> float:
    """Epoch seconds of a local wall-clock time ("2026-11-02 23:00"); the first reading if it repeats."""
    return datetime.fromisoformat(when).replace(tzinfo=ZoneInfo(tz)).timestamp()


def utc(when: str) -> float:
    return datetime.fromisoformat(when + "+00:00").timestamp()


def local(ts: float, tz: str = SH) -> str:
    return datetime.fromtimestamp(ts, ZoneInfo(tz)).strftime("%Y-%m-%d %H:%M:%S")


def item(
    id: str,
    due: float,
    *,
    conversation: str = "wx",
    purpose: DeliveryPurpose = "result",
    text: str = "",
    attempts: int = 0,
    unsolicited: bool = True,
) -> Pending:
    return Pending(
        id=id,
        conversation_id=conversation,
        purpose=purpose,
        text=text or f"{purpose} {id} is ready",
        due_at=due,
        created_at=due,
        attempts=attempts,
        unsolicited=unsolicited,
    )


def conv(
    caps: ChannelCapabilities = WECHAT,
    *,
    id: str = "wx",
    tz: str = SH,
    last_user: float | None = None,
    sent_today: int = 0,
    question_open: bool = False,
    window_open: bool = True,
    quota_left: int | None = None,
    quiet: QuietHours | None = None,
) -> dict[str, ConversationFacts]:
    return {
        id: ConversationFacts(
            conversation_id=id,
            caps=caps,
            tz=tz,
            last_user_message_at=last_user,
            sent_today_unsolicited=sent_today,
            open_pushed_question=question_open,
            window_open=window_open,
            quota_left=quota_left,
            quiet=quiet,
        )
    }


def run(
    now: float,
    pending: Sequence[Pending],
    facts: dict[str, ConversationFacts],
    quiet: QuietHours = QUIET,
) -> list[Decision]:
    """`decide`, checking what holds for every call: each pending id is in exactly one decision."""
    decisions = decide(now, pending, facts, quiet)
    ids = Counter(i for d in decisions for i in d.ids)
    assert ids == Counter(p.id for p in pending)
    for d in decisions:
        assert d.ids
        assert d.conversation_id == next(p.conversation_id for p in pending if p.id == d.ids[0])
        if d.kind in ("send", "digest"):
            assert d.text
        else:
            assert not d.text and not d.ring and not d.counts_toward_cap
        assert (d.kind == "hold") == bool(d.held_reason)
    return decisions


def only(decisions: list[Decision]) -> Decision:
    assert len(decisions) == 1, decisions
    return decisions[0]


def of(decisions: list[Decision], id: str) -> Decision:
    return next(d for d in decisions if id in d.ids)


# --- quiet hours ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("clock", "quiet"),
    [
        ("21:59:59", False),
        ("22:00:00", True),
        ("23:59:59", True),
        ("00:00:00", True),
        ("03:00:00", True),
        ("07:59:59", True),
        ("08:00:00", False),
        ("12:00:00", False),
    ],
)
def test_quiet_hours_span_the_night(clock: str, quiet: bool) -> None:
    assert QUIET.contains(at(f"2026-11-02 {clock}"), SH) is quiet


def test_quiet_hours_end_the_next_morning_whether_the_night_started_before_or_after_midnight() -> None:
    assert QUIET.ends_after(at("2026-11-02 23:00"), SH) == at("2026-11-03 08:00")
    assert QUIET.ends_after(at("2026-11-03 03:00"), SH) == at("2026-11-03 08:00")


def test_outside_quiet_hours_the_next_end_is_tomorrow_morning() -> None:
    assert QUIET.ends_after(at("2026-11-02 12:00"), SH) == at("2026-11-03 08:00")
    assert QUIET.ends_after(at("2026-11-02 08:00"), SH) == at("2026-11-03 08:00")


def test_quiet_hours_within_one_day() -> None:
    siesta = QuietHours("13:00", "15:00")
    assert not siesta.contains(at("2026-11-02 12:59"), SH)
    assert siesta.contains(at("2026-11-02 13:00"), SH)
    assert not siesta.contains(at("2026-11-02 15:00"), SH)
    assert siesta.ends_after(at("2026-11-02 14:00"), SH) == at("2026-11-02 15:00")
    assert siesta.ends_after(at("2026-11-02 16:00"), SH) == at("2026-11-03 15:00")


@pytest.mark.parametrize("quiet", [QuietHours(enabled=False), QuietHours("08:00", "08:00")])
def test_disabled_or_empty_quiet_hours_are_never_quiet(quiet: QuietHours) -> None:
    now = at("2026-11-02 23:00")
    assert not quiet.contains(now, SH)
    assert quiet.ends_after(now, SH) == now
    assert next_allowed(now, SH, quiet) == at("2026-11-03 00:00")
    decision = only(run(now, [item("r", now - GATHER)], conv(), quiet))
    assert decision.kind == "send"


@pytest.mark.parametrize("bad", ["25:00", "8", "08:60", "ab:cd", "8:0", ""])
def test_quiet_hours_are_written_hh_mm(bad: str) -> None:
    with pytest.raises(ValueError, match="HH:MM"):
        QuietHours(start=bad)


@pytest.mark.parametrize(
    ("tz", "evening", "morning", "hours"),
    [
        (BERLIN, "2026-03-28 22:00", "2026-03-29 08:00", 9),  # clocks go forward at 02:00
        (BERLIN, "2026-10-24 22:00", "2026-10-25 08:00", 11),  # clocks go back at 03:00
        (NEW_YORK, "2026-03-07 22:00", "2026-03-08 08:00", 9),
        (NEW_YORK, "2026-10-31 22:00", "2026-11-01 08:00", 11),
    ],
)
def test_a_dst_night_is_an_hour_shorter_or_longer(tz: str, evening: str, morning: str, hours: int) -> None:
    start = at(evening, tz)
    end = QUIET.ends_after(start, tz)
    assert end == at(morning, tz)
    assert end - start == hours * HOUR
    assert QUIET.contains(start, tz)
    assert QUIET.contains(end - 1, tz)
    assert not QUIET.contains(end, tz)
    assert not QUIET.contains(start - 1, tz)
    # Every instant of the night, including both passes through a repeated hour, is quiet.
    assert all(QUIET.contains(start + s, tz) for s in range(0, int(end - start), 600))
    # A result held at any point of the night waits for that same morning.
    assert {QUIET.ends_after(start + s, tz) for s in range(0, int(end - start), 1800)} == {end}


def test_quiet_hours_ending_in_a_skipped_hour_end_when_the_clock_jumps_past() -> None:
    # New York, 2026-03-08: 02:00 EST becomes 03:00 EDT at 07:00 UTC; 02:30 never happens.
    quiet = QuietHours("23:00", "02:30")
    end = quiet.ends_after(at("2026-03-07 23:30", NEW_YORK), NEW_YORK)
    assert end == utc("2026-03-08 07:00:00")
    assert local(end, NEW_YORK) == "2026-03-08 03:00:00"
    assert quiet.contains(end - 1, NEW_YORK)
    assert not quiet.contains(end, NEW_YORK)


def test_quiet_hours_ending_in_a_repeated_hour_end_at_each_reading_still_ahead() -> None:
    # New York, 2026-11-01: 01:00-02:00 happens twice (EDT from 05:00 UTC, then EST from 06:00 UTC).
    quiet = QuietHours("23:00", "01:30")
    assert quiet.ends_after(at("2026-10-31 23:30", NEW_YORK), NEW_YORK) == utc("2026-11-01 05:30:00")
    # During the second pass the wall clock reads 01:10 again, which is quiet again until 01:30 EST.
    second_pass = utc("2026-11-01 06:10:00")
    assert quiet.contains(second_pass, NEW_YORK)
    assert quiet.ends_after(second_pass, NEW_YORK) == utc("2026-11-01 06:30:00")


def test_next_midnight_and_the_next_allowed_time_after_the_cap() -> None:
    evening = at("2026-11-02 21:00")
    assert next_midnight(evening, SH) == at("2026-11-03 00:00")
    assert next_allowed(evening, SH, QUIET) == at("2026-11-03 08:00")  # midnight is in quiet hours
    assert next_allowed(evening, SH, QuietHours("13:00", "15:00")) == at("2026-11-03 00:00")


def test_next_midnight_when_dst_skips_midnight() -> None:
    # Santiago, 2026-09-06: 00:00 -04 becomes 01:00 -03 at 04:00 UTC.
    assert next_midnight(at("2026-09-05 12:00", "America/Santiago"), "America/Santiago") == utc(
        "2026-09-06 04:00:00"
    )


# --- message shapes -------------------------------------------------------------------------------------


def test_shape_keeps_a_line_or_two_and_collapses_the_rest_into_the_second() -> None:
    question = (
        "❓「GPU 价格调研」想问你:比较包月价还是按小时价?\n1. 包月价\n\n2. 按小时价\n不回复就按包月价做"
    )
    assert shape(question, WECHAT) == (
        "❓「GPU 价格调研」想问你:比较包月价还是按小时价?\n1. 包月价 2. 按小时价 不回复就按包月价做"
    )
    assert shape("  X 降价了:   现在 ¥199  ", WECHAT) == "X 降价了: 现在 ¥199"
    assert shape("first\n  second  ", WECHAT) == "first\nsecond"
    assert shape("\n\n", WECHAT) == ""


def test_shape_strips_markers_only_where_the_channel_does() -> None:
    failure = "⚠️「GPU 价格调研」没做完:价格页要登录。"
    assert shape(failure, DESKTOP) == "「GPU 价格调研」没做完:价格页要登录。"
    assert shape(failure, WECHAT) == failure
    assert shape("❓ 用哪个账号?", DESKTOP) == "用哪个账号?"
    assert shape("\u26a0 bare warning sign", DESKTOP) == "bare warning sign"


def test_shape_cuts_at_300_characters_or_the_channel_limit() -> None:
    long = "报告" * 400
    shaped = shape(long, WECHAT)
    assert len(shaped) == 300
    assert shaped.endswith("…")
    assert shaped[:-1] == long[:299]
    tiny = replace(WECHAT, max_chars=20)
    assert len(shape(long, tiny)) == 20
    assert shape("x" * 300, WECHAT) == "x" * 300


def test_a_digest_is_in_the_language_of_its_texts() -> None:
    assert digest_text(["X 降价到 ¥199", "仓库 Y 的 issue #12 有新回复"], WECHAT) == (
        "2 条提醒:\n· X 降价到 ¥199\n· 仓库 Y 的 issue #12 有新回复"
    )
    assert digest_text(["X dropped to $199", "New reply on Y#12"], WECHAT) == (
        "2 updates:\n· X dropped to $199\n· New reply on Y#12"
    )
    assert digest_text(["X dropped to $199", "仓库有新回复"], WECHAT).startswith("2 条提醒:\n")


def test_a_digest_puts_each_item_on_one_line_and_fits_one_message() -> None:
    texts = [f"item {n}: " + "word " * 100 for n in range(30)]
    small = replace(WECHAT, max_chars=1000)
    digest = digest_text(texts, small)
    lines = digest.split("\n")
    assert lines[0] == "30 updates:"
    assert len(digest) <= 1000
    kept = len(lines) - 2
    assert lines[-1] == f"· … and {30 - kept} more"
    assert all(line.startswith("· item ") and len(line) <= 302 for line in lines[1:-1])
    assert "⚠️" not in digest_text(["⚠️ failed", "done"], DESKTOP)


# --- retries --------------------------------------------------------------------------------------------


def test_retry_schedule_is_5_10_20_seconds_then_give_up() -> None:
    failed = 1_000.0
    assert [retry_at(n, failed) for n in (1, 2, 3, 4, 5)] == [1_005.0, 1_010.0, 1_020.0, None, None]


def test_retry_delay_doubles_up_to_300_seconds_when_more_retries_are_configured() -> None:
    delays = [retry_at(n, 0.0, retries=10) for n in range(1, 12)]
    assert delays == [5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0, 300.0, None]
    assert retry_at(2, 0.0, retries=5, first_s=1.0, ceiling_s=3.0) == 2.0
    assert retry_at(500, 0.0, retries=1000) == 300.0
    with pytest.raises(ValueError, match="starts at 1"):
        retry_at(0, 0.0)


def test_a_delivery_whose_retries_are_used_up_waits_for_the_channel() -> None:
    now = at("2026-11-02 10:00")
    pending = [item("spent", now, attempts=4), item("last-try", now, attempts=3)]
    decisions = run(now, pending, conv())
    assert of(decisions, "spent").held_reason == "channel_down"
    assert of(decisions, "last-try").kind == "send"


# --- quiet hours in decisions ---------------------------------------------------------------------------


@pytest.mark.parametrize("purpose", ["result", "rule", "failure", "reminder", "digest", "note"])
def test_results_and_rule_hits_wait_for_the_end_of_quiet_hours(purpose: DeliveryPurpose) -> None:
    night = at("2026-11-02 23:10")
    held = only(run(night, [item("a", night, purpose=purpose)], conv(last_user=night - MINUTE)))
    assert (held.kind, held.held_reason, held.not_before) == ("hold", "quiet_hours", at("2026-11-03 08:00"))

    morning = at("2026-11-03 08:00")
    sent = only(run(morning, [item("a", night, purpose=purpose)], conv()))
    assert (sent.kind, sent.ids, sent.ring, sent.counts_toward_cap) == ("send", ("a",), True, True)


@pytest.mark.parametrize("purpose", ["question", "approval"])
@pytest.mark.parametrize(("wrote_minutes_ago", "sent"), [(5, True), (10, True), (15, False), (None, False)])
def test_a_question_in_quiet_hours_goes_out_only_if_the_user_wrote_in_the_last_10_minutes(
    purpose: DeliveryPurpose, wrote_minutes_ago: int | None, sent: bool
) -> None:
    now = at("2026-11-02 23:30")
    last_user = None if wrote_minutes_ago is None else now - wrote_minutes_ago * MINUTE
    decision = only(run(now, [item("q", now, purpose=purpose)], conv(last_user=last_user)))
    if sent:
        assert (decision.kind, decision.ring, decision.counts_toward_cap) == ("send", True, True)
    else:
        assert (decision.kind, decision.held_reason) == ("hold", "quiet_hours")
        assert decision.not_before == at("2026-11-03 08:00")


def test_a_recently_active_user_lets_a_question_through_but_not_results() -> None:
    now = at("2026-11-02 23:30")
    decisions = run(now, [item("q", now, purpose="question"), item("r", now)], conv(last_user=now - 300))
    assert of(decisions, "q").kind == "send"
    assert of(decisions, "r").held_reason == "quiet_hours"


def test_each_conversation_uses_its_own_zone_and_quiet_hours() -> None:
    now = utc("2026-11-02 15:30:00")  # 23:30 in Shanghai, 16:30 in Berlin
    facts = (
        conv(id="sh") | conv(FEISHU, id="de", tz=BERLIN) | conv(id="own", quiet=QuietHours("23:45", "06:00"))
    )
    pending = [item(c, now - GATHER, conversation=c) for c in ("sh", "de", "own")]
    decisions = run(now, pending, facts)
    assert of(decisions, "sh").held_reason == "quiet_hours"
    assert of(decisions, "de").kind == "send"
    assert of(decisions, "own").kind == "send"
    assert [d.conversation_id for d in decisions] == ["sh", "de", "own"]


# --- daily caps -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("caps", "cap"), [(WECHAT, 3), (FEISHU, 5)])
def test_the_daily_cap_holds_what_is_beyond_it_until_the_next_allowed_time(
    caps: ChannelCapabilities, cap: int
) -> None:
    now = at("2026-11-02 15:00")
    under = only(run(now, [item("a", now - GATHER)], conv(caps, sent_today=cap - 1)))
    assert (under.kind, under.counts_toward_cap) == ("send", True)
    over = only(run(now, [item("a", now)], conv(caps, sent_today=cap)))
    assert (over.kind, over.held_reason, over.not_before) == ("hold", "daily_cap", at("2026-11-03 08:00"))


@pytest.mark.parametrize(("caps", "cap"), [(WECHAT, 3), (FEISHU, 5)])
def test_overflow_beyond_the_cap_arrives_as_one_digest_the_next_day(
    caps: ChannelCapabilities, cap: int
) -> None:
    """A rule hit every hour from 09:00 to 18:00: `cap` go out one by one, the rest as one digest at 08:00."""
    hits = [
        item(f"h{n}", at(f"2026-11-02 {9 + n:02d}:00"), purpose="rule", text=f"X 价格 ¥{200 - n}")
        for n in range(10)
    ]
    messages: list[tuple[float, Decision]] = []
    waiting: list[Pending] = []
    day = date(2026, 11, 2)
    for minute in range(0, 24 * 60 * 2, 10):
        now = at("2026-11-02 00:00") + minute * MINUTE
        today = datetime.fromtimestamp(now, ZoneInfo(SH)).date()
        waiting += [h for h in hits if now - 10 * MINUTE < h.due_at <= now]
        sent_today = sum(1 for t, d in messages if d.counts_toward_cap and local(t).startswith(str(today)))
        for d in run(now, waiting, conv(caps, sent_today=sent_today)):
            if d.kind in ("send", "digest"):
                messages.append((now, d))
                waiting = [w for w in waiting if w.id not in d.ids]
            elif d.kind == "hold":
                assert d.held_reason in ("daily_cap", "quiet_hours")
                assert d.not_before == at("2026-11-03 08:00")
    assert waiting == []
    first_day = [d for t, d in messages if local(t).startswith(str(day))]
    assert [d.ids for d in first_day] == [(f"h{n}",) for n in range(cap)]
    (at_8, digest), *rest = [(t, d) for t, d in messages if not local(t).startswith(str(day))]
    assert rest == []
    assert local(at_8) == "2026-11-03 08:00:00"
    assert digest.kind == "digest"
    assert digest.ids == tuple(f"h{n}" for n in range(cap, 10))
    assert digest.text.startswith(f"{10 - cap} 条提醒:\n· X 价格 ¥{200 - cap}")
    assert digest.counts_toward_cap


def test_without_quiet_hours_the_overflow_goes_at_midnight() -> None:
    now = at("2026-11-02 15:00")
    held = only(run(now, [item("a", now)], conv(sent_today=3), QuietHours(enabled=False)))
    assert (held.held_reason, held.not_before) == ("daily_cap", at("2026-11-03 00:00"))


def test_questions_count_toward_the_cap_and_take_its_last_place_before_results() -> None:
    now = at("2026-11-02 15:00")
    pending = [item("r", now - 60), item("q", now, purpose="question")]
    decisions = run(now, pending, conv(sent_today=2))
    assert of(decisions, "q").kind == "send"
    assert of(decisions, "q").counts_toward_cap
    assert of(decisions, "r").held_reason == "daily_cap"

    capped = only(run(now, [item("q", now, purpose="question")], conv(sent_today=3)))
    assert (capped.held_reason, capped.not_before) == ("daily_cap", at("2026-11-03 08:00"))


def test_a_reply_the_user_asked_for_is_not_budgeted() -> None:
    now = at("2026-11-02 23:30")
    reply = item("reply", now, purpose="note", text="好的,按包月价继续。", unsolicited=False)
    decision = only(run(now, [reply], conv(sent_today=3, question_open=True)))
    assert (decision.kind, decision.text, decision.ring, decision.counts_toward_cap) == (
        "send",
        "好的,按包月价继续。",
        True,
        False,
    )


def test_a_reply_is_its_own_message_and_does_not_use_the_cap() -> None:
    now = at("2026-11-02 15:00")
    pending = [item("reply", now, unsolicited=False), item("r1", now - GATHER), item("r2", now - 1)]
    decisions = run(now, pending, conv(sent_today=2))
    assert [(d.kind, d.ids, d.counts_toward_cap) for d in decisions] == [
        ("send", ("reply",), False),
        ("digest", ("r1", "r2"), True),
    ]


# --- coalescing -----------------------------------------------------------------------------------------


def test_two_results_due_a_minute_apart_become_one_digest() -> None:
    """Each arrives when it is due (the usual case: a result is queued when ready)."""
    t0 = at("2026-11-02 10:00")
    a = item("a", t0, text="GPU 价格调研好了:X 云最便宜。")
    b = item("b", t0 + MINUTE, text="X 降价了:现在 ¥199。")
    assert [(d.kind, d.ids, d.not_before) for d in run(t0, [a], conv())] == [
        ("retry_later", ("a",), t0 + GATHER)
    ]
    assert [(d.kind, d.ids, d.not_before) for d in run(t0 + MINUTE, [a, b], conv())] == [
        ("retry_later", ("a", "b"), t0 + GATHER)
    ]
    digest = only(run(t0 + GATHER, [a, b], conv()))
    assert (digest.kind, digest.ids, digest.ring, digest.counts_toward_cap) == (
        "digest",
        ("a", "b"),
        True,
        True,
    )
    assert digest.text == "2 条提醒:\n· GPU 价格调研好了:X 云最便宜。\n· X 降价了:现在 ¥199。"


def test_two_results_due_a_minute_apart_merge_when_both_are_known_early() -> None:
    t0 = at("2026-11-02 10:00")
    pending = [item("a", t0), item("b", t0 + MINUTE)]
    assert [(d.kind, d.ids, d.not_before) for d in run(t0, pending, conv())] == [
        ("retry_later", ("b",), t0 + MINUTE),
        ("retry_later", ("a",), t0 + GATHER),
    ]
    assert only(run(t0 + GATHER, pending, conv())).kind == "digest"


def test_two_results_due_three_minutes_apart_are_two_messages() -> None:
    t0 = at("2026-11-02 10:00")
    a, b = item("a", t0), item("b", t0 + 3 * MINUTE)
    first = run(t0 + GATHER, [a, b], conv())
    assert [(d.kind, d.ids) for d in first] == [("send", ("a",)), ("retry_later", ("b",))]
    assert of(first, "b").not_before == t0 + 3 * MINUTE
    assert only(run(t0 + 3 * MINUTE, [b], conv(sent_today=1))).not_before == t0 + 3 * MINUTE + GATHER
    second = only(run(t0 + 3 * MINUTE + GATHER, [b], conv(sent_today=1)))
    assert (second.kind, second.ids, second.text) == ("send", ("b",), "result b is ready")


def test_gathering_is_bounded_by_the_first_message() -> None:
    t0 = at("2026-11-02 10:00")
    pending = [item("a", t0), item("b", t0 + 90), item("c", t0 + 150)]
    decisions = run(t0 + GATHER, pending, conv())
    assert [(d.kind, d.ids) for d in decisions] == [("digest", ("a", "b")), ("retry_later", ("c",))]


def test_the_coalescing_window_is_a_setting() -> None:
    t0 = at("2026-11-02 10:00")
    pending = [item("a", t0), item("b", t0 + 3 * MINUTE)]
    decision = only(decide(t0 + 5 * MINUTE, pending, conv(), QUIET, coalesce_window_s=5 * MINUTE))
    assert (decision.kind, decision.ids) == ("digest", ("a", "b"))
    assert only(decide(t0, pending[:1], conv(), QUIET, coalesce_window_s=0)).kind == "send"


def test_a_retry_or_a_message_due_long_ago_does_not_gather() -> None:
    t0 = at("2026-11-02 10:00")
    assert only(run(t0, [item("retry", t0, attempts=1)], conv())).kind == "send"
    assert only(run(t0, [item("old", t0 - GATHER)], conv())).kind == "send"
    assert only(run(t0, [item("fresh", t0)], conv(DESKTOP))).kind == "send"  # the desktop gets it at once


def test_everything_held_overnight_goes_as_one_digest_in_the_morning() -> None:
    pending = [item(f"n{h}", at(f"2026-11-02 {h}:00"), purpose="rule") for h in (22, 23)]
    pending += [item("early", at("2026-11-03 05:00"))]
    decision = only(run(at("2026-11-03 08:00"), pending, conv()))
    assert (decision.kind, decision.ids) == ("digest", ("n22", "n23", "early"))
    assert decision.text.startswith("3 updates:\n")


def test_no_gathering_into_quiet_hours() -> None:
    now = at("2026-11-02 21:59")
    decisions = run(now, [item("a", now), item("b", now + 90)], conv())
    assert [(d.kind, d.ids) for d in decisions] == [("send", ("a",)), ("retry_later", ("b",))]


def test_questions_are_never_merged_or_kept_waiting() -> None:
    now = at("2026-11-02 10:00")
    pending = [item("q", now, purpose="question"), item("r1", now), item("r2", now + 30)]
    decisions = run(now + 30, pending, conv())
    assert [(d.kind, d.ids) for d in decisions] == [("send", ("q",)), ("retry_later", ("r1", "r2"))]
    assert only(run(now + GATHER, pending[1:], conv())).ids == ("r1", "r2")


def test_a_single_message_is_shaped_for_its_channel() -> None:
    now = at("2026-11-02 10:00")
    failure = item(
        "f",
        now - GATHER,
        purpose="failure",
        text="⚠️「调研」没做完:\n页面要登录。\n发我一个链接。\n" + "很" * 400,
    )
    wechat = only(run(now, [failure], conv()))
    assert wechat.text.startswith("⚠️「调研」没做完:\n页面要登录。 发我一个链接。")
    assert len(wechat.text) == 300
    desktop = only(run(now, [failure], conv(DESKTOP)))
    assert desktop.text.startswith("「调研」没做完:\n")


# --- one open question ----------------------------------------------------------------------------------


@pytest.mark.parametrize("purpose", ["question", "approval"])
def test_a_second_question_waits_while_one_is_open(purpose: DeliveryPurpose) -> None:
    now = at("2026-11-02 10:00")
    held = only(run(now, [item("q2", now, purpose=purpose)], conv(question_open=True)))
    assert (held.kind, held.held_reason, held.not_before) == ("hold", "question_open", 0.0)


def test_of_two_questions_due_together_the_first_goes_and_the_second_waits() -> None:
    now = at("2026-11-02 10:00")
    pending = [item("late", now, purpose="approval"), item("early", now - 60, purpose="question")]
    decisions = run(now, pending, conv())
    assert of(decisions, "early").kind == "send"
    assert of(decisions, "late").held_reason == "question_open"


def test_a_question_asked_for_just_now_takes_the_open_slot() -> None:
    now = at("2026-11-02 10:00")
    pending = [
        item("chat", now, purpose="question", unsolicited=False),
        item("task", now, purpose="question"),
    ]
    decisions = run(now, pending, conv())
    assert of(decisions, "chat").kind == "send"
    assert of(decisions, "task").held_reason == "question_open"


# --- channel state --------------------------------------------------------------------------------------


def test_a_closed_window_holds_everything_due() -> None:
    now = at("2026-11-02 10:00")
    pending = [
        item("r", now),
        item("q", now, purpose="question"),
        item("reply", now, unsolicited=False),
        item("later", now + HOUR),
    ]
    decisions = run(now, pending, conv(window_open=False))
    assert [(d.kind, d.ids, d.held_reason, d.not_before) for d in decisions] == [
        ("hold", ("q", "r", "reply"), "window_closed", 0.0),  # due together: by id
        ("retry_later", ("later",), "", now + HOUR),
    ]


def test_an_empty_quota_holds_what_it_cannot_send() -> None:
    now = at("2026-11-02 10:00")
    pending = [item("q", now, purpose="question"), item("r", now)]
    decisions = run(now, pending, conv(quota_left=1))
    assert of(decisions, "q").kind == "send"
    assert of(decisions, "r").held_reason == "quota"
    assert only(run(now, [item("reply", now, unsolicited=False)], conv(quota_left=0))).held_reason == "quota"


def test_a_chat_reply_leaves_the_reserved_sends_to_the_work_that_owes_the_peer() -> None:
    now = at("2026-11-02 10:00")
    facts = {"wx": replace(conv(quota_left=3)["wx"], reserved=3)}
    assert only(run(now, [item("reply", now, unsolicited=False)], facts)).held_reason == "quota"
    assert only(run(now, [item("r", now, attempts=1)], facts)).kind == "send"  # the work's own push may
    facts = {"wx": replace(conv(quota_left=4)["wx"], reserved=3)}
    assert only(run(now, [item("reply", now, unsolicited=False)], facts)).kind == "send"


def test_gathering_ends_two_minutes_after_the_message_was_made_even_as_its_due_time_moves() -> None:
    now = at("2026-11-02 10:00")
    [first] = run(now, [item("r", now)], conv())
    assert (first.kind, first.not_before) == ("retry_later", now + 120)
    moved = replace(item("r", now), due_at=first.not_before)  # the outbox moved its due time
    assert only(run(first.not_before, [moved], conv())).kind == "send"


def test_what_waited_for_the_person_goes_first_as_one_message_whatever_the_hour() -> None:
    night = at("2026-11-02 23:30")
    waited = [
        replace(item("a", night - 9 * HOUR, text="报告写好了"), released=True),
        replace(item("b", night - 8 * HOUR, text="X 降价了"), released=True),
    ]
    fresh = item("c", night)
    decisions = run(night, [*waited, fresh], conv(sent_today=3))
    sent = decisions[0]
    assert (sent.kind, sent.ids, sent.counts_toward_cap) == ("digest", ("a", "b"), False)
    assert of(decisions, "c").held_reason == "quiet_hours"  # the rest keeps its budget


def test_a_conversation_without_facts_is_held_as_channel_down() -> None:
    now = at("2026-11-02 10:00")
    decisions = run(now, [item("r", now, conversation="gone"), item("s", now + 5, conversation="gone")], {})
    assert [(d.kind, d.held_reason) for d in decisions] == [("hold", "channel_down"), ("retry_later", "")]


def test_what_is_not_due_yet_is_left_pending_until_it_is() -> None:
    now = at("2026-11-02 10:00")
    decision = only(run(now, [item("r", now + 300)], conv()))
    assert (decision.kind, decision.not_before) == ("retry_later", now + 300)


# --- desktop: the message always, the notification within the budget -----------------------------------


def test_desktop_receives_results_during_quiet_hours_without_ringing() -> None:
    night = at("2026-11-02 23:10")
    decision = only(run(night, [item("r", night)], conv(DESKTOP)))
    assert (decision.kind, decision.ring, decision.counts_toward_cap) == ("send", False, False)
    day = at("2026-11-02 10:00")
    decision = only(run(day, [item("r", day)], conv(DESKTOP, sent_today=50)))
    assert (decision.kind, decision.ring, decision.counts_toward_cap) == ("send", True, True)


@pytest.mark.parametrize(("wrote_minutes_ago", "ring"), [(5, True), (15, False)])
def test_desktop_rings_a_night_question_only_for_a_recently_active_user(
    wrote_minutes_ago: int, ring: bool
) -> None:
    now = at("2026-11-02 23:30")
    pending = [item("q", now, purpose="question", text="❓ 用哪个账号?")]
    decision = only(run(now, pending, conv(DESKTOP, last_user=now - wrote_minutes_ago * MINUTE)))
    assert (decision.kind, decision.text, decision.ring) == ("send", "用哪个账号?", ring)


def test_desktop_rings_only_under_its_cap_when_it_has_one() -> None:
    capped = ChannelCapabilities(
        "desktop", rings=False, daily_cap=1, supports_quote=True, max_chars=4000, strips_markers=True
    )
    now = at("2026-11-02 10:00")
    under = only(run(now, [item("a", now)], conv(capped, sent_today=0)))
    over = only(run(now, [item("a", now)], conv(capped, sent_today=1)))
    assert (under.kind, under.ring, under.counts_toward_cap) == ("send", True, True)
    assert (over.kind, over.ring, over.counts_toward_cap) == ("send", False, False)
    both = run(now, [item("q", now, purpose="question"), item("r", now)], conv(capped))
    assert [(d.ids, d.ring) for d in both] == [(("q",), True), (("r",), False)]


def test_desktop_still_merges_and_keeps_one_question_open() -> None:
    now = at("2026-11-02 23:10")
    pending = [
        item("a", now),
        item("b", now),
        item("q1", now, purpose="question"),
        item("q2", now, purpose="question"),
    ]
    decisions = run(now, pending, conv(DESKTOP))
    assert [(d.kind, d.ids, d.ring) for d in decisions] == [
        ("send", ("q1",), False),
        ("digest", ("a", "b"), False),
        ("hold", ("q2",), False),
    ]
    assert of(decisions, "q2").held_reason == "question_open"


# --- the channel interface ------------------------------------------------------------------------------


class FakeWeChat:
    """A minimal sender of a chat platform, as the outbox sees it."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    async def send(self, conversation_id: str, text: str, outgoing: Outgoing | None = None) -> str:
        self.sent.append((conversation_id, text))
        return f"msg-{len(self.sent)}"


async def test_a_channel_sender_implements_the_protocol() -> None:
    wechat = FakeWeChat()
    channel: ChannelSending = wechat
    assert isinstance(wechat, ChannelSending)
    assert await channel.send("wx", "hi") == "msg-1"
    assert wechat.sent == [("wx", "hi")]


def test_channel_capabilities_follow_p3() -> None:
    assert (DESKTOP.rings, DESKTOP.daily_cap, DESKTOP.strips_markers, DESKTOP.max_chars) == (
        False,
        None,
        True,
        4000,
    )
    assert (WECHAT.rings, WECHAT.daily_cap, WECHAT.strips_markers, WECHAT.max_chars) == (True, 3, False, 4000)
    assert (FEISHU.rings, FEISHU.daily_cap, FEISHU.strips_markers) == (True, 5, False)


# --- 48 simulated hours ---------------------------------------------------------------------------------


@dataclass
class Message:
    at: float
    conversation_id: str
    decision: Decision
    purposes: tuple[str, ...]
    asked_for: bool
    user_active: bool


@dataclass
class Simulation:
    """A fake-clock outbox over two conversations in Shanghai: WeChat (cap 3) and Feishu (cap 5)."""

    start: float
    now: float = 0.0
    waiting: dict[str, Pending] = field(default_factory=dict)
    created: list[str] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    holds: dict[str, list[tuple[float, str]]] = field(default_factory=lambda: defaultdict(list))
    last_user: dict[str, float] = field(default_factory=dict)
    open_question: dict[str, float] = field(default_factory=dict)  # conversation -> when it was pushed
    away: dict[str, tuple[float, float]] = field(default_factory=dict)
    fail_next: dict[str, int] = field(default_factory=dict)
    failures: list[tuple[float, tuple[str, ...]]] = field(default_factory=list)
    caps: dict[str, ChannelCapabilities] = field(default_factory=lambda: {"wx": WECHAT, "fs": FEISHU})

    def push(self, p: Pending) -> None:
        self.waiting[p.id] = p
        self.created.append(p.id)

    def day(self, ts: float) -> date:
        return datetime.fromtimestamp(ts, ZoneInfo(SH)).date()

    def is_away(self, cid: str) -> bool:
        span = self.away.get(cid)
        return span is not None and span[0] <= self.now < span[1]

    def window_open(self, cid: str) -> bool:
        if cid != "wx":
            return True
        last = self.last_user.get(cid)
        return last is not None and self.now - last < 24 * HOUR

    def user_writes(self, cid: str) -> None:
        self.last_user[cid] = self.now

    def answer_questions(self) -> None:
        for cid, pushed in list(self.open_question.items()):
            if (
                self.now - pushed >= 20 * MINUTE
                and not QUIET.contains(self.now, SH)
                and not self.is_away(cid)
            ):
                del self.open_question[cid]
                self.user_writes(cid)
                reply_id = f"{cid}-reply-{len(self.created)}"
                self.push(
                    Pending(
                        reply_id, cid, "note", "好的,按你说的继续。", self.now, self.now, unsolicited=False
                    )
                )

    def facts(self) -> dict[str, ConversationFacts]:
        today = self.day(self.now)
        return {
            cid: ConversationFacts(
                conversation_id=cid,
                caps=caps,
                tz=SH,
                last_user_message_at=self.last_user.get(cid),
                sent_today_unsolicited=sum(
                    1
                    for m in self.messages
                    if m.conversation_id == cid and m.decision.counts_toward_cap and self.day(m.at) == today
                ),
                open_pushed_question=cid in self.open_question,
                window_open=self.window_open(cid),
            )
            for cid, caps in self.caps.items()
        }

    def step(self) -> None:
        facts = self.facts()
        decisions = run(self.now, list(self.waiting.values()), facts)
        for d in decisions:
            cid = d.conversation_id
            if d.kind == "hold":
                for i in d.ids:
                    self.holds[i].append((self.now, d.held_reason))
                continue
            if d.kind == "retry_later":
                assert d.not_before > self.now
                continue
            items = [self.waiting[i] for i in d.ids]
            if self.fail_next.get(cid, 0) > 0:  # the channel fails this send: count it and retry later
                self.fail_next[cid] -= 1
                self.failures.append((self.now, d.ids))
                for p in items:
                    again = retry_at(p.attempts + 1, self.now)
                    assert again is not None
                    self.waiting[p.id] = replace(p, attempts=p.attempts + 1, due_at=again)
                continue
            last = facts[cid].last_user_message_at
            self.messages.append(
                Message(
                    at=self.now,
                    conversation_id=cid,
                    decision=d,
                    purposes=tuple(p.purpose for p in items),
                    asked_for=not any(p.unsolicited for p in items),
                    user_active=last is not None and self.now - last <= 10 * MINUTE,
                )
            )
            assert self.window_open(cid), "sent while the WeChat window was closed"
            if any(p.purpose in QUESTION_PURPOSES for p in items):
                assert cid not in self.open_question, "a second open question"
                self.open_question[cid] = self.now
            for i in d.ids:
                del self.waiting[i]


def test_48_simulated_hours_of_deliveries_keep_to_quiet_hours_caps_and_digests() -> None:
    start = at("2026-11-02 00:00")
    sim = Simulation(start=start)
    rng = random.Random(20261102)
    events: dict[int, list[Pending | str]] = defaultdict(list)  # minute -> pushes and "user:<cid>" writes

    def push(minute: int, cid: str, purpose: DeliveryPurpose, text: str) -> None:
        ts = start + minute * MINUTE
        id = f"{cid}-{purpose}-{minute}"
        while id in used:
            id += "+"
        used.add(id)
        events[minute].append(Pending(id, cid, purpose, text, ts, ts))

    used: set[str] = set()
    sim.last_user = {"wx": start - 30 * MINUTE, "fs": start - 30 * MINUTE}
    # Scripted first, so their ids are plain. A WeChat question at 07:00 (the user wrote 15 minutes ago)
    # waits; the user writes at 07:45 and it goes out then; one asked at 07:50 waits for that one's answer.
    events[6 * 60 + 45].append("user:wx")
    push(7 * 60, "wx", "question", "❓ 早上的问题")
    events[7 * 60 + 45].append("user:wx")
    push(7 * 60 + 50, "wx", "question", "❓ 又一个问题")
    # Two results a minute apart travel together.
    push(10 * 60, "fs", "result", "甲好了")
    push(10 * 60 + 1, "fs", "result", "乙好了")
    # The WeChat user last writes at 21:30 on day 1 (or answers before 22:00), then is away on day 2 from
    # 06:00 until 23:00: the 24 h window closes, and a result at 22:30 waits for it, then for the morning.
    events[21 * 60 + 30].append("user:wx")
    sim.away["wx"] = (start + 30 * HOUR, start + 47 * HOUR)
    push(24 * 60 + 22 * 60 + 30, "wx", "result", "窗口关着时的结果")
    events[24 * 60 + 23 * 60].append("user:wx")

    for day in range(2):
        base = day * 24 * 60
        for cid in ("wx", "fs"):
            for minute in rng.sample(range(24 * 60), 6):  # results at any time of day or night
                push(base + minute, cid, "result", f"任务 {minute} 好了:结果在这里。")
            for minute in rng.sample(range(9 * 60, 20 * 60), 3):  # questions in the daytime
                push(base + minute, cid, "question", f"❓ 任务 {minute} 想问你:用哪个账号?")
        for hour in (8, 20):
            push(base + hour * 60, "wx", "rule", f"天气:{hour} 点,晴。")
        for hour in range(24):  # a rule that floods: a hit every hour
            push(base + hour * 60 + 30, "fs", "rule", f"X 价格 ¥{200 + hour}")
        push(base + 14 * 60 + 5, "fs", "approval", "需批准:rm -rf build/")

    minute = 0
    while minute < 48 * 60 or sim.waiting:
        assert minute < 12 * 24 * 60, f"still waiting after 12 days: {sorted(sim.waiting)}"
        sim.now = start + minute * MINUTE
        if minute == 12 * 60:  # the Feishu channel fails its next two sends (retried after 5 s, then 10 s)
            sim.fail_next["fs"] = 2
        for event in events.get(minute, []):
            if isinstance(event, str):
                sim.user_writes(event.removeprefix("user:"))
            else:
                sim.push(event)
        sim.answer_questions()
        sim.step()
        minute += 1

    # No message lost, none sent twice.
    delivered = Counter(i for m in sim.messages for i in m.decision.ids)
    assert set(delivered) == set(sim.created)
    assert all(n == 1 for n in delivered.values())
    assert len(sim.created) > 100

    for m in sim.messages:
        d = m.decision
        assert d.ring  # both are chat channels: every push rings
        assert d.counts_toward_cap == (not m.asked_for)
        assert (d.kind == "digest") == (len(d.ids) > 1)
        if any(p in QUESTION_PURPOSES for p in m.purposes):
            assert d.kind == "send"
        # Nothing is pushed in quiet hours, except a question to a user who just wrote, or a reply.
        if QUIET.contains(m.at, SH):
            assert m.asked_for or (set(m.purposes) <= QUESTION_PURPOSES and m.user_active), (local(m.at), m)

    # At most the cap per local day per conversation.
    per_day = Counter(
        (m.conversation_id, sim.day(m.at)) for m in sim.messages if m.decision.counts_toward_cap
    )
    for (cid, _), count in per_day.items():
        cap = sim.caps[cid].daily_cap
        assert cap is not None and count <= cap
    assert {per_day[("wx", sim.day(start))], per_day[("fs", sim.day(start))]} == {3, 5}

    # The overflow of a day arrives as one digest: everything first held for the cap on the same day
    # travels in one message, at the next allowed time or later (never in quiet hours).
    message_of = {i: m for m in sim.messages for i in m.decision.ids}
    overflow: dict[tuple[str, date], set[str]] = defaultdict(set)
    for i, held in sim.holds.items():
        capped = [t for t, reason in held if reason == "daily_cap"]
        if capped and message_of[i].purposes[0] not in QUESTION_PURPOSES:
            overflow[(message_of[i].conversation_id, sim.day(capped[0]))].add(i)
    assert {cid for cid, _ in overflow} == {"wx", "fs"}
    for (cid, capped_on), overflowed in overflow.items():
        carriers = {id(message_of[i]) for i in overflowed}
        assert len(carriers) == 1, (cid, capped_on, overflowed)
        carrier = message_of[next(iter(overflowed))]
        assert carrier.decision.kind == "digest"
        assert sim.day(carrier.at) > capped_on
        assert not QUIET.contains(carrier.at, SH)

    # Every kind of hold happened, and the scripted moments went as designed.
    reasons = {reason for held in sim.holds.values() for _, reason in held}
    assert reasons >= {"quiet_hours", "daily_cap", "question_open", "window_closed"}
    assert sim.holds["wx-question-420"][0] == (at("2026-11-02 07:00"), "quiet_hours")
    assert local(message_of["wx-question-420"].at) == "2026-11-02 07:45:00"
    assert sim.holds["wx-question-470"][0] == (at("2026-11-02 07:50"), "question_open")
    assert message_of["fs-result-600"] is message_of["fs-result-601"]
    closed = {r for _, r in sim.holds["wx-result-2790"]}
    assert closed >= {"window_closed", "quiet_hours"}
    assert local(message_of["wx-result-2790"].at) >= "2026-11-04 08:00:00"
    assert len(sim.failures) == 2
    for failed_at, failed_ids in sim.failures:  # retried (5 s, then 10 s) and delivered later, once
        assert all(message_of[i].at > failed_at for i in failed_ids)
    assert sum(1 for m in sim.messages if m.decision.kind == "digest") >= 4

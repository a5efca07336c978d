"""48 simulated hours of three rules on a real host (docs/runs.md#rule-runs): a real SQLite file, the scripted
model over HTTP on 127.0.0.1, and a fake clock moved in 5-minute steps, with the machine asleep for 3 hours in
the middle (`jump_wall` + `resync("resume")`).

- a daily 08:00 reminder (no model turn);
- an every-30-minutes acting check that reports a message on every third run and stays quiet otherwise;
  once, a person's "run now" holds it busy (a background job waiting on a file) across its next due time;
- a cron check on weekdays at 09:00 that always reports.

Checked: the run counts per rule (computed from the schedules with `next_fire` and `grace_s`, and
cross-checked against the figures worked out by hand), missed runs recorded `skipped` once (no backlog),
a due time that finds the previous run still going recorded `skipped` (overlap), no rule overlapping
itself, and every message delivered exactly once.

Channels: only the desktop exists, so the chat-channel caps and digests (WeChat 3/day, Feishu 5/day) can't be
exercised here; they are covered by tests/unit/test_delivery_policy.py. What the desktop does is checked:
every message is stored at once, quiet hours included (they only decide whether it rings). Each rule reports
to its own conversation, because the desktop merges messages that are due together in one conversation.

No sleeps: after each step the test waits for the scheduler's one timer to be asleep again (the clock below
tells), then for every run the step caused to end and its message to be stored (bus events).
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import select

from core.clock import FakeClock
from core.delivery.outbox import local_zone
from core.delivery.policy import QuietHours
from core.host import Host
from core.rules import prompts
from core.rules.runner import rule_folder
from core.rules.schedule import Schedule, fire_times, grace_s, parse_schedule
from core.store import messages as msg_rows
from core.store import runs as run_rows
from core.store.models import DeliveryRow
from core.store.runs import RunRecord
from tests.fakes.model_server import Reply, ScriptedModelServer, ToolCallSpec
from tests.integration.host_fixtures import make_host
from tests.integration.task_script import SessionScript, report
from tests.waiting import wait_until

TZ = "Asia/Shanghai"  # no DST: the hand-worked figures below stay simple
HOUR = 3600.0
STEP_S = 300.0
# Monday 2026-11-30 06:00 in Shanghai.
START = datetime(2026, 11, 30, 6, 0, tzinfo=ZoneInfo(TZ)).timestamp()
END = START + 48 * HOUR
# Asleep from Tuesday 07:40 to 10:40: the 08:00 reminder is missed by more than its 2 h grace (skipped),
# the 09:00 weekday check by less (it runs once, late), the half-hourly check by more than its 15 minutes.
SLEEP_FROM = START + 25 * HOUR + 40 * 60
SLEEP_S = 3 * HOUR
WAKE = SLEEP_FROM + SLEEP_S
# Monday 12:10: a person's "run now" of the half-hourly check, busy until after its 12:30 due time.
HELD_AT = START + 6 * HOUR + 10 * 60
HELD_UNTIL = START + 6 * HOUR + 30 * 60

REMINDER = "Morning reminder"
CHECK = "Price check"
BRIEF = "Weekday brief"
REMINDER_TEXT = "早上好:记得吃药、喝水"
DAILY_8 = {"kind": "daily", "time": "08:00", "tz": TZ}
EVERY_30 = {"kind": "every", "minutes": 30, "tz": TZ}
WEEKDAYS_9 = {"kind": "cron", "cron": "0 9 * * 1-5", "tz": TZ}
GATE = "gate"
WAIT_FOR_GATE = f"while [ ! -e {GATE} ]; do sleep 0.02; done; echo released"


class SchedulerWatchClock(FakeClock):
    """A FakeClock that knows whether the scheduler's one timer is asleep on it, so the test moves time only
    once the scheduler has decided everything due and re-armed (advancing earlier would wake it late)."""

    def __init__(self, start: float) -> None:
        super().__init__(start)
        self._asleep = asyncio.Event()
        self._token: object | None = None
        self._wake_at = math.inf

    async def sleep(self, seconds: float) -> None:
        task = asyncio.current_task()
        coro = task.get_coro() if task is not None else None
        if getattr(coro, "__qualname__", "") != "Scheduler._wake":
            await super().sleep(seconds)
            return
        token = object()
        self._token, self._wake_at = token, self.monotonic() + seconds
        self._asleep.set()
        try:
            await super().sleep(seconds)
        finally:
            if self._token is token:
                self.forget_timer()

    def advance(self, seconds: float) -> None:
        super().advance(seconds)
        if self._token is not None and self._wake_at <= self.monotonic():
            self.forget_timer()

    def forget_timer(self) -> None:
        """The timer is (about to be) woken or replaced: wait for the next one before moving time again."""
        self._token = None
        self._asleep.clear()

    async def scheduler_asleep(self, timeout: float = 5.0) -> None:
        await asyncio.wait_for(self._asleep.wait(), timeout)


class RuleModel:
    """The scripted model for the two checks. The half-hourly check reports a message on every third run
    (`told`, by run number) and stays quiet otherwise; `hold_next` makes its next run start a background
    job that waits for a file, and report only once woken after the job ended."""

    def __init__(self) -> None:
        self.starts: Counter[str] = Counter()
        self.told: dict[tuple[str, int], str] = {}
        self.hold_next = False

    def message(self, who: str, n: int) -> str:
        if who == f"rule:{BRIEF}":
            return f"早报 #{n}:今天有 3 个会"
        return f"X 降价了 #{n}" if n % 3 == 0 else ""

    def report(self, who: str) -> Reply:
        n = self.starts[who]
        text = self.message(who, n)
        if not text:
            return report("done", f"run {n}: nothing new")
        self.told[(who, n)] = text
        return report("done", f"run {n}: worth saying", message=text)

    def __call__(self, body: dict[str, Any]) -> Reply:
        who = SessionScript.who(body)
        messages: list[dict[str, Any]] = body["messages"]
        last = messages[-1]
        if last.get("role") == "tool":
            called = next(
                m for m in reversed(messages) if m.get("role") == "assistant" and m.get("tool_calls")
            )
            if called["tool_calls"][0]["function"]["name"] == "task_report":
                return Reply.text("Reported.")
            return Reply.text("Waiting for the job to finish.")
        if last.get("content") == prompts.START:
            self.starts[who] += 1
            if self.hold_next and who == f"rule:{CHECK}":
                self.hold_next = False
                return Reply.tool_calls(
                    [ToolCallSpec("bash", {"command": WAIT_FOR_GATE, "run_in_background": True})]
                )
        # The start of an ordinary run, or the wake-up after the held run's job ended (or a nudge).
        return self.report(who)


@dataclass(frozen=True)
class Expected:
    scheduled: int  # runs with cause `schedule` that ran (`done`)
    missed: int  # `skipped`, missed by more than the grace
    overlap: int  # `skipped`, the previous run still going


def expected(
    schedule: Schedule, *, held_at: float | None = None, held_until: float | None = None
) -> Expected:
    """What the scheduler must do with one rule over the run, from its schedule alone: every due time while
    awake fires (the 5-minute steps land on them); of the due times slept through only the first counts,
    once: late if within the grace, else skipped; a due time while a held run is live is an overlap."""
    dues = [t for t in fire_times(schedule, START, 500) if t <= END]
    awake = [t for t in dues if not SLEEP_FROM < t <= WAKE]
    slept = [t for t in dues if SLEEP_FROM < t <= WAKE]
    overlap = 0
    if held_at is not None and held_until is not None:
        overlap = sum(1 for t in awake if held_at < t <= held_until)
    late = 1 if slept and WAKE - slept[0] <= grace_s(schedule) else 0
    missed = 1 if slept and not late else 0
    return Expected(scheduled=len(awake) - overlap + late, missed=missed, overlap=overlap)


async def rule_runs(host: Host, rule_ids: Collection[str]) -> dict[str, list[RunRecord]]:
    def read(s: Any) -> dict[str, list[RunRecord]]:
        return {r: list(reversed(run_rows.runs_of_rule(s, r))) for r in rule_ids}  # oldest first

    return await host.db.read(read)


async def deliveries(host: Host) -> list[DeliveryRow]:
    def read(s: Any) -> list[DeliveryRow]:
        rows = list(s.scalars(select(DeliveryRow).order_by(DeliveryRow.created_at, DeliveryRow.id)))
        for row in rows:
            s.expunge(row)
        return rows

    return await host.db.read(read)


async def test_three_rules_over_48_simulated_hours_with_a_sleep(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer
) -> None:
    model = RuleModel()
    model_server.responder = model
    clock = SchedulerWatchClock(START)
    host = make_host(tmp_path / "data", model_server.base_url, home=home, clock=clock)
    await host.start()
    try:
        ids: dict[str, str] = {}
        conversations: dict[str, str] = {}
        for title, kind, schedule, words in (
            (REMINDER, "remind", DAILY_8, REMINDER_TEXT),
            (CHECK, "check", EVERY_30, "看看 X 的价格,降价了告诉我"),
            (BRIEF, "check", WEEKDAYS_9, "工作日早上 9 点给我今天的简报"),
        ):
            conversation = await host.chat.create_conversation(title=title)
            clock.forget_timer()  # creating a rule re-arms the scheduler
            view = await host.rules.create(
                bot_id=None,
                title=title,
                instruction=words,
                schedule=schedule,
                kind=kind,
                conversation_id=conversation.id,
            )
            ids[title], conversations[title] = view.id, conversation.id
        rule_of = {rule_id: title for title, rule_id in ids.items()}
        await clock.scheduler_asleep()

        async def settle(live: frozenset[str] = frozenset()) -> None:
            """The scheduler is asleep again, every run but `live` has ended and said what it had to say."""
            await clock.scheduler_asleep()

            async def quiet() -> bool:
                runs = [r for rs in (await rule_runs(host, ids.values())).values() for r in rs]
                if any(r.state != "ended" and r.id not in live for r in runs):
                    return False
                reminders = sum(1 for r in runs if rule_of[r.rule_id] == REMINDER and r.outcome == "done")
                sent = [d for d in await deliveries(host) if d.status == "sent"]
                return len(sent) == len(model.told) + reminders

            await wait_until(host.bus, quiet, timeout=10, what="the step's runs to end and deliver")

        held_run = ""
        while clock.time() < END:
            if clock.time() == SLEEP_FROM:
                # The machine sleeps: the wall clock jumps, monotonic time (the timers) does not move.
                clock.jump_wall(SLEEP_S)
                clock.forget_timer()
                await host.resync("resume")
                await settle()
                continue
            clock.advance(STEP_S)
            if clock.time() == HELD_AT:
                await settle()
                model.hold_next = True
                held_run = await host.rules.run_now(ids[CHECK])

                async def held_settling(run_id: str = held_run) -> bool:
                    log = (await rule_runs(host, [ids[CHECK]]))[ids[CHECK]]
                    return any(r.id == run_id and r.state == "settling" for r in log)

                # Only waiting on its job stops its 15 minutes counting: the clock moves on once it does.
                await wait_until(host.bus, held_settling, timeout=10, what="the held run to settle")
            if HELD_AT <= clock.time() < HELD_UNTIL:
                await settle(live=frozenset({held_run}))
                continue
            if clock.time() == HELD_UNTIL:
                await settle(live=frozenset({held_run}))
                # The half-hourly due time found the held run still going: skipped, not queued behind it.
                held_log = (await rule_runs(host, [ids[CHECK]]))[ids[CHECK]]
                assert [(r.cause, r.outcome, r.error) for r in held_log[-2:]] == [
                    ("manual", "", ""),
                    ("schedule", "skipped", "overlap"),
                ]
                bot = await host.bots.get(held_log[-1].bot_id)
                gate = rule_folder(Path(bot.workspace), ids[CHECK]) / GATE
                await asyncio.to_thread(gate.write_text, "go")
            await settle()
        assert clock.time() == END

        runs = await rule_runs(host, ids.values())
        got: dict[str, Counter[tuple[str, str, str]]] = {
            title: Counter((r.cause, r.outcome, r.error) for r in runs[rule_id])
            for title, rule_id in ids.items()
        }

        # Counts per rule, from the schedules ...
        want = {
            REMINDER: expected(parse_schedule(DAILY_8, default_tz=TZ)),
            CHECK: expected(parse_schedule(EVERY_30, default_tz=TZ), held_at=HELD_AT, held_until=HELD_UNTIL),
            BRIEF: expected(parse_schedule(WEEKDAYS_9, default_tz=TZ)),
        }
        # ... and as worked out by hand: the reminder ran Monday 08:00 and slept through Tuesday's; the check
        # is due 96 times, 6 of them asleep (one skip for all), once busy with the held run (one overlap);
        # the brief ran Monday 09:00 and Tuesday 10:40, 1 h 40 late but within its 2 h grace.
        assert want == {
            REMINDER: Expected(scheduled=1, missed=1, overlap=0),
            CHECK: Expected(scheduled=96 - 6 - 1, missed=1, overlap=1),
            BRIEF: Expected(scheduled=2, missed=0, overlap=0),
        }
        for title, w in want.items():
            expected_log = Counter(
                {
                    ("schedule", "done", ""): w.scheduled,
                    ("schedule", "skipped", "missed"): w.missed,
                    ("schedule", "skipped", "overlap"): w.overlap,
                    ("manual", "done", ""): 1 if title == CHECK else 0,
                }
            )
            assert got[title] == +expected_log, title
        # The brief's late run started when the machine woke, not at its due time.
        brief_runs = [r for r in runs[ids[BRIEF]] if r.outcome == "done"]
        assert [r.started_at for r in brief_runs] == [START + 3 * HOUR, WAKE]
        # The skips say when they were due: the first time slept through, once (no backlog).
        missed = {rule_of[r.rule_id]: r.queued_at for rs in runs.values() for r in rs if r.error == "missed"}
        assert missed == {REMINDER: START + 26 * HOUR, CHECK: SLEEP_FROM + 20 * 60}

        # No rule overlaps itself: each run that ran ended before the next one started.
        for title, rule_id in ids.items():
            ran = [r for r in runs[rule_id] if r.outcome != "skipped"]
            for before, after in itertools.pairwise(ran):
                assert before.ended_at <= after.started_at, (title, before.id, after.id)

        # Every message delivered exactly once, each to its rule's conversation, stored at once.
        sent = await deliveries(host)
        assert all(d.status == "sent" and d.sent_at == d.created_at for d in sent)
        assert len({d.message_id for d in sent}) == len(sent)
        told_by_rule: dict[str, list[str]] = {
            REMINDER: [REMINDER_TEXT] * want[REMINDER].scheduled,
            CHECK: [t for (who, _), t in model.told.items() if who == f"rule:{CHECK}"],
            BRIEF: [t for (who, _), t in model.told.items() if who == f"rule:{BRIEF}"],
        }
        checks_done = want[CHECK].scheduled + 1
        assert len(told_by_rule[CHECK]) == checks_done // 3
        assert len(told_by_rule[BRIEF]) == want[BRIEF].scheduled
        for title, cid in conversations.items():
            stored = await host.db.read(partial(msg_rows.list_messages, conversation_id=cid))
            assert [m.text for m in stored if m.role == "assistant"] == told_by_rule[title], title
        # The desktop stores even what arrives in quiet hours; they decide only whether it rings.
        quiet = QuietHours()
        assert any(quiet.contains(d.sent_at, local_zone()) for d in sent)
        # Reminders never asked the model; each check run asked it at least twice (report, then end).
        assert f"rule:{REMINDER}" not in model.starts
        assert model.starts[f"rule:{CHECK}"] == checks_done
        assert model.starts[f"rule:{BRIEF}"] == want[BRIEF].scheduled
    finally:
        await host.stop()

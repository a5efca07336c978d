"""Figures for the outbox's attention budget (issue 4). Run: .venv/bin/python -m bench.bench_outbox_policy

`core.delivery.policy.decide` over 1,000 pending deliveries in 50 conversations (desktop, WeChat and Feishu;
five time zones; results, rule hits, questions and approvals; some over their cap, some with a question
open, some with the WeChat window closed), at a daytime and a quiet-hours instant. Each figure is the
median of several runs; "decisions per second" counts pending deliveries decided.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter

from bench.common import line
from core.channels.channel import DESKTOP, FEISHU, WECHAT
from core.delivery.policy import ConversationFacts, Pending, QuietHours, decide
from core.store.deliveries import DeliveryPurpose

ITEMS = 1_000
CONVERSATIONS = 50
RUNS = 9
CALLS_PER_RUN = 20
ZONES = ("Asia/Shanghai", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "UTC")
PURPOSES: tuple[DeliveryPurpose, ...] = (
    "result",
    "result",
    "rule",
    "rule",
    "question",
    "approval",
    "failure",
)
DAYTIME = 1_793_588_400.0  # 2026-11-02 11:00 in Shanghai
NIGHT = 1_793_653_200.0  # 2026-11-02 21:00 UTC: 05:00 in Shanghai, 22:00 in Berlin


def workload(now: float, seed: int = 4) -> tuple[list[Pending], dict[str, ConversationFacts]]:
    rng = random.Random(seed)
    facts: dict[str, ConversationFacts] = {}
    for n in range(CONVERSATIONS):
        cid = f"c{n:02d}"
        caps = (DESKTOP, WECHAT, FEISHU)[n % 3]
        facts[cid] = ConversationFacts(
            conversation_id=cid,
            caps=caps,
            tz=ZONES[n % len(ZONES)],
            last_user_message_at=now - rng.choice((60, 300, 900, 7200)),
            sent_today_unsolicited=rng.randrange(0, 6),
            open_pushed_question=rng.random() < 0.3,
            window_open=caps is not WECHAT or rng.random() < 0.8,
        )
    pending = []
    for n in range(ITEMS):
        due = now + rng.uniform(-6 * 3600, 600)  # most are due, some due within the next 10 minutes
        pending.append(
            Pending(
                id=f"d{n:04d}",
                conversation_id=f"c{rng.randrange(CONVERSATIONS):02d}",
                purpose=rng.choice(PURPOSES),
                text=rng.choice(("X 降价了:现在 ¥199(昨天 ¥259)。", "Report ready: the cheapest A100 is X.")),
                due_at=due,
                created_at=due,
                attempts=rng.choice((0, 0, 0, 0, 1)),
                unsolicited=rng.random() < 0.95,
            )
        )
    return pending, facts


def measure(now: float) -> tuple[float, Counter[str]]:
    """Median seconds per `decide` call over 1,000 pending items, and what it decided."""
    pending, facts = workload(now)
    quiet = QuietHours()
    decisions = decide(now, pending, facts, quiet)  # warm the zone and parse caches
    kinds: Counter[str] = Counter()
    for d in decisions:
        kinds[d.held_reason or d.kind] += len(d.ids)
    per_call = []
    for _ in range(RUNS):
        started = time.perf_counter()
        for _ in range(CALLS_PER_RUN):
            decide(now, pending, facts, quiet)
        per_call.append((time.perf_counter() - started) / CALLS_PER_RUN)
    return statistics.median(per_call), kinds


def main() -> None:
    print(f"decide(): {ITEMS} pending deliveries, {CONVERSATIONS} conversations; median of {RUNS} runs")
    for label, now in (
        ("daytime (Shanghai 11:00)", DAYTIME),
        ("night (Shanghai 05:00, Berlin 22:00)", NIGHT),
    ):
        seconds, kinds = measure(now)
        line(f"{label}: one decide() call", f"{seconds * 1000:7.2f} ms")
        line(f"{label}: decisions per second", f"{ITEMS / seconds:,.0f}")
        line("  outcome per item", ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))


if __name__ == "__main__":
    main()

"""Figures for full-text search (issue 17 item 7, docs/desktop.md#sidebar).
Run: .venv/bin/python -m bench.bench_search [--messages N]

A real SQLite file through the real migrations gets N messages (default 50,000; a mix of English and Chinese
chat lines of 20-400 characters, in 500 conversations), written in batches through the ORM so the search
triggers of migration 14 fire as they do in the app. Printed, each beside its baseline from the same run:

- a search for a word in 1 message in 5,000 and for a Chinese word, through the trigram index, against the
  same search by LIKE (what a database without the index does);
- the time to store 1,000 messages with the triggers, against the same with the triggers dropped (what the
  index costs every write);
- the database file size with the index, against a copy with the index tables dropped and vacuumed.
"""

from __future__ import annotations

import argparse
import functools
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from bench.common import figure_table
from core.store import bots, conversations
from core.store.database import create_store_engine
from core.store.migrations import SEARCH_TABLES, run_migrations
from core.store.models import MessageRow
from core.store.search import search

WORDS_EN = [
    "price",
    "gpu",
    "flight",
    "hotel",
    "report",
    "table",
    "weekly",
    "budget",
    "check",
    "server",
    "model",
    "reply",
    "task",
    "rule",
]
WORDS_ZH = ["价格", "机票", "酒店", "报告", "表格", "每周", "预算", "检查", "服务器", "模型", "回复", "任务"]
RARE_EN = "zanzibar"
RARE_ZH = "成都东站"
RARE_EVERY = 5000


def line_of(rng: random.Random, n: int) -> str:
    if n % RARE_EVERY == 0:
        return f"we talked about {RARE_EN} and {RARE_ZH} again"
    pool = WORDS_ZH if n % 2 else WORDS_EN
    joiner = "" if n % 2 else " "
    return joiner.join(rng.choice(pool) for _ in range(rng.randint(5, 60)))


def fill(engine: Engine, count: int) -> None:
    rng = random.Random(17)
    with Session(engine) as s, s.begin():
        bots.insert_bot(s, id="b_1", name="Bench", workspace="/ws", now=1.0)
        for c in range(500):
            conversations.insert_conversation(s, id=f"c_{c}", bot_id="b_1", title=f"Chat {c}", now=1.0)
    for start in range(0, count, 5000):
        with Session(engine) as s, s.begin():
            s.add_all(
                MessageRow(
                    conversation_id=f"c_{n % 500}",
                    role="user" if n % 2 else "assistant",
                    text=line_of(rng, n),
                    state="done",
                    created_at=float(n),
                )
                for n in range(start, min(start + 5000, count))
            )


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.1f} ms, max {max(values) * 1000:.1f} ms"


def write_thousand(engine: Engine, offset: int) -> float:
    rng = random.Random(offset)
    t0 = time.perf_counter()
    for batch in range(10):  # ten transactions of 100, as a busy afternoon writes them
        with Session(engine) as s, s.begin():
            s.add_all(
                MessageRow(
                    conversation_id="c_1",
                    role="assistant",
                    text=line_of(rng, offset + batch * 100 + i + 1),
                    state="done",
                    created_at=1e9,
                )
                for i in range(100)
            )
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--messages", type=int, default=50_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "errand.db"
        engine = create_store_engine(f"sqlite:///{path}")
        run_migrations(engine, now=1.0)
        t0 = time.perf_counter()
        fill(engine, args.messages)
        filled = time.perf_counter() - t0

        rows: list[tuple[str, str, str]] = []
        with Session(engine) as s:
            for word in (RARE_EN, RARE_ZH):
                fts = timed(functools.partial(search, s, word, limit=30, indexed=True), 20)
                like = timed(functools.partial(search, s, word, limit=30, indexed=False), 20)
                found = len(search(s, word, limit=30, indexed=True))
                assert found == len(search(s, word, limit=30, indexed=False))
                rows.append(
                    (f"search {word!r} ({found} hits)", f"FTS5 trigram {ms(fts)}", f"LIKE {ms(like)}")
                )

        with_triggers = [write_thousand(engine, 10_000_000 + k * 1000) for k in range(3)]
        shutil.copy(path, Path(tmp) / "plain.db")
        plain_engine = create_store_engine(f"sqlite:///{Path(tmp) / 'plain.db'}")
        with plain_engine.begin() as conn:
            for (name,) in conn.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'search_%'"
            ).all():
                conn.exec_driver_sql(f'DROP TRIGGER "{name}"')
        without = [write_thousand(plain_engine, 20_000_000 + k * 1000) for k in range(3)]
        rows.append(
            ("store 1,000 messages (10 transactions)", f"with index {ms(with_triggers)}", ms(without))
        )
        plain_engine.dispose()
        engine.dispose()

        plain = Path(tmp) / "plain.db"
        db = sqlite3.connect(plain)
        for table in SEARCH_TABLES:
            db.execute(f"DROP TABLE IF EXISTS {table}")
        db.commit()
        db.execute("VACUUM")
        db.close()
        rows.append(
            (
                "database file",
                f"with index {path.stat().st_size / 2**20:.1f} MB",
                f"without {plain.stat().st_size / 2**20:.1f} MB",
            )
        )
    print(f"{args.messages} messages stored in {filled:.1f} s (through the ORM, triggers on)")
    figure_table(rows, "search")


if __name__ == "__main__":
    main()

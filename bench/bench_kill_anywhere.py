"""Figures for crash safety (issue 12). Run: .venv/bin/python -m bench.bench_kill_anywhere [--seeds 3]

The kill-anywhere harness of the test suite (`tests/kill_anywhere.py`) over several seeds: a real
`errand serve` SIGKILLed at every point where a crash could lose or double something, per seed 30 task
lifecycles with follow-ups. It prints, per seed: lifecycles, kills by point, lost inputs, lost results,
duplicate deliveries, tasks finished, and the time from a restart to a recovered run's first request.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
from pathlib import Path

from tests.fakes.model_server import ScriptedModelServer
from tests.kill_anywhere import Figures, KillHarness


async def one_seed(seed: int, lifecycles: int, kills: int) -> Figures:
    with tempfile.TemporaryDirectory(prefix="errand-kill-") as tmp:
        root = Path(tmp)
        home = root / "home"
        home.mkdir()
        async with ScriptedModelServer() as server:
            return await KillHarness(root, server, home, seed).run(lifecycles=lifecycles, min_kills=kills)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--seed", type=int, action="append", help="a seed to run (repeatable)")
    parser.add_argument("--lifecycles", type=int, default=30)
    parser.add_argument("--kills", type=int, default=36)
    args = parser.parse_args()
    seeds = args.seed or [random.randrange(1_000_000) for _ in range(args.seeds)]
    recover: list[float] = []
    for seed in seeds:
        figures = await one_seed(seed, args.lifecycles, args.kills)
        print(figures.summary())
        for problem in figures.problems():
            print("  PROBLEM", problem)
        recover += figures.recover_s
    if recover:
        median, worst = statistics.median(recover) * 1000, max(recover) * 1000
        print(
            f"all seeds: restart to first recovered request median {median:.0f} ms, "
            f"max {worst:.0f} ms over {len(recover)} restarts"
        )


if __name__ == "__main__":
    asyncio.run(main())

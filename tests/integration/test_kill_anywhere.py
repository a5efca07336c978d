"""The kill-anywhere test: a real `errand serve` SIGKILLed at every point where a crash could lose or
double something (see `tests/kill_anywhere.py`), over 30 task lifecycles with follow-ups.

The seed is random and printed; set ERRAND_KILL_SEED to replay one."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from tests.fakes.model_server import ScriptedModelServer
from tests.kill_anywhere import KillHarness

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


async def test_killed_anywhere_nothing_is_lost_nothing_sent_twice_and_every_task_ends(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    seed = int(os.environ.get("ERRAND_KILL_SEED") or random.randrange(1_000_000))
    print(f"kill-anywhere seed {seed} (replay with ERRAND_KILL_SEED={seed})")
    figures = await KillHarness(tmp_path, model_server, home, seed).run(lifecycles=30, min_kills=36)
    print(figures.summary())
    assert not figures.problems(), f"seed {seed}: " + "; ".join(figures.problems())
    assert figures.tasks_finished == 30
    assert all(figures.kills[p] > 0 for p in ("after_post", "first_step", "run_ended", "startup")), figures

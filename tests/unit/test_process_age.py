"""The start-up probe's clock: a new process's age is what its parent saw it take, not a second more."""

from __future__ import annotations

import subprocess
import sys
import time

from app.process_age import process_age


def test_a_new_process_is_not_older_than_the_time_since_it_was_spawned() -> None:
    # The old clock (psutil's create time against time.time()) said ~0.9 s for a process 30 ms old.
    spawned = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", "from app.process_age import process_age; print(process_age())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    waited = time.monotonic() - spawned
    age = float(out)
    assert 0 < age <= waited + 0.02  # one clock tick of slack


def test_this_process_has_been_alive_a_while_and_its_age_grows() -> None:
    first = process_age()
    second = process_age()
    assert 0 < first <= second

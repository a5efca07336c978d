"""The data-dir lock: one Errand per data dir, released on release() and when the holder dies."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.instance_lock import LOCK_FILE_NAME, DataDirInUseError, DataDirLock

REPO_ROOT = Path(__file__).resolve().parents[2]

TRY_ACQUIRE = """
import sys
from pathlib import Path
from app.instance_lock import DataDirInUseError, DataDirLock
try:
    DataDirLock(Path(sys.argv[1])).acquire()
except DataDirInUseError as error:
    print(error)
    sys.exit(3)
print("acquired")
"""

HOLD_UNTIL_STDIN_CLOSES = """
import sys
from pathlib import Path
from app.instance_lock import DataDirLock
lock = DataDirLock(Path(sys.argv[1]))
lock.acquire()
print("held", flush=True)
sys.stdin.read()
"""


def in_use_message(data_dir: Path, pid: int) -> str:
    return (
        f"Another Errand is already using {data_dir} (pid {pid}). "
        "Quit it first, or start this one with --data-dir <another folder>."
    )


def try_acquire_in_another_process(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", TRY_ACQUIRE, str(data_dir)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def holder_process(data_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process that holds the lock until its stdin closes (or it is killed)."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD_UNTIL_STDIN_CLOSES, str(data_dir)],
        cwd=REPO_ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "held"  # blocks until the child holds the lock
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=30)


def test_a_second_lock_in_this_process_is_refused_until_release(data_dir: Path) -> None:
    first = DataDirLock(data_dir)
    first.acquire()
    second = DataDirLock(data_dir)

    with pytest.raises(DataDirInUseError) as raised:
        second.acquire()

    assert str(raised.value) == in_use_message(data_dir, os.getpid())
    assert raised.value.pid == os.getpid()
    assert not second.held

    first.release()
    second.acquire()
    assert second.held
    second.release()


def test_the_lock_file_names_the_holder_while_held(data_dir: Path) -> None:
    with DataDirLock(data_dir) as lock:
        assert lock.held
        assert (data_dir / LOCK_FILE_NAME).read_text().strip() == str(os.getpid())
    assert not lock.held
    assert (data_dir / LOCK_FILE_NAME).read_text() == ""


def test_the_context_manager_releases_on_error(data_dir: Path) -> None:
    with pytest.raises(KeyError), DataDirLock(data_dir):
        raise KeyError("boom")
    with DataDirLock(data_dir) as again:
        assert again.held


def test_acquiring_twice_on_one_instance_is_a_bug(data_dir: Path) -> None:
    with DataDirLock(data_dir) as lock, pytest.raises(RuntimeError, match="already held"):
        lock.acquire()
    lock.release()  # releasing when not held is harmless


@pytest.mark.slow
def test_another_process_is_refused_with_our_pid_then_admitted_after_release(data_dir: Path) -> None:
    lock = DataDirLock(data_dir)
    lock.acquire()

    refused = try_acquire_in_another_process(data_dir)
    assert refused.returncode == 3, refused.stderr
    assert refused.stdout.strip() == in_use_message(data_dir, os.getpid())

    lock.release()
    admitted = try_acquire_in_another_process(data_dir)
    assert admitted.returncode == 0, admitted.stderr
    assert admitted.stdout.strip() == "acquired"


@pytest.mark.slow
def test_a_lock_held_by_another_process_names_it(
    data_dir: Path, holder_process: subprocess.Popen[str]
) -> None:
    with pytest.raises(DataDirInUseError) as raised:
        DataDirLock(data_dir).acquire()
    assert str(raised.value) == in_use_message(data_dir, holder_process.pid)


@pytest.mark.slow
def test_the_lock_is_free_again_once_its_holder_is_killed(
    data_dir: Path, holder_process: subprocess.Popen[str]
) -> None:
    with pytest.raises(DataDirInUseError):
        DataDirLock(data_dir).acquire()

    holder_process.kill()  # SIGKILL: no chance to release anything itself
    holder_process.wait(timeout=30)

    with DataDirLock(data_dir) as lock:
        assert lock.held


@pytest.mark.slow
def test_the_lock_is_free_again_once_its_holder_exits(
    data_dir: Path, holder_process: subprocess.Popen[str]
) -> None:
    holder_process.communicate(timeout=30)  # closes its stdin; it exits without calling release()
    assert holder_process.returncode == 0

    with DataDirLock(data_dir) as lock:
        assert lock.held

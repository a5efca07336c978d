"""The command check: run by the host in the task folder under the task's sandbox and guard, passing on
exit 0, its verdict quoting why it failed; and the folder fingerprint that tells a round changed nothing
(docs/goals.md#checks)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.agent.sandbox import PathGuard, Permission, Preset, ShellSandbox
from core.clock import SystemClock
from core.goals.acceptance import CommandCheck
from core.goals.command_checks import run_command_check
from core.goals.progress import folder_fingerprint
from core.guard.guard import ToolGuard


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "ws" / "tasks" / "t1").mkdir(parents=True)
    return tmp_path / "ws" / "tasks" / "t1"


def _sandbox(folder: Path) -> tuple[ShellSandbox, PathGuard]:
    permission = Permission(Preset.WORKSPACE_WRITE, folder.parent.parent)
    home = folder.parent.parent.parent / "home"
    return ShellSandbox.detect(permission, home), PathGuard(permission, home)


async def test_a_command_passes_on_exit_0_in_the_task_folder(folder: Path) -> None:
    (folder / "ok.txt").write_text("x")
    shell, _ = _sandbox(folder)
    verdict = await run_command_check(CommandCheck("test -f ok.txt"), folder, shell, SystemClock())
    assert (verdict.passed, verdict.source, verdict.detail) == (True, "command", "`test -f ok.txt` exited 0")


async def test_a_failing_command_is_told_with_the_end_of_its_output(folder: Path) -> None:
    shell, _ = _sandbox(folder)
    command = "for i in $(seq 1 2000); do echo line $i; done; echo '2 tests failed' >&2; exit 3"
    verdict = await run_command_check(CommandCheck(command), folder, shell, SystemClock())
    assert not verdict.passed
    assert verdict.detail.startswith(f"`{command}` exited 3; its output ended with:\n…")
    assert verdict.detail.endswith("line 2000\n2 tests failed")
    assert "line 1\n" not in verdict.detail


async def test_a_command_past_its_time_is_stopped_and_fails(folder: Path) -> None:
    shell, _ = _sandbox(folder)
    verdict = await run_command_check(
        CommandCheck("echo started; sleep 30", timeout_s=1), folder, shell, SystemClock()
    )
    assert not verdict.passed
    assert "did not finish within 1 s and was stopped" in verdict.detail and "started" in verdict.detail


async def test_the_guard_refuses_a_destructive_check_before_it_runs(folder: Path) -> None:
    shell, paths = _sandbox(folder)
    marker = folder / "still-here"
    marker.write_text("x")
    verdict = await run_command_check(
        CommandCheck("rm -rf ../.."), folder, shell, SystemClock(), guard=ToolGuard(), paths=paths
    )
    assert not verdict.passed and "was not run: rule cmd/recursive-force-delete" in verdict.detail
    assert marker.exists()


def test_the_fingerprint_changes_with_any_file_and_not_otherwise(folder: Path) -> None:
    (folder / "a.txt").write_text("one")
    first = folder_fingerprint(folder)
    assert folder_fingerprint(folder) == first
    (folder / "sub").mkdir()
    (folder / "sub" / "b.txt").write_text("two")
    second = folder_fingerprint(folder)
    assert second != first
    os.utime(folder / "a.txt", ns=(1, 1))
    assert folder_fingerprint(folder) != second
    (folder / ".git").mkdir()
    (folder / ".git" / "index").write_text("noise")
    third = folder_fingerprint(folder)
    (folder / ".git" / "index").write_text("more noise")
    assert folder_fingerprint(folder) == third

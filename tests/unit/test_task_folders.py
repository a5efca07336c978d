"""Deleting a task folder removes that folder and nothing else, whatever the task left in its place."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.tasks.folders import remove_folder, task_folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    made = tmp_path / "workspace"
    (made / "tasks").mkdir(parents=True)
    return made


def _with_file(folder: Path, name: str = "notes.md") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("kept", encoding="utf-8")
    return folder / name


def test_a_task_folder_and_everything_in_it_is_deleted(workspace: Path) -> None:
    folder = task_folder(workspace, "GPU prices", "t_a1")
    _with_file(folder / "deep" / "er")
    remove_folder(folder, workspace)
    assert not folder.exists() and (workspace / "tasks").is_dir()


def test_a_folder_replaced_by_a_link_to_another_tasks_folder_deletes_only_the_link(workspace: Path) -> None:
    other = _with_file(task_folder(workspace, "Other", "t_b2"))
    folder = task_folder(workspace, "GPU prices", "t_a1")
    folder.symlink_to(other.parent, target_is_directory=True)
    remove_folder(folder, workspace)
    assert not folder.exists() and not folder.is_symlink()
    assert other.read_text(encoding="utf-8") == "kept"


def test_a_link_inside_the_folder_is_removed_not_followed(workspace: Path, tmp_path: Path) -> None:
    outside = _with_file(tmp_path / "home" / "Documents")
    folder = task_folder(workspace, "GPU prices", "t_a1")
    folder.mkdir()
    (folder / "docs").symlink_to(outside.parent, target_is_directory=True)
    remove_folder(folder, workspace)
    assert not folder.exists() and outside.read_text(encoding="utf-8") == "kept"


def test_a_folder_outside_the_tasks_folder_is_refused_and_left_alone(workspace: Path, tmp_path: Path) -> None:
    outside = _with_file(tmp_path / "home" / "Documents")
    with pytest.raises(ValueError, match="not a task folder"):
        remove_folder(outside.parent, workspace)
    with pytest.raises(ValueError, match="not a task folder"):
        remove_folder(workspace / "tasks" / ".." / ".." / "home" / "Documents", workspace)
    assert outside.read_text(encoding="utf-8") == "kept"

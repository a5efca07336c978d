"""Task folders: `tasks/<slug>-<id>/` inside the bot workspace (docs/domain.md#tasks), and their sizes."""

from __future__ import annotations

import os
import re
import shutil
import unicodedata
from pathlib import Path

MAX_SLUG = 32


def slug(title: str) -> str:
    """A short, filesystem-safe name from the title; CJK titles keep their characters."""
    text = unicodedata.normalize("NFKC", title).strip().lower()
    text = re.sub(r"[^\w]+", "-", text, flags=re.UNICODE).strip("-_")
    return text[:MAX_SLUG].strip("-_") or "task"


def task_folder(workspace: Path, title: str, task_id: str) -> Path:
    return workspace / "tasks" / f"{slug(title)}-{task_id.removeprefix('t_')}"


def subtask_folder(task_folder: Path, title: str, task_id: str) -> Path:
    """A planned task's subtask works in a folder inside the planned task's (docs/plans.md#subtasks)."""
    return task_folder / "parts" / f"{slug(title)}-{task_id.removeprefix('t_')}"


def folder_size(folder: Path) -> int:
    """Bytes under `folder` (0 when missing). Blocking: call it off the loop."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += (Path(root) / name).lstat().st_size
            except OSError:
                continue
    return total


def remove_folder(folder: Path, workspace: Path) -> None:
    """Delete a task folder; refuses anything that is not inside the bot workspace's tasks folder.

    The folder's own name is never followed: if a task (whose agent may write anywhere in the workspace)
    replaced its folder with a link, to another task's folder say, the link goes and what it points at
    stays."""
    tasks_root = (workspace / "tasks").resolve()
    target = folder.parent.resolve() / folder.name
    if tasks_root not in target.parents:
        raise ValueError(f"refusing to delete {target}: not a task folder under {tasks_root}")
    if target.is_symlink() or target.is_file():
        target.unlink(missing_ok=True)
        return
    shutil.rmtree(target, ignore_errors=True)

"""`errand reset --data-dir D`: remove one Errand data dir once the person confirms (docs/packaging.md#data).

Only a folder that holds Errand's data is removed (a typo must not empty some other folder), never while an
Errand holds it, and never without a confirmation typed at the prompt or `--yes`. Keys in the OS keyring are
shared by every data dir on the account, so they stay; the message says where.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from app.instance_lock import DataDirInUseError, DataDirLock

# Any of these says the folder is an Errand data dir (a dir that only ever ran `doctor` has just the lock).
MARKERS = ("errand.db", "sessions", "bots", "logs", "api.json", "secrets.json")


def folder_size(path: Path) -> int:
    total = 0
    for item in path.rglob("*"):
        try:
            if item.is_file() and not item.is_symlink():
                total += item.stat().st_size
        except OSError:
            continue
    return total


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def readable_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def run_reset(
    data_dir: Path,
    *,
    assume_yes: bool,
    ask: Callable[[str], str] = input,
    interactive: bool | None = None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    if not data_dir.exists():
        print(f"errand: {data_dir} does not exist; there is nothing to remove.", file=err)
        return 0
    if not data_dir.is_dir() or not any((data_dir / m).exists() for m in MARKERS):
        print(
            f"errand: {data_dir} does not look like an Errand data dir (it has none of "
            f"{', '.join(MARKERS)}); nothing was removed. Check the path.",
            file=err,
        )
        return 2
    lock = DataDirLock(data_dir)
    try:
        lock.acquire()
    except DataDirInUseError as exc:
        print(f"errand: {exc}. Quit that Errand first; nothing was removed.", file=err)
        return 1
    try:
        if not assume_yes:
            if not (sys.stdin.isatty() if interactive is None else interactive):
                print(
                    "errand: reset asks for a confirmation at the terminal; from a script, add --yes. "
                    "Nothing was removed.",
                    file=err,
                )
                return 2
            print(
                f"This removes {data_dir} ({readable_size(folder_size(data_dir))}): every bot, conversation, "
                "task, rule, task folder and log in it. It cannot be undone.",
                file=out,
            )
            answer = ask(f"Type the folder's name ({data_dir.name}) to remove it: ").strip()
            if answer != data_dir.name:
                print("Nothing was removed.", file=out)
                return 1
        # Everything but the lock file while it is held (Windows cannot remove an open file), then the rest.
        for child in data_dir.iterdir():
            if child != lock.path:
                _remove(child)
        lock.release()
        lock.path.unlink(missing_ok=True)
        data_dir.rmdir()
    except OSError as exc:
        print(f"errand: could not remove all of {data_dir}: {exc}", file=err)
        return 1
    finally:
        lock.release()
    print(
        f"Removed {data_dir}. API keys kept in the OS keyring (service 'errand') stay there; remove them in "
        "your keyring app if you no longer want them.",
        file=out,
    )
    return 0

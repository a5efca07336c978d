"""What `errand install-desktop` and `uninstall-desktop` do and say (docs/packaging.md#launcher)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from app.autostart import LoginStart, launch_command, login_start_for
from app.launcher_entry import (
    NoXdgDirsError,
    data_home,
    entry_path,
    icon_paths,
    install,
    refresh_desktop_caches,
    render_png_with_qt,
    uninstall,
)
from ui.assets import icon_path


def run_install_desktop(
    env: Mapping[str, str] = os.environ,
    platform: str = sys.platform,
    render_png: Callable[[bytes, int], bytes] = render_png_with_qt,
    refresh: Callable[[Path], None] = refresh_desktop_caches,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    try:
        share = data_home(env, platform)
        changes = install(share, launch_command(), icon_path("errand").read_bytes(), render_png)
    except NoXdgDirsError as exc:
        print(f"errand: {exc}", file=err)
        return 2
    except OSError as exc:
        print(f"errand: could not write the launcher entry: {exc}. Nothing else was changed.", file=err)
        return 1
    if not changes.written:
        print(f"Errand is already in the launcher ({share / 'applications'}); nothing changed.", file=out)
        return 0
    refresh(share)
    print(
        f"Errand is in the launcher now: {entry_path(share)}, with its icon at "
        f"{len(icon_paths(share))} sizes under {share / 'icons' / 'hicolor'}. "
        "Remove it with `errand uninstall-desktop`.",
        file=out,
    )
    return 0


def run_uninstall_desktop(
    data_dir: Path,
    env: Mapping[str, str] = os.environ,
    platform: str = sys.platform,
    login_start: LoginStart | None = None,
    refresh: Callable[[Path], None] = refresh_desktop_caches,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    try:
        share = data_home(env, platform)
        changes = uninstall(share)
        at_login = login_start or login_start_for(platform, env)
        started_at_login = at_login.is_on()
        at_login.turn_off()
    except NoXdgDirsError as exc:
        print(f"errand: {exc}", file=err)
        return 2
    except OSError as exc:
        print(f"errand: could not remove the launcher entry: {exc}", file=err)
        return 1
    if changes.removed:
        refresh(share)
    said = "Removed Errand from the launcher" if changes.removed else "Errand was not in the launcher"
    login = " and stopped it starting at login" if started_at_login else ""
    print(
        f"{said}{login}. Your data stays in {data_dir}; `errand reset --data-dir {data_dir}` removes it.",
        file=out,
    )
    return 0

"""Start at login, the way each system does it (docs/packaging.md#start-at-login).

- Linux and other freedesktop systems: an XDG autostart entry, `$XDG_CONFIG_HOME/autostart/errand.desktop`.
  Desktops that follow the XDG autostart spec (GNOME, KDE, Xfce, ...) launch every `.desktop` file there
  when the person logs in.
- macOS: a LaunchAgent plist (app/launch_agent.py).
- Windows: a value under the current user's Run registry key (app/run_key.py).

Each is one file or value that exists exactly while start at login is on; turning it off removes it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from app.desktop_file import ENTRY_NAME, desktop_entry
from app.launch_agent import LaunchAgent
from app.run_key import RunKey, RunKeyLogin, WinregRunKey


class LoginStart(Protocol):
    def is_on(self) -> bool: ...
    def turn_on(self, command: Sequence[str]) -> None: ...
    def turn_off(self) -> None: ...


def config_home(env: Mapping[str, str] = os.environ, home: Path | None = None) -> Path:
    config = env.get("XDG_CONFIG_HOME", "").strip()
    # The spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
    if config and Path(config).is_absolute():
        return Path(config)
    return (home or Path.home()) / ".config"


class XdgAutostart:
    def __init__(self, config: Path) -> None:
        self.path = config / "autostart" / ENTRY_NAME

    def is_on(self) -> bool:
        return self.path.is_file()

    def turn_on(self, command: Sequence[str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Written beside and renamed over, so a crash never leaves a half entry the desktop would choke on.
        partial = self.path.with_suffix(".desktop.partial")
        partial.write_text(desktop_entry(command, autostart=True), encoding="utf-8")
        partial.replace(self.path)

    def turn_off(self) -> None:
        self.path.unlink(missing_ok=True)


def login_start_for(
    platform: str = sys.platform,
    env: Mapping[str, str] = os.environ,
    home: Path | None = None,
    run_key: RunKey | None = None,
) -> LoginStart:
    """This system's way of starting Errand at login."""
    if platform == "win32":
        return RunKeyLogin(run_key or WinregRunKey())
    if platform == "darwin":
        return LaunchAgent(home or Path.home())
    return XdgAutostart(config_home(env, home))


def launch_command(executable: str = sys.executable, frozen: bool | None = None) -> list[str]:
    """How to start this Errand again: the bundle's executable, else this interpreter running the CLI (the
    same in a venv, a pipx install or the source tree's editable install)."""
    if frozen if frozen is not None else getattr(sys, "frozen", False):
        return [executable]
    return [executable, "-m", "app.cli"]


def set_start_at_login(enabled: bool, login_start: LoginStart | None = None) -> None:
    """Turn start at login on (for this install's launch command) or off. Raises OSError when the entry
    can't be written."""
    target = login_start or login_start_for()
    if enabled:
        target.turn_on(launch_command())
    else:
        target.turn_off()

"""Start at login: an XDG autostart entry on Linux (`$XDG_CONFIG_HOME/autostart/errand.desktop`).

Desktops that follow the XDG autostart spec (GNOME, KDE, Xfce, ...) launch every `.desktop` file in that
folder when the person logs in; removing the file is all it takes to stop. Other platforms have their own
mechanisms (a LaunchAgent plist, the Run registry key) that are not built yet: asking for them raises
NotImplementedError with a message the settings dialog shows as it is.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ENTRY_NAME = "errand.desktop"


def autostart_dir() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    # The spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
    base = Path(config) if config and Path(config).is_absolute() else Path.home() / ".config"
    return base / "autostart"


def entry_path() -> Path:
    return autostart_dir() / ENTRY_NAME


# Characters that make the desktop-entry spec require a double-quoted argument.
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def exec_quote(args: list[str]) -> str:
    """An Exec= line for these arguments. The desktop-entry spec knows only double quotes (not the shell's
    single quotes), escapes `"`, `` ` ``, `$` and `\\` inside them, and reserves `%` for field codes."""
    quoted = []
    for raw in args:
        arg = raw.replace("%", "%%")
        if arg and not _RESERVED.intersection(arg):
            quoted.append(arg)
            continue
        escaped = "".join(f"\\{ch}" if ch in '"`$\\' else ch for ch in arg)
        quoted.append(f'"{escaped}"')
    return " ".join(quoted)


def launch_command() -> str:
    """How to start this Errand again: the frozen executable, else this interpreter running the CLI."""
    if getattr(sys, "frozen", False):
        return exec_quote([sys.executable])
    return exec_quote([sys.executable, "-m", "app.cli"])


def desktop_entry(command: str) -> str:
    # A desktop file's string values unescape backslashes once before the Exec quoting applies.
    exec_value = command.replace("\\", "\\\\")
    return "\n".join(
        [
            "[Desktop Entry]",
            "Type=Application",
            "Name=Errand",
            "Comment=Desktop assistant that works in the background",
            f"Exec={exec_value}",
            "Icon=errand",
            "Terminal=false",
            "X-GNOME-Autostart-enabled=true",
            "",
        ]
    )


def is_start_at_login() -> bool:
    return sys.platform.startswith("linux") and entry_path().is_file()


def set_start_at_login(enabled: bool, command: str) -> None:
    """Write (or remove) the autostart entry. Raises NotImplementedError off Linux, OSError when the folder
    can't be written."""
    if not sys.platform.startswith("linux"):
        raise NotImplementedError(
            f"Start at login is not supported on this system ({sys.platform}) yet; "
            "add Errand to your login items by hand."
        )
    path = entry_path()
    if not enabled:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    # Written beside and renamed over, so a crash never leaves a half entry the desktop would choke on.
    partial = path.with_suffix(".desktop.partial")
    partial.write_text(desktop_entry(command), encoding="utf-8")
    partial.replace(path)

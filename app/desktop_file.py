"""Errand's freedesktop desktop entry: one text for the launcher, the start-at-login entry and
`packaging/errand.desktop` (docs/packaging.md#launcher).

The launcher and autostart entries differ only in their Exec line (the command that starts this install)
and one key GNOME reads to switch an autostart entry off.
"""

from __future__ import annotations

from collections.abc import Sequence

ENTRY_NAME = "errand.desktop"
ICON_NAME = "errand"

# Characters that make the desktop-entry spec require a double-quoted argument.
_RESERVED = set(" \t\n\"'\\><~|&;$*?#()`")


def exec_quote(args: Sequence[str]) -> str:
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


def desktop_entry(command: Sequence[str], *, autostart: bool = False) -> str:
    """The entry that starts `command`; `autostart` adds what a login start needs."""
    # A desktop file's string values unescape backslashes once before the Exec quoting applies.
    exec_value = exec_quote(command).replace("\\", "\\\\")
    lines = [
        "[Desktop Entry]",
        "Type=Application",
        "Name=Errand",
        "GenericName=Background assistant",
        "GenericName[zh_CN]=后台助手",
        "Comment=Chat with your bots; they do long work in the background",
        "Comment[zh_CN]=和你的机器人聊天,长时间的工作它们在后台完成",
        f"Exec={exec_value}",
        f"Icon={ICON_NAME}",
        "Terminal=false",
        "Categories=Utility;Office;",
        "StartupNotify=true",
        # The window's class and the Wayland app id (QGuiApplication.desktopFileName) both name this entry,
        # so docks group the window under the launcher's icon.
        "StartupWMClass=Errand",
    ]
    if autostart:
        lines.append("X-GNOME-Autostart-enabled=true")
    return "\n".join([*lines, ""])

"""Start at login on Windows: a value under the current user's Run registry key
(docs/packaging.md#start-at-login).

Explorer starts every command named under `HKCU\\Software\\Microsoft\\Windows\\CurrentVersion\\Run` when the
person logs in; deleting the value stops it. The registry is reached through `RunKey`, so the same code
runs against a dict in tests on any system.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

RUN_KEY = r"Software\Microsoft\Windows\CurrentVersion\Run"
VALUE_NAME = "Errand"


class RunKey(Protocol):
    """One named string value under the Run key."""

    def read(self, name: str) -> str | None: ...
    def write(self, name: str, value: str) -> None: ...
    def delete(self, name: str) -> None: ...


class WinregRunKey:
    """The real key, through `winreg` (which exists only on Windows, so it is imported on use)."""

    def read(self, name: str) -> str | None:
        if sys.platform != "win32":
            raise OSError("the Windows registry exists only on Windows")
        import winreg

        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
                value, _kind = winreg.QueryValueEx(key, name)
        except FileNotFoundError:
            return None
        return str(value)

    def write(self, name: str, value: str) -> None:
        if sys.platform != "win32":
            raise OSError("the Windows registry exists only on Windows")
        import winreg

        with winreg.CreateKey(winreg.HKEY_CURRENT_USER, RUN_KEY) as key:
            winreg.SetValueEx(key, name, 0, winreg.REG_SZ, value)

    def delete(self, name: str) -> None:
        if sys.platform != "win32":
            raise OSError("the Windows registry exists only on Windows")
        import winreg

        try:
            with winreg.OpenKey(winreg.HKEY_CURRENT_USER, RUN_KEY, 0, winreg.KEY_SET_VALUE) as key:
                winreg.DeleteValue(key, name)
        except FileNotFoundError:
            pass


def windowless(command: Sequence[str]) -> list[str]:
    """The command with python.exe swapped for its windowless twin, so a login start opens no console."""
    args = list(command)
    if args and Path(args[0]).name.lower() == "python.exe":
        pythonw = Path(args[0]).with_name("pythonw.exe")
        if pythonw.is_file():
            args[0] = str(pythonw)
    return args


class RunKeyLogin:
    def __init__(self, key: RunKey) -> None:
        self._key = key

    def is_on(self) -> bool:
        return self._key.read(VALUE_NAME) is not None

    def turn_on(self, command: Sequence[str]) -> None:
        # The Run key holds one command line, quoted the way Windows programs parse it.
        self._key.write(VALUE_NAME, subprocess.list2cmdline(windowless(command)))

    def turn_off(self) -> None:
        self._key.delete(VALUE_NAME)

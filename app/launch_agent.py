"""Start at login on macOS: a LaunchAgent in `~/Library/LaunchAgents` (docs/packaging.md#start-at-login).

launchd reads every plist in that folder when the person logs in and starts the ones with RunAtLoad;
removing the file is all it takes to stop. No `launchctl` call is needed for the next login.
"""

from __future__ import annotations

import plistlib
from collections.abc import Sequence
from pathlib import Path

LABEL = "app.errand.Errand"


class LaunchAgent:
    def __init__(self, home: Path) -> None:
        self.path = home / "Library" / "LaunchAgents" / f"{LABEL}.plist"

    def is_on(self) -> bool:
        return self.path.is_file()

    def turn_on(self, command: Sequence[str]) -> None:
        agent = {
            "Label": LABEL,
            "ProgramArguments": list(command),
            "RunAtLoad": True,
            # An app a person uses: launchd neither throttles it nor restarts it after Quit.
            "ProcessType": "Interactive",
            "KeepAlive": False,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".plist.partial")
        partial.write_bytes(plistlib.dumps(agent))
        partial.replace(self.path)

    def turn_off(self) -> None:
        self.path.unlink(missing_ok=True)

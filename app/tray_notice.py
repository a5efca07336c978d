"""The first time closing the window only hides it to the tray, the tray says once (ever, per data dir) that
Errand keeps running there; after that a close is quiet. People who close a window expect the app to be
gone; finding it still answering from the tray, unexplained, reads as a bug.

"Told" is a marker file under the data dir, like the no-tray note's: simple, and it survives restarts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from app.told_once import ToldOnce
from ui.i18n import t

ShowMessage = Callable[[str, str], object]


class ClosedToTrayNotice:
    def __init__(self, data_dir: Path, show_message: ShowMessage) -> None:
        self._marker = ToldOnce(data_dir / "ui" / "closed-to-tray-told")
        self._show = show_message

    def closed_to_tray(self) -> bool:
        """The window was just hidden to the tray: say so the first time; whether it was said now. A tray
        that cannot show messages (the show returns False) leaves it untold, for a later close."""
        if self._marker.told():
            return False
        if self._show(t("tray.still_running_title"), t("tray.still_running")) is False:
            return False
        self._marker.mark_told()
        return True

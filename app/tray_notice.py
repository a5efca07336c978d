"""The first time closing the window only hides it to the tray, the tray says once (ever, per data dir) that
Errand keeps running there; after that a close is quiet. People who close a window expect the app to be
gone; finding it still answering from the tray, unexplained, reads as a bug.

"Told" is a marker file under the data dir, like the no-tray note's: simple, and it survives restarts."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from ui.i18n import t

log = logging.getLogger(__name__)

ShowMessage = Callable[[str, str], object]


class ToldOnce:
    """Whether something was said already, remembered in a marker file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def told(self) -> bool:
        return self.path.exists()

    def mark_told(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("1\n", encoding="utf-8")
        except OSError:
            log.warning("cannot remember that %s was said (%s)", self.path.name, self.path)


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

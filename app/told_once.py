"""Whether the app has said something once already (ever, per data dir), remembered in a marker file.

A marker file, not a setting: the notes that use it are said by the app before the host (and its store) is
up, and a file survives restarts just as well."""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)


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

"""Logs go to <data dir>/logs/errand.log (rotated) and, for `serve`, to stderr as well."""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path


def setup_logging(data_dir: Path, *, to_stderr: bool, level: int = logging.INFO) -> None:
    logs = data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    handlers: list[logging.Handler] = [
        logging.handlers.RotatingFileHandler(
            logs / "errand.log", maxBytes=5_000_000, backupCount=3, encoding="utf-8"
        )
    ]
    if to_stderr:
        handlers.append(logging.StreamHandler())
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    root = logging.getLogger()
    for handler in handlers:
        handler.setFormatter(fmt)
        root.addHandler(handler)
    root.setLevel(level)
    # httpx logs every request URL at INFO; keep the log about Errand.
    logging.getLogger("httpx").setLevel(logging.WARNING)

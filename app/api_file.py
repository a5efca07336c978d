"""`<data dir>/api.json`: where a running host's API is and the token to use it (mode 0600)."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_api_file(data_dir: Path, url: str, token: str) -> Path:
    path = data_dir / "api.json"
    tmp = data_dir / "api.json.tmp"
    # Created 0600 from the start, so the token is never readable by others, even for a moment.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"url": url, "token": token, "pid": os.getpid()}, f)
    os.replace(tmp, path)
    return path


def remove_api_file(data_dir: Path) -> None:
    (data_dir / "api.json").unlink(missing_ok=True)

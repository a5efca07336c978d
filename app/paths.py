"""Where Errand keeps its data: --data-dir, else ERRAND_DATA_DIR, else the platform's user data dir."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import platformdirs

APP_NAME = "Errand"


def resolve_data_dir(cli_value: str | None, env: Mapping[str, str] = os.environ) -> Path:
    raw = cli_value or env.get("ERRAND_DATA_DIR") or platformdirs.user_data_dir(APP_NAME, appauthor=False)
    return Path(raw).expanduser().resolve()

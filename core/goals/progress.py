"""Whether a goal round changed anything in the task folder (docs/goals.md#rounds): a fingerprint of every
file's path, size and modification time, taken after each round. A round that leaves it as it was made no
progress a machine check could see."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

# A folder this big is fingerprinted by its first files only (sorted walk): still a change detector.
MAX_FILES = 20_000
_SKIPPED = frozenset({".git", "__pycache__", "node_modules", ".venv"})


def folder_fingerprint(folder: Path) -> str:
    """Blocking (walks the folder): call it off the loop. The same folder gives the same text."""
    digest = hashlib.sha256()
    seen = 0
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED)
        for name in sorted(files):
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            rel = os.path.relpath(path, folder)
            digest.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
            seen += 1
            if seen >= MAX_FILES:
                return digest.hexdigest()
    return digest.hexdigest()

"""The file checks the host runs itself in a task folder: `file` (exists, not empty) and `contains`
(exists and holds the text), each giving a verdict that says what it saw (docs/goals.md#checks).

The path is resolved with its links: a link that leads out of the folder fails the check, so a criterion
can never be met by a file outside the task.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from core.goals.acceptance import ContainsCheck, FileCheck

# A file bigger than this is searched in its first part only, and the verdict says so.
CONTAINS_READ_LIMIT = 16 * 2**20

Source = Literal["command", "file", "model"]


@dataclass(frozen=True, slots=True)
class Verdict:
    passed: bool
    source: Source
    detail: str  # what was seen, in words the next round and the pushed result can quote


def _inside(folder: Path, relative: str) -> Path | None:
    root = folder.resolve()
    target = (root / relative).resolve()
    return target if target == root or root in target.parents else None


def run_file_check(folder: Path, check: FileCheck | ContainsCheck) -> Verdict:
    """Blocking (reads files): call it off the loop."""
    target = _inside(folder, check.path)
    if target is None:
        return Verdict(False, "file", f"{check.path} leads outside the task folder")
    if not target.exists():
        return Verdict(False, "file", f"{check.path} does not exist")
    if not target.is_file():
        return Verdict(False, "file", f"{check.path} is not a file")
    size = target.stat().st_size
    if isinstance(check, FileCheck):
        if size == 0:
            return Verdict(False, "file", f"{check.path} is empty")
        return Verdict(True, "file", f"{check.path} exists ({size} bytes)")
    with target.open("rb") as f:
        data = f.read(CONTAINS_READ_LIMIT)
    text = data.decode("utf-8", errors="replace")
    partly = f" (first {CONTAINS_READ_LIMIT // 2**20} MB of {size} bytes read)" if size > len(data) else ""
    if check.text in text:
        return Verdict(True, "file", f"{check.path} contains {check.text!r}{partly}")
    return Verdict(False, "file", f"{check.path} does not contain {check.text!r}{partly}")

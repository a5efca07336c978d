"""Search tools: `list_files` (glob) and `grep` (regex). Both walk in a thread and never show hidden paths."""

from __future__ import annotations

import asyncio
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, Field

from core.agent.sandbox import PathGuard
from core.agent.tool_api import ToolContext, ToolEffects, ToolError, ToolSpec

MAX_ENTRIES = 500
MAX_SCANNED = 100_000
MAX_MATCHES = 200
MAX_GREP_FILES = 20_000
MAX_GREP_FILE_BYTES = 5 * 1024 * 1024
MAX_MATCH_LINE_CHARS = 300
SKIPPED_DIRS = frozenset({".git"})

T = TypeVar("T")


class ListFilesArgs(BaseModel):
    path: str = Field(default=".", description="Directory to list; default the working directory.")
    pattern: str | None = Field(
        default=None,
        description=(
            "Glob relative to `path`: `*` and `?` match within one name, `**` matches any number of "
            "folders (e.g. `**/*.py`). Without a pattern, the directory's own entries are listed."
        ),
    )


class GrepArgs(BaseModel):
    pattern: str = Field(description="Python regular expression, searched for in each line.")
    path: str = Field(default=".", description="File or directory to search (recursively); default '.'.")


# -- walking ---------------------------------------------------------------------------------------------


def _glob_regex(pattern: str) -> re.Pattern[str]:
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    if not parts:
        raise ToolError(f"The pattern {pattern!r} matches nothing; try '*' or '**/*'.")
    out: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
        else:
            out.append(_segment_regex(part) + ("" if last else "/"))
    return re.compile("".join(out))


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        char = segment[i]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := segment.find("]", i + 2)) != -1:
            body = segment[i + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _walk(
    root: Path, guard: PathGuard, stop: threading.Event, max_depth: int | None = None
) -> Iterator[tuple[Path, bool]]:
    """(path, is_dir) for everything under `root`, sorted per folder, without .git or hidden paths."""
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        if stop.is_set():
            return
        here = Path(dirpath)
        depth = len(here.relative_to(root).parts)
        kept: list[str] = []
        for name in sorted(dirnames):
            path = here / name
            if name in SKIPPED_DIRS or _hidden(path, guard):
                continue
            yield path, True
            if not path.is_symlink():
                kept.append(name)
        # Pruning in place is how os.walk is told not to descend.
        dirnames[:] = kept if max_depth is None or depth + 1 < max_depth else []
        for name in sorted(filenames):
            path = here / name
            if not _hidden(path, guard):
                yield path, path.is_dir()


def _hidden(path: Path, guard: PathGuard) -> bool:
    # The walk starts at a real path and does not follow links, so only links need resolving.
    real = Path(os.path.realpath(path)) if path.is_symlink() else path
    return guard.is_hidden(real)


async def _in_thread(work: Callable[[threading.Event], T]) -> T:
    """Run a walk in a thread; a cancelled call tells the thread to stop early."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(work, stop)
    except asyncio.CancelledError:
        stop.set()
        raise


def _shown(path: Path, cwd: Path, guard: PathGuard) -> str:
    """A path the model can pass back to another tool: relative to the working directory when inside it."""
    if path.is_relative_to(cwd) and path != cwd:
        return path.relative_to(cwd).as_posix()
    return guard.display(path)


# -- list_files ------------------------------------------------------------------------------------------


def _list(root: Path, pattern: str, guard: PathGuard, stop: threading.Event) -> tuple[list[str], int, bool]:
    regex = _glob_regex(pattern)
    parts = [p for p in pattern.split("/") if p not in ("", ".")]
    max_depth = None if "**" in parts else len(parts)
    shown: list[str] = []
    more = 0
    for scanned, (path, is_dir) in enumerate(_walk(root, guard, stop, max_depth), start=1):
        if scanned > MAX_SCANNED:
            return shown, more, True
        rel = path.relative_to(root).as_posix()
        if regex.fullmatch(rel):
            if len(shown) < MAX_ENTRIES:
                shown.append(rel + "/" if is_dir else rel)
            else:
                more += 1
    return shown, more, False


async def list_files(ctx: ToolContext, args: ListFilesArgs) -> str:
    root = ctx.guard.resolve_read(args.path, ctx.cwd)
    where = ctx.guard.display(root)
    if not root.exists():
        raise ToolError(f"Directory not found: {where}")
    if not root.is_dir():
        raise ToolError(f"{where} is a file, not a directory; use read_file to read it.")
    pattern = (args.pattern or "*").strip()
    if pattern.startswith("/"):
        raise ToolError("The pattern is relative to `path`; pass the folder as `path`, not a leading '/'.")
    shown, more, gave_up = await _in_thread(lambda stop: _list(root, pattern, ctx.guard, stop))
    if not shown:
        return f"{where} is empty." if args.pattern is None else f"Nothing in {where} matches {pattern!r}."
    lines = [f"{where} ({'entries' if args.pattern is None else f'matching {pattern!r}'}):", *sorted(shown)]
    if gave_up:
        lines.append(
            f"[Stopped after scanning {MAX_SCANNED} entries ({more}+ more matched); narrow the path.]"
        )
    elif more:
        lines.append(f"[... and {more} more not shown. Narrow the path or the pattern.]")
    return "\n".join(lines)


# -- grep ------------------------------------------------------------------------------------------------


def _grep_file(path: Path, regex: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    try:
        if path.stat().st_size > MAX_GREP_FILE_BYTES:
            return
        with path.open("rb") as handle:
            data = handle.read()
    except OSError:
        return
    if b"\0" in data[:8192]:
        return
    for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), start=1):
        if regex.search(line):
            yield number, line.removesuffix("\r")


def _grep(
    root: Path, regex: re.Pattern[str], cwd: Path, guard: PathGuard, stop: threading.Event
) -> tuple[list[str], str]:
    cwd = Path(os.path.realpath(cwd))
    files = [root] if root.is_file() else (p for p, is_dir in _walk(root, guard, stop) if not is_dir)
    matches: list[str] = []
    for count, path in enumerate(files, start=1):
        if count > MAX_GREP_FILES:
            return matches, f"[Stopped after searching {MAX_GREP_FILES} files; narrow the path.]"
        if stop.is_set() or not path.is_file():
            continue
        for number, line in _grep_file(path, regex):
            cut = line if len(line) <= MAX_MATCH_LINE_CHARS else line[:MAX_MATCH_LINE_CHARS] + " [...]"
            matches.append(f"{_shown(path, cwd, guard)}:{number}:{cut}")
            if len(matches) >= MAX_MATCHES:
                return matches, f"[Stopped after {MAX_MATCHES} matches; narrow the pattern or the path.]"
    return matches, ""


async def grep(ctx: ToolContext, args: GrepArgs) -> str:
    try:
        regex = re.compile(args.pattern)
    except re.error as exc:
        raise ToolError(f"Invalid regular expression {args.pattern!r}: {exc}") from None
    root = ctx.guard.resolve_read(args.path, ctx.cwd)
    if not root.exists():
        raise ToolError(f"Not found: {ctx.guard.display(root)}")
    matches, note = await _in_thread(lambda stop: _grep(root, regex, ctx.cwd, ctx.guard, stop))
    if not matches:
        return f"No matches for {args.pattern!r} in {ctx.guard.display(root)}."
    return "\n".join([*matches, note] if note else matches)


def list_files_tool() -> ToolSpec:
    return ToolSpec(
        name="list_files",
        description=(
            "List a directory, or find files by glob pattern under it (e.g. '**/*.md'). Paths are relative "
            "to `path`; folders end with '/'. .git folders are skipped; at most 500 entries are shown."
        ),
        args_model=ListFilesArgs,
        handler=list_files,
        effects=lambda args: ToolEffects(reads=(args.path,)),
    )


def grep_tool() -> ToolSpec:
    return ToolSpec(
        name="grep",
        description=(
            "Search file contents with a Python regular expression, recursively under `path` (a file or a "
            "directory). Prints `path:line:text` for each matching line, at most 200. Binary files, files "
            "over 5 MB and .git folders are skipped."
        ),
        args_model=GrepArgs,
        handler=grep,
        effects=lambda args: ToolEffects(reads=(args.path,)),
    )

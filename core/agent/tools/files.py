"""File tools: `read_file`, `write_file` and `edit_file`. Every path goes through the session's PathGuard."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, Field

from core.agent.sandbox import Refused
from core.agent.tool_api import ToolContext, ToolEffects, ToolError, ToolSpec

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_LINE_CHARS = 2000
MAX_OUTPUT_CHARS = 100_000
BINARY_SNIFF_BYTES = 8192


class ReadFileArgs(BaseModel):
    path: str = Field(description="File to read; relative to the working directory, or absolute, or ~/...")
    offset: int = Field(default=1, ge=1, description="First line to show (1-based).")
    limit: int = Field(default=2000, ge=1, description="How many lines to show at most.")


class WriteFileArgs(BaseModel):
    path: str = Field(description="File to write; parent folders are created.")
    content: str = Field(description="The complete new content of the file.")


class EditFileArgs(BaseModel):
    path: str = Field(description="File to edit.")
    old: str = Field(description="Exact text to replace; it must occur exactly once in the file.")
    new: str = Field(description="Text to put in its place.")


def _load_text(path: Path, shown: str, strict: bool = False) -> str:
    """The file's text, or a ToolError a model can act on (missing, a directory, too big, binary)."""
    try:
        if path.is_dir():
            raise ToolError(f"{shown} is a directory, not a file; use list_files to see what it contains.")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ToolError(
                f"{shown} is {size / 1_048_576:.1f} MB; file tools handle files up to 5 MB. "
                "Use grep, or bash with head/tail/sed, to look at parts of it."
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise ToolError(f"File not found: {shown}") from None
    except PermissionError:
        raise ToolError(f"Permission denied reading {shown}.") from None
    except OSError as exc:
        raise ToolError(f"Could not read {shown}: {exc.strerror or exc}") from None
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        raise ToolError(f"{shown} looks like a binary file; file tools handle text files only.")
    if not strict:
        return data.decode("utf-8", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{shown} is not UTF-8 text; it cannot be edited safely with edit_file.") from None


def _number_lines(text: str, offset: int, limit: int, shown: str) -> str:
    # Split on newlines only: str.splitlines also breaks on form feeds and other rare separators,
    # which would make our line numbers disagree with grep, sed and editors.
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines and not lines[-1]:
        lines.pop()
    if not lines:
        return f"({shown} is empty)"
    if offset > len(lines):
        raise ToolError(f"{shown} has {len(lines)} lines; offset {offset} is past the end.")
    out: list[str] = []
    size = 0
    last = offset - 1
    for number in range(offset, min(len(lines), offset + limit - 1) + 1):
        line = lines[number - 1]
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f" [... {len(line) - MAX_LINE_CHARS} more characters]"
        entry = f"{number:>5}\t{line}"
        if size + len(entry) > MAX_OUTPUT_CHARS and out:
            break
        out.append(entry)
        size += len(entry) + 1
        last = number
    if last < len(lines):
        out.append(f"[Showed lines {offset}-{last} of {len(lines)}. Use offset={last + 1} to read on.]")
    return "\n".join(out)


def _atomic_write(path: Path, data: bytes, shown: str) -> None:
    if path.is_dir():
        raise ToolError(f"{shown} is a directory; give a file path.")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, mode)
            # Readers see the old file or the new one, never half of it.
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise ToolError(f"Could not write {shown}: {exc.strerror or exc}") from None


async def read_file(ctx: ToolContext, args: ReadFileArgs) -> str:
    path = ctx.guard.resolve_read(args.path, ctx.cwd)
    shown = ctx.guard.display(path)
    text = await asyncio.to_thread(_load_text, path, shown)
    return _number_lines(text, args.offset, args.limit, shown)


async def writable_path(ctx: ToolContext, raw: str) -> Path:
    """The path to write; outside the workspace a person may approve it (never for credentials)."""
    try:
        return ctx.guard.resolve_write(raw, ctx.cwd)
    except Refused as refused:
        if refused.kind != "outside_workspace" or ctx.approvals is None:
            raise
        if await ctx.approvals.request(ctx.session_id, "write outside the workspace", str(refused.path)):
            approved: Path = refused.path
            return approved
        raise ToolError(f"Refused: the user did not approve writing to {refused.path}.") from None


async def write_file(ctx: ToolContext, args: WriteFileArgs) -> str:
    path = await writable_path(ctx, args.path)
    data = args.content.encode("utf-8")
    await asyncio.to_thread(_atomic_write, path, data, ctx.guard.display(path))
    return f"Wrote {len(data)} bytes to {ctx.guard.display(path)}"


def _edit(path: Path, old: str, new: str, shown: str) -> None:
    text = _load_text(path, shown, strict=True)
    count = text.count(old)
    if count == 0:
        raise ToolError(
            f"The text to replace was not found in {shown}. Read the file and copy the exact text, "
            "including whitespace and indentation."
        )
    if count > 1:
        raise ToolError(
            f"The text to replace was found {count} times in {shown}; include more context so it occurs "
            "exactly once."
        )
    _atomic_write(path, text.replace(old, new, 1).encode("utf-8"), shown)


async def edit_file(ctx: ToolContext, args: EditFileArgs) -> str:
    if not args.old:
        raise ToolError("`old` is empty; give the exact text to replace (use write_file for a new file).")
    if args.old == args.new:
        raise ToolError("`old` and `new` are the same; nothing would change.")
    path = await writable_path(ctx, args.path)
    shown = ctx.guard.display(path)
    await asyncio.to_thread(_edit, path, args.old, args.new, shown)
    return f"Edited {shown}: replaced 1 occurrence."


def read_file_tool() -> ToolSpec:
    return ToolSpec(
        name="read_file",
        description=(
            "Read a text file and return its lines numbered from 1 (number, tab, text). Use offset and "
            "limit to page through long files. Binary files, directories and files over 5 MB are refused."
        ),
        args_model=ReadFileArgs,
        handler=read_file,
        effects=lambda args: ToolEffects(reads=(args.path,)),
    )


def write_file_tool() -> ToolSpec:
    return ToolSpec(
        name="write_file",
        description=(
            "Create or overwrite a text file with the given content (UTF-8), creating parent folders. "
            "Writes are allowed only where this bot's permission allows (usually its workspace)."
        ),
        args_model=WriteFileArgs,
        handler=write_file,
        effects=lambda args: ToolEffects(writes=(args.path,)),
    )


def edit_file_tool() -> ToolSpec:
    return ToolSpec(
        name="edit_file",
        description=(
            "Replace one piece of text in a file: `old` must occur exactly once (include enough "
            "surrounding lines to make it unique) and is replaced by `new`. Read the file first."
        ),
        args_model=EditFileArgs,
        handler=edit_file,
        effects=lambda args: ToolEffects(reads=(args.path,), writes=(args.path,)),
    )

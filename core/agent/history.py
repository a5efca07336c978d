"""Session history on disk: one JSON line per model message (`history_format.py`), appended as each step
finishes.

Append-only JSONL keeps a step's write small however long the session grows; a line cut short by a crash
is skipped on load, so the history stays valid up to the last finished step.

Appends are written on the calling (loop) thread, not the worker: a step's lines are a few KB handed to the
page cache in one `write`, about 20 us, where the hop to a worker thread and back cost 0.4-0.6 ms of every
step's critical path. Once `write` has returned the kernel holds the lines, so a SIGKILL of the process
cannot lose them (no fsync either way: a power cut may, as before). Writing in program order also keeps
every append in the order the session made it without a queue.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from core.agent import history_format
from core.agent.messages import ModelMessage

log = logging.getLogger(__name__)

_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


@dataclass(frozen=True, slots=True)
class SessionMeta:
    session_id: str
    kind: str
    bot_id: str
    cwd: str
    created_at: float


class HistoryStore:
    """Reads and appends session histories under `root/<session id>/`. File work runs on one worker thread,
    in submission order, so the event loop never waits on the disk and appends never interleave."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="errand-history")

    def _dir(self, session_id: str) -> Path:
        if not _SAFE_ID.match(session_id):
            raise ValueError(f"invalid session id {session_id!r}")
        return self.root / session_id

    async def _run(self, fn: object, *args: object) -> object:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)  # type: ignore[arg-type]

    def append_now(self, session_id: str, messages: list[ModelMessage]) -> None:
        """Append `messages`; when this returns they survive a crash of the process (see the module note)."""
        if not messages:
            return
        directory = self._dir(session_id)
        lines = b"".join(history_format.encode(m) for m in messages)
        path = directory / "history.jsonl"
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        try:
            fd = os.open(path, flags, 0o666)
        except FileNotFoundError:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, flags, 0o666)
        try:
            view = memoryview(lines)
            while view:
                # A regular file takes the whole buffer in one write; the loop only guards a short write.
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    async def write_meta(self, meta: SessionMeta) -> None:
        await self._run(self._write_meta_sync, meta)

    def _write_meta_sync(self, meta: SessionMeta) -> None:
        directory = self._dir(meta.session_id)
        directory.mkdir(parents=True, exist_ok=True)
        tmp = directory / "meta.json.tmp"
        tmp.write_text(json.dumps(asdict(meta)), encoding="utf-8")
        tmp.replace(directory / "meta.json")

    async def load(self, session_id: str) -> list[ModelMessage]:
        result = await self._run(self._load_sync, session_id)
        assert isinstance(result, list)
        return result

    def _load_sync(self, session_id: str) -> list[ModelMessage]:
        path = self._dir(session_id) / "history.jsonl"
        if not path.exists():
            return []
        messages: list[ModelMessage] = []
        with path.open("rb") as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    messages.extend(history_format.decode(line))
                except history_format.UnreadableLine:
                    log.warning("skipping unreadable line %d of %s (cut short by a crash?)", number, path)
        return messages

    async def exists(self, session_id: str) -> bool:
        return bool(await self._run((self._dir(session_id) / "history.jsonl").exists))

    async def size(self, session_id: str) -> int:
        """Bytes the session's history takes on disk."""
        result = await self._run(self._size_sync, session_id)
        assert isinstance(result, int)
        return result

    def _size_sync(self, session_id: str) -> int:
        directory = self._dir(session_id)
        return sum(p.stat().st_size for p in directory.glob("*") if p.is_file()) if directory.exists() else 0

    async def delete(self, session_id: str) -> None:
        await self._run(shutil.rmtree, self._dir(session_id), True)

    def close(self) -> None:
        self._executor.shutdown(wait=True)

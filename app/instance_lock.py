"""One Errand per data dir: an exclusive OS lock on `<data_dir>/.lock`, held for the process's lifetime.

An OS lock rather than a pid file because the OS drops it when the process dies, however it dies, so a
crash never leaves a stale lock that blocks the next start. The holder's pid is written into the file
only so the refusal message can name it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import TracebackType

LOCK_FILE_NAME = ".lock"

# Windows locks are mandatory: a locked byte cannot be read by anyone else. Lock a byte far past the pid
# so a second instance can still read who holds the lock. (POSIX flock locks the whole file, advisory.)
_WINDOWS_LOCK_OFFSET = 1 << 20


class DataDirInUseError(RuntimeError):
    def __init__(self, data_dir: Path, pid: int | None) -> None:
        holder = f" (pid {pid})" if pid is not None else ""
        super().__init__(
            f"Another Errand is already using {data_dir}{holder}. "
            f"Quit it first, or start this one with --data-dir <another folder>."
        )
        self.data_dir = data_dir
        self.pid = pid


class DataDirLock:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.path = data_dir / LOCK_FILE_NAME
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock now or raise DataDirInUseError; never waits."""
        if self._fd is not None:
            raise RuntimeError(f"{self.path} is already held by this DataDirLock")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # os.open descriptors are not inherited, so agent subprocesses cannot keep the lock alive after
        # we exit. The file is never deleted: unlinking a lock file lets two processes lock two inodes.
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            _lock(fd)
        except OSError:
            pid = _read_pid(fd)
            os.close(fd)
            raise DataDirInUseError(self.data_dir, pid) from None
        _write_pid(fd, os.getpid())
        self._fd = fd

    def release(self) -> None:
        """Let another Errand use the data dir. Safe to call when not held."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)  # no stale pid for anyone to misread
            _unlock(fd)
        finally:
            os.close(fd)  # closing releases the lock even if unlocking failed

    def __enter__(self) -> DataDirLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        return int(os.read(fd, 32).decode("ascii").strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None  # the holder has locked but not yet written its pid, or the file is foreign


def _write_pid(fd: int, pid: int) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, f"{pid}\n".encode("ascii"))


if sys.platform == "win32":
    import msvcrt

    def _lock(fd: int) -> None:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)

    def _unlock(fd: int) -> None:
        os.lseek(fd, _WINDOWS_LOCK_OFFSET, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

else:
    import fcntl

    def _lock(fd: int) -> None:
        # flock, not lockf: flock locks belong to the open file, so a second DataDirLock in this same
        # process is refused too; lockf locks belong to the process and would let it through.
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

"""The one way into the database: an engine whose work all runs on one dedicated worker thread.

One thread means writes are serialized without any locking of our own, and the asyncio loop only ever
awaits a future, so the UI never blocks on a commit. Nothing here is SQLite-only except the pragmas,
which are applied only when the URL is SQLite; PostgreSQL is a different URL away.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, TypeVar

from sqlalchemy import URL, Connection, Engine, create_engine, event, make_url
from sqlalchemy.orm import Session, sessionmaker

from core.clock import Clock, SystemClock
from core.store.migrations import run_migrations

T = TypeVar("T")

DB_FILE_NAME = "errand.db"
WORKER_THREAD_PREFIX = "errand-db"
BUSY_TIMEOUT_MS = 5000

_State = Literal["new", "opening", "open", "closing", "closed"]


class Database:
    """`open()` it, then `read`/`write` with functions of a `Session`; `close()` when done.

    A call cancelled while queued never runs; one cancelled while running still finishes (and a write
    still commits), because a thread cannot be interrupted.
    """

    def __init__(self, url: str | URL, *, clock: Clock | None = None) -> None:
        self._url = make_url(url)
        # Only migrations stamp a time themselves; everything else gets `now` from its caller.
        self._clock: Clock = clock or SystemClock()
        self._engine = create_store_engine(self._url)
        self._sessions = sessionmaker(self._engine, expire_on_commit=False)
        self._worker_ident: int | None = None
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=WORKER_THREAD_PREFIX, initializer=self._note_worker
        )
        self._state: _State = "new"

    @classmethod
    def for_data_dir(cls, data_dir: Path, *, clock: Clock | None = None) -> Database:
        return cls(URL.create("sqlite", database=str(data_dir / DB_FILE_NAME)), clock=clock)

    @property
    def url(self) -> URL:
        return self._url

    # -- async: for code on the event loop ---------------------------------------------------------

    async def open(self) -> None:
        """Create the database's folder if needed and bring the schema up to date."""
        self._start_opening()
        try:
            await asyncio.get_running_loop().run_in_executor(
                self._executor, self._open_on_worker, self._clock.time()
            )
        except BaseException:
            self._abandon()
            raise
        self._finish_opening()

    async def read(self, fn: Callable[[Session], T]) -> T:
        """Run `fn` on the worker in a session whose changes are discarded."""
        self._require_open()
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._run_read, fn)

    async def write(self, fn: Callable[[Session], T]) -> T:
        """Run `fn` on the worker in one transaction: committed if it returns, rolled back if it raises."""
        self._require_open()
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._run_write, fn)

    async def close(self) -> None:
        """Let queued work finish, then release every connection and the worker. Safe to call twice."""
        if self._state in ("closing", "closed"):
            return
        self._state = "closing"
        # Queued behind everything already submitted, so pending reads and writes complete first.
        await asyncio.get_running_loop().run_in_executor(self._executor, self._engine.dispose)
        self._executor.shutdown(wait=True)
        self._state = "closed"

    # -- sync: for scripts and tests with no running loop -----------------------------------------

    def open_sync(self) -> None:
        self._require_blocking_allowed("open_sync")
        self._start_opening()
        try:
            self._executor.submit(self._open_on_worker, self._clock.time()).result()
        except BaseException:
            self._abandon()
            raise
        self._finish_opening()

    def read_sync(self, fn: Callable[[Session], T]) -> T:
        self._require_blocking_allowed("read_sync")
        self._require_open()
        return self._executor.submit(self._run_read, fn).result()

    def write_sync(self, fn: Callable[[Session], T]) -> T:
        self._require_blocking_allowed("write_sync")
        self._require_open()
        return self._executor.submit(self._run_write, fn).result()

    def close_sync(self) -> None:
        self._require_blocking_allowed("close_sync")
        if self._state in ("closing", "closed"):
            return
        self._state = "closing"
        self._executor.submit(self._engine.dispose).result()
        self._executor.shutdown(wait=True)
        self._state = "closed"

    # -- on the worker thread ---------------------------------------------------------------------

    def _note_worker(self) -> None:
        self._worker_ident = threading.get_ident()

    def _open_on_worker(self, now: float) -> None:
        sqlite_file = _sqlite_file(self._url)
        if sqlite_file is not None:
            sqlite_file.parent.mkdir(parents=True, exist_ok=True)
        run_migrations(self._engine, now=now)

    def _run_read(self, fn: Callable[[Session], T]) -> T:
        with self._sessions() as session:
            return fn(session)

    def _run_write(self, fn: Callable[[Session], T]) -> T:
        with self._sessions() as session, session.begin():
            return fn(session)

    # -- guards -----------------------------------------------------------------------------------

    def _start_opening(self) -> None:
        if self._state != "new":
            raise RuntimeError(f"Database {self._url!r} cannot be opened: it is {self._state}")
        # Claimed before the first await so two concurrent open() calls cannot both migrate.
        self._state = "opening"

    def _finish_opening(self) -> None:
        if self._state != "opening":
            raise RuntimeError(f"Database {self._url!r} was closed while it was opening")
        self._state = "open"

    def _abandon(self) -> None:
        """A failed open leaves nothing behind: no pooled connections, no worker thread."""
        self._executor.submit(self._engine.dispose)
        self._executor.shutdown(wait=False)
        self._state = "closed"

    def _require_open(self) -> None:
        if self._state != "open":
            raise RuntimeError(f"Database {self._url!r} is not open (it is {self._state})")

    def _require_blocking_allowed(self, name: str) -> None:
        if threading.get_ident() == self._worker_ident:
            raise RuntimeError(f"{name} called from inside a database call would wait for itself")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        raise RuntimeError(f"{name} would block the running event loop; await the async variant instead")


def create_store_engine(url: str | URL) -> Engine:
    """An engine configured as the store needs it; `Database` uses it, and so can scripts and tests."""
    engine = create_engine(url)
    if engine.dialect.name == "sqlite":
        _configure_sqlite(engine)
    return engine


def _configure_sqlite(engine: Engine) -> None:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take BEGIN away from the sqlite3 module: in its legacy mode it never begins a transaction
        # before DDL, so a failed migration would stay half-applied. `on_begin` emits BEGIN instead.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            # WAL lets readers (scripts, `errand doctor`) run while the host writes.
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            # Durable across app crashes in WAL mode; only a power loss can drop the last commits.
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    def on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN")

    event.listen(engine, "connect", on_connect)
    event.listen(engine, "begin", on_begin)


def _sqlite_file(url: URL) -> Path | None:
    """The file a SQLite URL names, or None for in-memory and URI-style databases."""
    if url.get_backend_name() != "sqlite":
        return None
    database = url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    if url.query.get("mode") == "memory":
        return None
    return Path(database)

"""Many rows through the database driver's own executemany: the one way to write 10,000 rows in a blink.

Through SQLAlchemy each row's parameters are built and processed one by one (about 15 us a row, most of the
time for the scheduler's writes after a long sleep); the driver takes plain tuples. Statements are written
with `?` placeholders and put in the driver's own style here, so PostgreSQL stays a URL away.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session


def execute_many(s: Session, sql: str, rows: Sequence[tuple[object, ...]]) -> int:
    """Run `sql` once per row in the session's transaction; returns how many rows it changed in all. The
    values must be what the driver takes as they are (text, numbers): no SQLAlchemy type processing."""
    if not rows:
        return 0
    connection = s.connection()
    result = connection.exec_driver_sql(_in_driver_style(sql, connection.dialect.paramstyle), list(rows))
    return int(result.rowcount)


def _in_driver_style(sql: str, paramstyle: str) -> str:
    if paramstyle == "qmark":
        return sql
    if paramstyle in ("format", "pyformat"):
        return sql.replace("%", "%%").replace("?", "%s")
    raise NotImplementedError(f"no driver placeholders for paramstyle {paramstyle!r}")

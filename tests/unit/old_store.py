"""A database as a build before a migration left it, for the migration tests."""

from __future__ import annotations

from sqlalchemy import Engine, inspect

from core.store.migrations import MIGRATIONS, run_migrations


def store_before_column(engine: Engine, migration: int, table: str, column: str) -> None:
    """Migrations up to `migration - 1`, and `table` without the `column` that `migration` adds. Migration 1
    builds from today's models, so the column is dropped to stand for the build before."""
    assert run_migrations(engine, now=1.0, migrations=MIGRATIONS[: migration - 1])[-1] == migration - 1
    with engine.begin() as conn:
        conn.exec_driver_sql(f'ALTER TABLE {table} DROP COLUMN "{column}"')
        assert column not in {c["name"] for c in inspect(conn).get_columns(table)}

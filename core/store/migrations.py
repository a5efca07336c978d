"""Schema versions: a short, ordered list of explicit steps, each applied once, in its own transaction.

To change the schema, change the models and APPEND a migration; never edit or reorder one that has shipped.
Migration 1 builds its tables from the *current* models, so on a fresh database any column a later migration
adds is already there: add columns with `add_column` (it skips existing ones) and tables with
`Base.metadata.create_all(conn, tables=[...])` (it skips existing tables).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Boolean,
    Column,
    Connection,
    Double,
    Engine,
    Integer,
    MetaData,
    String,
    Table,
    false,
    func,
    inspect,
    select,
    text,
    true,
)
from sqlalchemy.schema import CreateColumn

from core.store.models import DEFAULT_TRIGGER, Base


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    apply: Callable[[Connection], None]


class SchemaTooNewError(RuntimeError):
    def __init__(self, found: int, known: int) -> None:
        super().__init__(
            f"this data dir was written by a newer Errand (schema {found} > {known}); upgrade Errand"
        )
        self.found = found
        self.known = known


# Kept out of the models' metadata: it is bookkeeping for this runner, not part of any schema version.
schema_migrations = Table(
    "schema_migrations",
    MetaData(),
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("applied_at", Double, nullable=False),
)


def add_column(conn: Connection, table: str, column: Column[Any]) -> None:
    """`ALTER TABLE table ADD COLUMN column`, skipped when the table already has it (see the module note)."""
    if column.name in {c["name"] for c in inspect(conn).get_columns(table)}:
        return
    quoted = conn.dialect.identifier_preparer.quote(table)
    ddl = CreateColumn(column).compile(dialect=conn.dialect)
    conn.exec_driver_sql(f"ALTER TABLE {quoted} ADD COLUMN {ddl}")


def _create_chat_tables(conn: Connection) -> None:
    names = ("bots", "conversations", "messages", "settings")
    Base.metadata.create_all(conn, tables=[Base.metadata.tables[n] for n in names])


def _create_task_tables(conn: Connection) -> None:
    names = ("tasks", "runs", "run_inputs", "deliveries")
    Base.metadata.create_all(conn, tables=[Base.metadata.tables[n] for n in names])


def _add_message_task_id(conn: Connection) -> None:
    add_column(conn, "messages", Column("task_id", String, nullable=False, server_default=""))


def _create_approvals(conn: Connection) -> None:
    Base.metadata.create_all(conn, tables=[Base.metadata.tables["approvals"]])


def _add_bot_settings(conn: Connection) -> None:
    add_column(conn, "bots", Column("avatar", String, nullable=False, server_default=""))
    add_column(conn, "bots", Column("task_slots", Integer, nullable=False, server_default=text("2")))
    add_column(conn, "bots", Column("quiet_start", String, nullable=False, server_default="22:00"))
    add_column(conn, "bots", Column("quiet_end", String, nullable=False, server_default="08:00"))
    add_column(conn, "bots", Column("paused", Boolean, nullable=False, server_default=false()))


def _create_rules(conn: Connection) -> None:
    Base.metadata.create_all(conn, tables=[Base.metadata.tables[n] for n in ("rules", "rule_versions")])


def _add_rule_ack_and_trigger(conn: Connection) -> None:
    ack = Column("observe_ack_version", Integer, nullable=False, server_default=text("0"))
    add_column(conn, "rules", ack)
    add_column(conn, "rules", Column("trigger", String, nullable=False, server_default=DEFAULT_TRIGGER))


def _add_cost_and_retention(conn: Connection) -> None:
    zero = text("0")
    add_column(conn, "tasks", Column("spent_other", String, nullable=False, server_default="{}"))
    add_column(conn, "tasks", Column("unpriced_calls", Integer, nullable=False, server_default=zero))
    add_column(conn, "tasks", Column("last_used_at", Double, nullable=False, server_default=zero))
    add_column(conn, "tasks", Column("archived_at", Double, nullable=False, server_default=zero))
    add_column(conn, "runs", Column("cost_other", String, nullable=False, server_default="{}"))
    add_column(conn, "runs", Column("unpriced_calls", Integer, nullable=False, server_default=zero))
    add_column(conn, "rules", Column("run_budget_usd", Double, nullable=False, server_default=text("0.1")))
    add_column(conn, "rules", Column("month_budget_usd", Double, nullable=False, server_default=text("3.0")))
    add_column(conn, "rules", Column("budget_pushed", String, nullable=False, server_default=""))


def _create_channel_tables(conn: Connection) -> None:
    names = ("channels", "inbound_messages", "channel_peers")
    Base.metadata.create_all(conn, tables=[Base.metadata.tables[n] for n in names])
    add_column(conn, "messages", Column("source", String, nullable=False, server_default=""))
    source_index = next(i for i in Base.metadata.tables["messages"].indexes if i.name == "ix_messages_source")
    source_index.create(conn, checkfirst=True)


def _add_channel_sending(conn: Connection) -> None:
    add_column(conn, "messages", Column("channel_ref", String, nullable=False, server_default=""))
    indexes = Base.metadata.tables["messages"].indexes
    ref_index = next(i for i in indexes if i.name == "ix_messages_channel_ref")
    ref_index.create(conn, checkfirst=True)
    add_column(conn, "channels", Column("allowed", String, nullable=False, server_default="[]"))
    add_column(conn, "bots", Column("window_nudge", Boolean, nullable=False, server_default=true()))
    attempts = Column("attempts", Integer, nullable=False, server_default=text("0"))
    add_column(conn, "inbound_messages", attempts)
    add_column(conn, "channel_peers", Column("refused_at", Double, nullable=False, server_default=text("0")))
    wanted = {
        "tasks": "ix_tasks_conversation_id",
        "deliveries": "ix_deliveries_conversation_status_sent",
        "rules": "ix_rules_conversation_id",
        "inbound_messages": "ix_inbound_message_id",
        "channel_peers": "ix_channel_peers_conversation_id",
    }
    for table, name in wanted.items():
        index = next(i for i in Base.metadata.tables[table].indexes if i.name == name)
        index.create(conn, checkfirst=True)


def _add_channel_identity(conn: Connection) -> None:
    add_column(conn, "channels", Column("display_name", String, nullable=False, server_default=""))
    add_column(conn, "channels", Column("bot_ref", String, nullable=False, server_default=""))


def _add_group_admission(conn: Connection) -> None:
    add_column(conn, "channel_peers", Column("title", String, nullable=False, server_default=""))
    add_column(conn, "channel_peers", Column("admission", String, nullable=False, server_default=""))


def _add_message_rule_id(conn: Connection) -> None:
    add_column(conn, "messages", Column("rule_id", String, nullable=False, server_default=""))


MIGRATIONS: list[Migration] = [
    Migration(1, "bots, conversations, messages, settings", _create_chat_tables),
    Migration(2, "background tasks: tasks, runs, run_inputs, deliveries", _create_task_tables),
    Migration(3, "messages.task_id: a task's result in its conversation", _add_message_task_id),
    Migration(4, "approvals: questions and approvals waiting for a person", _create_approvals),
    Migration(5, "bots: avatar, task slots, quiet hours, paused", _add_bot_settings),
    Migration(6, "rules and rule_versions: scheduled standing instructions", _create_rules),
    Migration(7, "rules: observe_ack_version and trigger", _add_rule_ack_and_trigger),
    Migration(8, "costs by currency, task use and archive, rule budgets", _add_cost_and_retention),
    Migration(
        9,
        "channels, inbound_messages, channel_peers, messages.source: chat platforms",
        _create_channel_tables,
    ),
    Migration(
        10,
        "messages.channel_ref, channels.allowed, bots.window_nudge, inbound_messages.attempts, "
        "channel_peers.refused_at",
        _add_channel_sending,
    ),
    Migration(
        11,
        "channels.display_name, channels.bot_ref: the bot of an app a person registered",
        _add_channel_identity,
    ),
    Migration(
        12,
        "channel_peers.title, channel_peers.admission: groups a bot works in only once admitted",
        _add_group_admission,
    ),
    Migration(13, "messages.rule_id: a rule's message names the rule that sent it", _add_message_rule_id),
    # Append here: Migration(14, "...", _function_taking_a_connection),
]


def current_version(conn: Connection) -> int:
    """The highest applied version; 0 for a database no migration has touched."""
    if not inspect(conn).has_table(schema_migrations.name):
        return 0
    return conn.execute(select(func.max(schema_migrations.c.version))).scalar_one_or_none() or 0


def run_migrations(engine: Engine, *, now: float, migrations: Sequence[Migration] = MIGRATIONS) -> list[int]:
    """Apply every migration newer than the database, in order. Returns the versions applied (often none).

    Each migration and its bookkeeping row commit together, so a failure leaves the database at the
    previous version with nothing half-applied. Callers hold the data-dir lock, so no second writer races.
    """
    _check_order(migrations)
    known = migrations[-1].version if migrations else 0
    with engine.begin() as conn:
        schema_migrations.create(conn, checkfirst=True)
        found = current_version(conn)
    if found > known:
        raise SchemaTooNewError(found, known)
    applied: list[int] = []
    for migration in migrations:
        if migration.version <= found:
            continue
        with engine.begin() as conn:
            migration.apply(conn)
            conn.execute(schema_migrations.insert().values(version=migration.version, applied_at=now))
        applied.append(migration.version)
    return applied


def _check_order(migrations: Sequence[Migration]) -> None:
    versions = [m.version for m in migrations]
    if versions != list(range(1, len(versions) + 1)):
        raise ValueError(f"migration versions must be 1, 2, 3, ... in order; got {versions}")

"""Schema versions: a short, ordered list of explicit steps, each applied once, in its own transaction.

To change the schema, change the models and APPEND a migration; never edit or reorder one that has shipped.
Migration 1 builds its tables from the *current* models, so on a fresh database any column a later migration
adds is already there: add columns with `add_column` (it skips existing ones) and tables with
`Base.metadata.create_all(conn, tables=[...])` (it skips existing tables).
"""

from __future__ import annotations

import logging
import sqlite3
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
from sqlalchemy.exc import OperationalError
from sqlalchemy.schema import CreateColumn

from core.store.models import DEFAULT_TRIGGER, Base

log = logging.getLogger(__name__)


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


# Full-text search (docs/desktop.md#sidebar): one FTS5 table per kind of thing a person looks for, kept in
# step by triggers so no writer has to remember it. The trigram tokenizer finds a substring anywhere (Chinese
# has no spaces between words); it needs SQLite 3.34+. Other databases, and a SQLite without it, get no
# index: `core.store.search` then looks with LIKE, which finds the same things more slowly.
SEARCH_TABLES = ("search_messages", "search_tasks", "search_rules")

_SEARCH_DDL = (
    # Own content with rowid = messages.id (an INTEGER PRIMARY KEY, so VACUUM keeps it).
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_messages USING fts5(text, tokenize='trigram')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_tasks USING fts5(task_id UNINDEXED, body, tokenize='trigram')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS search_rules USING fts5(rule_id UNINDEXED, body, tokenize='trigram')",
    "CREATE TRIGGER IF NOT EXISTS search_messages_insert AFTER INSERT ON messages BEGIN"
    " INSERT INTO search_messages(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER IF NOT EXISTS search_messages_update AFTER UPDATE OF text ON messages BEGIN"
    " DELETE FROM search_messages WHERE rowid = old.id;"
    " INSERT INTO search_messages(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER IF NOT EXISTS search_messages_delete AFTER DELETE ON messages BEGIN"
    " DELETE FROM search_messages WHERE rowid = old.id; END",
    "CREATE TRIGGER IF NOT EXISTS search_tasks_insert AFTER INSERT ON tasks BEGIN"
    " INSERT INTO search_tasks(task_id, body) VALUES (new.id, new.title || char(10) || new.brief); END",
    "CREATE TRIGGER IF NOT EXISTS search_tasks_update AFTER UPDATE OF title, brief ON tasks BEGIN"
    " DELETE FROM search_tasks WHERE task_id = old.id;"
    " INSERT INTO search_tasks(task_id, body) VALUES (new.id, new.title || char(10) || new.brief); END",
    "CREATE TRIGGER IF NOT EXISTS search_tasks_delete AFTER DELETE ON tasks BEGIN"
    " DELETE FROM search_tasks WHERE task_id = old.id; END",
    "CREATE TRIGGER IF NOT EXISTS search_rules_insert AFTER INSERT ON rules BEGIN"
    " INSERT INTO search_rules(rule_id, body) VALUES (new.id, new.title || char(10) || new.instruction); END",
    "CREATE TRIGGER IF NOT EXISTS search_rules_update AFTER UPDATE OF title, instruction ON rules BEGIN"
    " DELETE FROM search_rules WHERE rule_id = old.id;"
    " INSERT INTO search_rules(rule_id, body) VALUES (new.id, new.title || char(10) || new.instruction); END",
    "CREATE TRIGGER IF NOT EXISTS search_rules_delete AFTER DELETE ON rules BEGIN"
    " DELETE FROM search_rules WHERE rule_id = old.id; END",
)

# Filled from the rows already there; emptied first, so running it again (a fresh database runs every
# migration, and migration 1 may already have left rows) never doubles an entry.
_SEARCH_FILL = (
    "DELETE FROM search_messages",
    "INSERT INTO search_messages(rowid, text) SELECT id, text FROM messages",
    "DELETE FROM search_tasks",
    "INSERT INTO search_tasks(task_id, body) SELECT id, title || char(10) || brief FROM tasks",
    "DELETE FROM search_rules",
    "INSERT INTO search_rules(rule_id, body) SELECT id, title || char(10) || instruction FROM rules",
)


def sqlite_has_trigram(conn: Connection) -> bool:
    """Whether this SQLite has FTS5 with the trigram tokenizer (3.34+), tried on a throwaway temp table."""
    if conn.dialect.name != "sqlite":
        return False
    try:
        with conn.begin_nested():
            conn.exec_driver_sql(
                "CREATE VIRTUAL TABLE temp.errand_trigram_probe USING fts5(x, tokenize='trigram')"
            )
            conn.exec_driver_sql("DROP TABLE temp.errand_trigram_probe")
    except OperationalError:
        return False
    return True


def _create_search_index(conn: Connection) -> None:
    if conn.dialect.name != "sqlite":
        return  # PostgreSQL and others: search looks with LIKE (core.store.search)
    if not sqlite_has_trigram(conn):
        log.warning(
            "SQLite %s has no FTS5 trigram tokenizer (3.34+ has it): search works without an index, slower",
            sqlite3.sqlite_version,
        )
        return
    for statement in (*_SEARCH_DDL, *_SEARCH_FILL):
        conn.exec_driver_sql(statement)


def _add_run_error_words(conn: Connection) -> None:
    add_column(conn, "runs", Column("error_words", String, nullable=False, server_default="{}"))


def _create_mcp_servers(conn: Connection) -> None:
    Base.metadata.create_all(conn, tables=[Base.metadata.tables["mcp_servers"]])


def _create_memory(conn: Connection) -> None:
    tables = [Base.metadata.tables[n] for n in ("memory_entries", "memory_notebooks")]
    Base.metadata.create_all(conn, tables=tables)


def _add_bot_model_images(conn: Connection) -> None:
    # NULL until the person chooses: the bot follows what its model is known to take.
    add_column(conn, "bots", Column("model_images", Boolean, nullable=True))


def _add_task_plans(conn: Connection) -> None:
    add_column(conn, "tasks", Column("parent_id", String, nullable=False, server_default=""))
    add_column(conn, "tasks", Column("plan", String, nullable=False, server_default=""))
    index = next(i for i in Base.metadata.tables["tasks"].indexes if i.name == "ix_tasks_parent_id")
    index.create(conn, checkfirst=True)


def _add_task_goal(conn: Connection) -> None:
    add_column(conn, "tasks", Column("acceptance", String, nullable=False, server_default=""))
    add_column(conn, "tasks", Column("goal", String, nullable=False, server_default=""))


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
    Migration(14, "search_messages, search_tasks, search_rules: full-text search", _create_search_index),
    Migration(15, "runs.error_words: a failed run's reason in each language", _add_run_error_words),
    Migration(16, "mcp_servers: a bot's MCP servers", _create_mcp_servers),
    Migration(17, "memory_entries, memory_notebooks: each bot's memory", _create_memory),
    Migration(18, "bots.model_images: whether the bot's model is shown images", _add_bot_model_images),
    Migration(19, "tasks.acceptance, tasks.goal: a goal task's criteria and its rounds", _add_task_goal),
    Migration(20, "tasks.parent_id, tasks.plan: planned tasks and their subtasks", _add_task_plans),
    # Append here: Migration(21, "...", _function_taking_a_connection),
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

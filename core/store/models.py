"""The tables, as SQLAlchemy declarative models. Only the repositories and migrations touch these classes;
everything else sees the frozen records the repositories return."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Double, ForeignKey, Index, Text, false, text, true
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Built out here because `MessageRow.text` shadows `text` inside that class body.
_ZERO = text("0")
DEFAULT_TRIGGER = '{"kind": "schedule"}'


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        str: Text,
        # Epoch seconds need ~16 significant digits; FLOAT is single precision on some servers.
        float: Double,
    }


class BotRow(Base):
    __tablename__ = "bots"

    id: Mapped[str] = mapped_column(primary_key=True)
    name: Mapped[str]
    workspace: Mapped[str]
    model_provider: Mapped[str] = mapped_column(default="openai", server_default="openai")
    model_base_url: Mapped[str] = mapped_column(default="", server_default="")
    model_name: Mapped[str] = mapped_column(default="", server_default="")
    # The name of a keyring entry; the key itself never reaches the database.
    api_key_ref: Mapped[str] = mapped_column(default="", server_default="")
    preset: Mapped[str] = mapped_column(default="workspace-write", server_default="workspace-write")
    is_default: Mapped[bool] = mapped_column(default=False, server_default=false())
    # Bot settings (migration 5): avatar colour, background slots, quiet hours ("HH:MM" local), manual pause.
    avatar: Mapped[str] = mapped_column(default="", server_default="")
    task_slots: Mapped[int] = mapped_column(default=2, server_default=text("2"))
    quiet_start: Mapped[str] = mapped_column(default="22:00", server_default="22:00")
    quiet_end: Mapped[str] = mapped_column(default="08:00", server_default="08:00")
    paused: Mapped[bool] = mapped_column(default=False, server_default=false())
    # The one 「回个「ok」」 nudge before a chat channel's reply window closes (migration 10).
    window_nudge: Mapped[bool] = mapped_column(default=True, server_default=true())
    # Whether its model is shown images (migration 18); NULL = as its model is known to take them.
    model_images: Mapped[bool | None] = mapped_column(default=None, nullable=True)
    created_at: Mapped[float]
    updated_at: Mapped[float]


class ConversationRow(Base):
    __tablename__ = "conversations"
    __table_args__ = (Index("ix_conversations_bot_id_updated_at", "bot_id", "updated_at"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    bot_id: Mapped[str] = mapped_column(ForeignKey("bots.id"))
    title: Mapped[str]
    channel: Mapped[str] = mapped_column(default="desktop", server_default="desktop")
    created_at: Mapped[float]
    updated_at: Mapped[float]


class MessageRow(Base):
    __tablename__ = "messages"
    __table_args__ = (
        Index("ix_messages_conversation_id_id", "conversation_id", "id"),
        # Every `input_taken` event from the agent is matched back to its message by input id.
        Index("ix_messages_input_id", "input_id"),
        # A message that came in on a channel is stored once however often it is handed over (migration 9).
        Index("ix_messages_source", "source"),
        # A quote on a chat platform names the message it quotes by the platform's id (migration 10).
        Index("ix_messages_channel_ref", "channel_ref"),
        # Never reuse the id of a deleted last row (plain SQLite rowids would); other databases never do.
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"))
    role: Mapped[str]
    text: Mapped[str]
    state: Mapped[str]
    input_id: Mapped[str] = mapped_column(default="", server_default="")
    turn_id: Mapped[str] = mapped_column(default="", server_default="")
    task_id: Mapped[str] = mapped_column(default="", server_default="")  # set on a task's pushed result
    rule_id: Mapped[str] = mapped_column(default="", server_default="")  # set on a rule's pushed message
    model: Mapped[str] = mapped_column(default="", server_default="")
    tokens_in: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    tokens_out: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    duration_ms: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    # A JSON list of step dicts; stored as text so the schema is the same on every database.
    activity: Mapped[str] = mapped_column(default="[]", server_default="[]")
    # Where a person's message came from outside the window, e.g. `inbound:<channel>:<n>`; '' for the desktop.
    source: Mapped[str] = mapped_column(default="", server_default="")
    # The platform's id of a message we sent on a chat channel (to match a quote of it); '' elsewhere.
    channel_ref: Mapped[str] = mapped_column(default="", server_default="")
    created_at: Mapped[float]


class SettingRow(Base):
    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(primary_key=True)
    value: Mapped[str]  # JSON
    updated_at: Mapped[float]


# -- background tasks (migration 2) ----------------------------------------------------------------
# Ids are chosen by callers (`t_…`, `r_…`, `i_…`; a delivery's id is stable, e.g. `<run id>:result`).
# Every time is epoch seconds passed in by the caller; 0 means "not yet". Enumerated columns are checked by
# the repositories, not the schema, so a later value needs no migration.


class TaskRow(Base):
    __tablename__ = "tasks"
    __table_args__ = (
        Index("ix_tasks_bot_id_ended_at", "bot_id", "ended_at"),
        # A chat platform's outbox asks what live work a conversation has (migration 10).
        Index("ix_tasks_conversation_id", "conversation_id"),
        Index("ix_tasks_parent_id", "parent_id"),  # a planned task's subtasks (migration 20)
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    bot_id: Mapped[str] = mapped_column(ForeignKey("bots.id"))
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"))
    origin_message_id: Mapped[int] = mapped_column(default=0, server_default=_ZERO)  # messages.id
    origin_ref: Mapped[str] = mapped_column(default="", server_default="")  # channel handle; never a secret
    title: Mapped[str]
    brief: Mapped[str]
    session_id: Mapped[str]
    folder: Mapped[str]  # absolute
    model: Mapped[str] = mapped_column(default="", server_default="")
    permission: Mapped[str]  # a preset name, snapshotted at creation
    budget_usd: Mapped[float]
    spent_usd: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)
    report: Mapped[str] = mapped_column(default="", server_default="")  # the latest Report, as JSON
    ended_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)
    end_reason: Mapped[str] = mapped_column(default="", server_default="")
    stopped_by: Mapped[str] = mapped_column(default="", server_default="")
    cleanup_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)
    created_at: Mapped[float]
    updated_at: Mapped[float]
    # Cost and retention (migration 8). Amounts priced in other currencies than USD, as JSON
    # {"CNY": "0.12"}, are kept apart because currencies are never added together; calls no price was
    # known for are counted so the UI can say 「未定价」.
    spent_other: Mapped[str] = mapped_column(default="{}", server_default="{}")
    unpriced_calls: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    # The last time a person or a run used the task (0: never recorded, read as updated_at). Retention
    # counts its 30 idle days from here; 保留 sets it to now.
    last_used_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)
    archived_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)  # 0: not archived
    # Goal mode (migration 19, docs/goals.md): the acceptance criteria as JSON ('' for a task without), and
    # the state of its rounds (round count, each criterion's last verdict) as JSON ('' before the first).
    acceptance: Mapped[str] = mapped_column(default="", server_default="")
    goal: Mapped[str] = mapped_column(default="", server_default="")
    # Planned tasks (migration 20, docs/plans.md): a subtask names its planned task ('' for any other
    # task); a planned task keeps its plan and where it stands as JSON ('' for a task without a plan).
    parent_id: Mapped[str] = mapped_column(default="", server_default="")
    plan: Mapped[str] = mapped_column(default="", server_default="")


class RunRow(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_state_queued_at", "state", "queued_at"),
        Index("ix_runs_task_id_queued_at", "task_id", "queued_at"),
        Index("ix_runs_rule_id_queued_at", "rule_id", "queued_at"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    bot_id: Mapped[str]
    # Exactly one of the two is set, so neither can be a foreign key ('' references nothing).
    task_id: Mapped[str] = mapped_column(default="", server_default="")
    rule_id: Mapped[str] = mapped_column(default="", server_default="")
    rule_version: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    mode: Mapped[str] = mapped_column(default="act", server_default="act")
    session_id: Mapped[str]
    cause: Mapped[str]
    state: Mapped[str]
    outcome: Mapped[str] = mapped_column(default="", server_default="")
    report: Mapped[str] = mapped_column(default="", server_default="")
    would: Mapped[str] = mapped_column(default="", server_default="")
    activity: Mapped[str] = mapped_column(default="[]", server_default="[]")  # JSON list of step dicts
    tokens_in: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    tokens_out: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    cost_usd: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)
    cost_other: Mapped[str] = mapped_column(default="{}", server_default="{}")  # migration 8, see tasks
    unpriced_calls: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    error: Mapped[str] = mapped_column(default="", server_default="")
    # The same error in each language a person reads it in, JSON {"zh": ..., "en": ...}; {} when only
    # `error` (English, as the API reads it) is known (migration 15).
    error_words: Mapped[str] = mapped_column(default="{}", server_default="{}")
    nudged: Mapped[bool] = mapped_column(default=False, server_default=false())
    queued_at: Mapped[float]
    started_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)
    ended_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)


class RunInputRow(Base):
    """What the host owes a session; it survives restarts because the agent's own queue does not."""

    __tablename__ = "run_inputs"
    __table_args__ = (Index("ix_run_inputs_task_id_taken_at", "task_id", "taken_at"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    task_id: Mapped[str] = mapped_column(default="", server_default="")
    rule_id: Mapped[str] = mapped_column(default="", server_default="")
    run_id: Mapped[str] = mapped_column(default="", server_default="")
    kind: Mapped[str]
    text: Mapped[str]
    from_person: Mapped[bool] = mapped_column(default=False, server_default=false())
    delivered_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)
    taken_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)
    created_at: Mapped[float]


class DeliveryRow(Base):
    """The outbox for pushed messages."""

    __tablename__ = "deliveries"
    __table_args__ = (
        Index("ix_deliveries_status_due_at", "status", "due_at"),
        # Today's pushes to a conversation, for a chat platform's daily cap (migration 10).
        Index("ix_deliveries_conversation_status_sent", "conversation_id", "status", "sent_at"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)
    bot_id: Mapped[str]
    conversation_id: Mapped[str]
    task_id: Mapped[str] = mapped_column(default="", server_default="")
    rule_id: Mapped[str] = mapped_column(default="", server_default="")
    run_id: Mapped[str] = mapped_column(default="", server_default="")
    purpose: Mapped[str]
    text: Mapped[str]
    files: Mapped[str] = mapped_column(default="[]", server_default="[]")  # JSON list of paths
    card: Mapped[str] = mapped_column(default="", server_default="")
    status: Mapped[str] = mapped_column(default="pending", server_default="pending")
    held_reason: Mapped[str] = mapped_column(default="", server_default="")
    attempts: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    last_error: Mapped[str] = mapped_column(default="", server_default="")
    due_at: Mapped[float]
    sent_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)
    message_id: Mapped[int] = mapped_column(default=0, server_default=_ZERO)  # messages.id once sent
    created_at: Mapped[float]


class ApprovalRow(Base):
    """What waits for a person's decision (docs/domain.md#questions-and-approvals): a task's question, or an
    approval."""

    __tablename__ = "approvals"
    __table_args__ = (
        Index("ix_approvals_status_created_at", "status", "created_at"),
        Index("ix_approvals_task_id_status", "task_id", "status"),
    )

    id: Mapped[str] = mapped_column(primary_key=True)  # q_<12 hex>
    kind: Mapped[str]  # question | approval
    bot_id: Mapped[str]
    conversation_id: Mapped[str]
    task_id: Mapped[str] = mapped_column(default="", server_default="")
    run_id: Mapped[str] = mapped_column(default="", server_default="")
    text: Mapped[str]  # the question, or what needs approving
    options: Mapped[str] = mapped_column(default="[]", server_default="[]")  # JSON list of labels
    default: Mapped[str | None] = mapped_column(default=None, nullable=True)  # with a default the run goes on
    code: Mapped[str] = mapped_column(default="", server_default="")  # 4 digits, for answering on a channel
    status: Mapped[str] = mapped_column(
        default="open", server_default="open"
    )  # open|answered|withdrawn|expired
    answer: Mapped[str] = mapped_column(default="", server_default="")
    decided_by: Mapped[str] = mapped_column(default="", server_default="")  # person|default|ttl
    created_at: Mapped[float]
    decided_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)


# -- rules (migration 6) ---------------------------------------------------------------------------


class RuleRow(Base):
    """A standing instruction in the user's own words, with a schedule and a mode (docs/domain.md#rules)."""

    __tablename__ = "rules"
    __table_args__ = (
        # The scheduler's one question: which rule is due next.
        Index("ix_rules_next_run_at", "next_run_at"),
        Index("ix_rules_bot_id", "bot_id"),
        Index("ix_rules_conversation_id", "conversation_id"),  # migration 10
    )

    id: Mapped[str] = mapped_column(primary_key=True)  # ru_<12 hex>
    bot_id: Mapped[str] = mapped_column(ForeignKey("bots.id"))
    conversation_id: Mapped[str] = mapped_column(ForeignKey("conversations.id"))  # where results go
    title: Mapped[str]
    instruction: Mapped[str]  # the user's words, verbatim
    kind: Mapped[str] = mapped_column(default="check", server_default="check")  # check | remind
    mode: Mapped[str] = mapped_column(default="act", server_default="act")  # off | observe | act
    schedule: Mapped[str]  # JSON, as the schedule module writes it
    tz: Mapped[str]  # IANA zone, taken from the system when the rule was created
    version: Mapped[int] = mapped_column(default=1, server_default=text("1"))
    # '' = capped at min(bot preset, workspace-write); otherwise a preset the person granted.
    granted_preset: Mapped[str] = mapped_column(default="", server_default="")
    next_run_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)  # 0 = none
    paused_reason: Mapped[str] = mapped_column(default="", server_default="")  # '' | failures | budget
    failures_in_row: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    created_at: Mapped[float]
    updated_at: Mapped[float]
    # The version whose observe -> act question was answered 继续观察 (0: none); a new version asks again.
    observe_ack_version: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    # JSON: {"kind": "schedule"} (the timer) or {"kind": "event", "source": ..., "filter"?: {...}}
    # (docs/runs.md#event-triggers).
    trigger: Mapped[str] = mapped_column(default=DEFAULT_TRIGGER, server_default=DEFAULT_TRIGGER)
    # Budgets (migration 8, docs/cost.md): per run and per calendar month in the rule's zone.
    run_budget_usd: Mapped[float] = mapped_column(default=0.10, server_default=text("0.1"))
    month_budget_usd: Mapped[float] = mapped_column(default=3.0, server_default=text("3.0"))
    # "YYYY-MM@budget" of the last monthly-budget pause that was pushed: one push per month and level.
    budget_pushed: Mapped[str] = mapped_column(default="", server_default="")


class RuleVersionRow(Base):
    """Each instruction a rule has had; a run records the version it ran, so its log can show the words."""

    __tablename__ = "rule_versions"

    rule_id: Mapped[str] = mapped_column(ForeignKey("rules.id"), primary_key=True)
    version: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    instruction: Mapped[str]
    created_at: Mapped[float]


class ChannelRow(Base):
    """A bot's connection to a chat platform (migration 9). Its login token is in the keyring, never here."""

    __tablename__ = "channels"
    __table_args__ = (Index("ix_channels_bot_id", "bot_id"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    bot_id: Mapped[str] = mapped_column(ForeignKey("bots.id"))
    kind: Mapped[str]  # wechat | feishu | dingtalk | telegram
    account: Mapped[str] = mapped_column(default="", server_default="")  # the platform's id of the bot
    owner: Mapped[str] = mapped_column(default="", server_default="")  # the user who connected it
    base_url: Mapped[str] = mapped_column(default="", server_default="")  # the account's API, when its own
    status: Mapped[str] = mapped_column(default="connecting", server_default="connecting")
    status_reason: Mapped[str] = mapped_column(default="", server_default="")
    # Where the platform's stream of messages was read up to; moved only with the messages it covers.
    cursor: Mapped[str] = mapped_column(default="", server_default="")
    # JSON list of peers besides the owner who may use the bot through this channel (migration 10).
    allowed: Mapped[str] = mapped_column(default="[]", server_default="[]")
    # The bot of an app the person registered (migration 11): its name there, and its own id (Feishu's
    # open_id, how an @-mention of it is told apart).
    display_name: Mapped[str] = mapped_column(default="", server_default="")
    bot_ref: Mapped[str] = mapped_column(default="", server_default="")
    created_at: Mapped[float]
    updated_at: Mapped[float]


class McpServerRow(Base):
    """One MCP server of a bot (migration 16): its settings as JSON, secrets named but kept in the keyring."""

    __tablename__ = "mcp_servers"

    bot_id: Mapped[str] = mapped_column(ForeignKey("bots.id"), primary_key=True)
    name: Mapped[str] = mapped_column(primary_key=True)
    position: Mapped[int]  # the order the person wrote them in
    config: Mapped[str]
    created_at: Mapped[float]
    updated_at: Mapped[float]


class MemoryEntryRow(Base):
    """One note of a bot's memory (migration 17). A deleted note keeps its row for a while (`deleted_at`),
    so that the person's 撤销 can bring it back."""

    __tablename__ = "memory_entries"
    __table_args__ = (Index("ix_memory_entries_bot_id_deleted_at", "bot_id", "deleted_at"),)

    id: Mapped[str] = mapped_column(primary_key=True)
    bot_id: Mapped[str] = mapped_column(ForeignKey("bots.id"))
    text: Mapped[str]
    source_kind: Mapped[str]  # conversation | task | rule | person
    source_id: Mapped[str] = mapped_column(default="", server_default="")
    created_at: Mapped[float]
    updated_at: Mapped[float]
    edited_by: Mapped[str]  # bot | person: who wrote the words as they stand
    deleted_at: Mapped[float | None]
    deleted_by: Mapped[str] = mapped_column(default="", server_default="")


class MemoryNotebookRow(Base):
    """A bot's notebook as a whole (migration 17): since when a note was refused for want of room."""

    __tablename__ = "memory_notebooks"

    bot_id: Mapped[str] = mapped_column(ForeignKey("bots.id"), primary_key=True)
    full_since: Mapped[float | None]


class InboundRow(Base):
    """A message that came in on a channel, stored before the platform's cursor moves past it. `key` is
    its dedupe key, so a redelivery is stored once, across restarts; `handled_at` is set once the chat
    pipeline has it (a message of ours in its conversation)."""

    __tablename__ = "inbound_messages"
    __table_args__ = (
        Index("ux_inbound_channel_key", "channel_id", "key", unique=True),
        Index("ix_inbound_channel_handled", "channel_id", "handled_at"),
        Index("ix_inbound_message_id", "message_id"),  # what was set aside, for needs-you (migration 10)
    )

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    channel_id: Mapped[str] = mapped_column(ForeignKey("channels.id"))
    key: Mapped[str]
    peer: Mapped[str]  # who wrote: the platform's user (or group) id
    platform_id: Mapped[str] = mapped_column(default="", server_default="")  # its message id there
    body: Mapped[str]  # JSON: what the message said (text, items, quote) as the adapter read it
    received_at: Mapped[float]
    handled_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)
    message_id: Mapped[int] = mapped_column(default=0, server_default=_ZERO)  # messages.id once handled
    # Hand-overs that failed (migration 10): past a few, the message is set aside and needs-you shows it.
    attempts: Mapped[int] = mapped_column(default=0, server_default=_ZERO)


class ChannelPeerRow(Base):
    """What a channel knows of one peer: the latest reply token it sent, when it last wrote (the window
    to reply in opens from there), and the conversation it chats in."""

    __tablename__ = "channel_peers"
    # Which peer a conversation chats with, asked for every send (migration 10).
    __table_args__ = (Index("ix_channel_peers_conversation_id", "conversation_id"),)

    channel_id: Mapped[str] = mapped_column(ForeignKey("channels.id"), primary_key=True)
    peer: Mapped[str] = mapped_column(primary_key=True)
    reply_token: Mapped[str] = mapped_column(default="", server_default="")
    last_inbound_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)
    # Sends to the peer since it last wrote (every attempt counts); the platform allows only so many.
    sends_since_inbound: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    # When a peer the bot does not serve was last told so (migration 10): once a day at most.
    refused_at: Mapped[float] = mapped_column(default=0.0, server_default=_ZERO)
    conversation_id: Mapped[str] = mapped_column(default="", server_default="")
    # A group chat's name, and whether the owner let the bot work there (migration 12, DingTalk):
    # '' not asked yet | asked | allowed | refused. A one-to-one peer leaves both empty.
    title: Mapped[str] = mapped_column(default="", server_default="")
    admission: Mapped[str] = mapped_column(default="", server_default="")

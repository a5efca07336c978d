"""The tables, as SQLAlchemy declarative models. Only the repositories and migrations touch these classes;
everything else sees the frozen records the repositories return."""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import Double, ForeignKey, Index, Text, false, text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

# Built out here because `MessageRow.text` shadows `text` inside that class body.
_ZERO = text("0")


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
    model: Mapped[str] = mapped_column(default="", server_default="")
    tokens_in: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    tokens_out: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    duration_ms: Mapped[int] = mapped_column(default=0, server_default=_ZERO)
    # A JSON list of step dicts; stored as text so the schema is the same on every database.
    activity: Mapped[str] = mapped_column(default="[]", server_default="[]")
    created_at: Mapped[float]


class SettingRow(Base):
    __tablename__ = "settings"

    key: Mapped[str] = mapped_column(primary_key=True)
    value: Mapped[str]  # JSON
    updated_at: Mapped[float]

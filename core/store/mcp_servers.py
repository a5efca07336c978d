"""The `mcp_servers` table: a bot's MCP servers as the person configured them (docs/outside-tools.md).

A bot's servers are saved whole (`replace_servers`), in one transaction, in the order the person wrote
them. Secret values are never here: `config` holds their names, the values are in the keyring."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from core.store.models import McpServerRow


def list_servers(s: Session, bot_id: str) -> list[tuple[str, dict[str, Any]]]:
    """(name, config) of each of the bot's servers, in the order they were written."""
    rows = s.scalars(
        select(McpServerRow).where(McpServerRow.bot_id == bot_id).order_by(McpServerRow.position)
    )
    return [(row.name, json.loads(row.config)) for row in rows]


def replace_servers(
    s: Session, bot_id: str, servers: Sequence[tuple[str, dict[str, Any]]], now: float
) -> None:
    created = {
        row.name: row.created_at
        for row in s.scalars(select(McpServerRow).where(McpServerRow.bot_id == bot_id))
    }
    s.execute(delete(McpServerRow).where(McpServerRow.bot_id == bot_id))
    for position, (name, config) in enumerate(servers):
        s.add(
            McpServerRow(
                bot_id=bot_id,
                name=name,
                position=position,
                config=json.dumps(config, ensure_ascii=False),
                created_at=created.get(name, now),
                updated_at=now,
            )
        )

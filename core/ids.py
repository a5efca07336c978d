"""Identifier formats shared across the host (docs/domain.md#ids)."""

from __future__ import annotations

import secrets


def new_id(prefix: str) -> str:
    """`<prefix>_<12 hex>`, e.g. `t_3f2a1c9b0d4e`."""
    return f"{prefix}_{secrets.token_hex(6)}"


def chat_session_id(conversation_id: str) -> str:
    return f"chat-{conversation_id}"

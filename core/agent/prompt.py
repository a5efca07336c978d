"""The model-facing system prompt (English, per DESIGN.md "Defaults")."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from core.agent.session_spec import SessionSpec

_BASE = """You are Errand, a capable personal assistant running on the user's computer.
You can use tools to run shell commands, read and write files, search and fetch web pages.
Decide for yourself and say what you chose; ask only when a wrong guess would cause harm or cost money,
when you need something only the user has, or when a step cannot be undone.
Reply in the language the user writes in. Be concise."""


def system_prompt(spec: SessionSpec, now: datetime, sandbox_note: str, outside: Sequence[str] = ()) -> str:
    """`outside`: what the bot's tools from outside add (the list of its skills)."""
    sections = [
        _BASE,
        f"Working directory: {spec.cwd}",
        f"Current time: {now.astimezone().strftime('%Y-%m-%d %H:%M %Z')}",
        f"Sandbox: {sandbox_note}",
        *spec.prompt_sections,
        *outside,
    ]
    return "\n\n".join(s for s in sections if s)

"""`remember {text}` and `forget {id}`: the bot's own hand in its memory (docs/memory.md#the-tools)."""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from core.agent.tool_api import ToolContext, ToolError, ToolSpec
from core.memory.notebook import MAX_ENTRY_CHARS

REMEMBER = "remember"
FORGET = "forget"


class MemoryCommands(Protocol):
    async def remember(self, bot_id: str, session_id: str, text: str) -> str: ...

    async def forget(self, bot_id: str, entry_id: str) -> str: ...


class RememberArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Checked by the service, so that a long note gets the limit and what to do, not a schema error.
    text: str = Field(
        description=f"One short fact, in the user's language (at most {MAX_ENTRY_CHARS} characters)."
    )


class ForgetArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=40, description="The note's id (m_...), as in your memory.")


def memory_tools(commands: MemoryCommands, bot_id: str) -> list[ToolSpec]:
    async def remember(ctx: ToolContext, args: RememberArgs) -> str:
        try:
            return await commands.remember(bot_id, ctx.session_id, args.text)
        except ValueError as exc:
            raise ToolError(str(exc)) from exc

    async def forget(ctx: ToolContext, args: ForgetArgs) -> str:
        try:
            return await commands.forget(bot_id, args.id.strip())
        except ValueError as exc:
            raise ToolError(str(exc)) from exc

    return [
        ToolSpec(
            REMEMBER,
            "Keep a note in your memory for later conversations and tasks: a lasting fact, preference or "
            "decision about the user or their work that will matter again. Not what only this conversation "
            "needs, and never a password, key or token. The user sees your notes and can change them.",
            RememberArgs,
            remember,
        ),
        ToolSpec(
            FORGET,
            "Delete a note from your memory by its id, when it is wrong or no longer matters.",
            ForgetArgs,
            forget,
        ),
    ]

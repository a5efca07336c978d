"""The chat agent's `ask_user_question` (DESIGN.md chat tools): a choice only the person can make, asked as
a card in the conversation while the turn waits. Tasks ask through task_report instead."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from core.agent.tool_api import SessionKind, ToolContext, ToolError, ToolSpec
from core.attention.approval_center import ApprovalCenter


class AskArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(
        min_length=1, max_length=300, description="One concrete question, in the user's language."
    )
    options: list[str] | None = Field(
        default=None, max_length=9, description="Choices, if the answer is one of them."
    )


def ask_user_question_tool(center: ApprovalCenter) -> ToolSpec:
    async def ask(ctx: ToolContext, args: AskArgs) -> str:
        options = tuple(o.strip() for o in args.options or () if o.strip())
        answer = await center.ask(ctx.session_id, args.question.strip(), options)
        if answer is None:
            raise ToolError(
                "The user did not answer within 10 minutes. Go on with the most reasonable choice and say so."
            )
        return f"The user answered: {answer}"

    return ToolSpec(
        "ask_user_question",
        "Ask the user one question and wait for the answer. Only when a wrong guess would cause harm or cost "
        "money, or you need something only the user has; never about language, format, scope or style.",
        AskArgs,
        ask,
        frozenset[SessionKind]({"chat"}),
    )

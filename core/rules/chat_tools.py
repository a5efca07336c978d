"""The chat agent's `rule_create` (docs/chat.md#rules-from-chat): a standing instruction with a time or an
interval becomes a rule in this conversation. The instruction is the user's words verbatim; the agent supplies
the structured schedule. A bad field comes back to the model as a tool error naming it, so it can fix the
call."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.agent.tool_api import SessionKind, ToolContext, ToolError, ToolSpec
from core.errors import InvalidInputError, NotFoundError
from core.rules.commands import RuleCommands
from core.tasks.language import language_of
from core.translations import text

CHAT_PREFIX = "chat-"


class RuleCreateArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str = Field(min_length=1, max_length=80, description="A short title in the user's language.")
    instruction: str = Field(
        min_length=1, description="The user's own words for what to do, verbatim (not a paraphrase)."
    )
    schedule: Any = Field(
        description=(
            "When it runs, as an object. One of: "
            '{"kind": "daily", "time": "08:00", "days"?: [0..6, 0 = Monday]}; '
            '{"kind": "weekly", "time": "09:00", "days": [0]}; '
            '{"kind": "every", "minutes": 30} (at least 15); '
            '{"kind": "once", "at": "2026-12-01 15:00"}; {"kind": "cron", "cron": "0 8 * * 1-5"}. '
            "Times are the user's local time unless you add `tz` (an IANA zone)."
        )
    )
    kind: str | None = Field(
        default=None,
        description='"check" (default): look at something and tell the user when it matters. "remind": '
        "deliver the instruction's words as they are at that time, with no checking.",
    )
    mode: str | None = Field(
        default=None,
        description='"act" (default). "observe" only when the user asks to watch it first (「先观察」).',
    )


def rule_create_tool(rules: RuleCommands) -> ToolSpec:
    async def rule_create(ctx: ToolContext, args: RuleCreateArgs) -> str:
        return await create_from_chat(rules, ctx.session_id, args)

    return ToolSpec(
        "rule_create",
        "Create a standing rule that runs on a schedule (a time or an interval) and tells the user when "
        "something is worth saying. Not for one-off work: use task_start for that.",
        RuleCreateArgs,
        rule_create,
        frozenset[SessionKind]({"chat"}),
    )


async def create_from_chat(rules: RuleCommands, session_id: str, args: RuleCreateArgs) -> str:
    if not session_id.startswith(CHAT_PREFIX):
        raise ToolError("rule_create works only in a conversation")
    conversation_id = session_id.removeprefix(CHAT_PREFIX)
    bot_id = await rules.bot_of_conversation(conversation_id)
    if bot_id is None:
        raise ToolError("rule_create works only in a conversation")
    try:
        view = await rules.create(
            bot_id=bot_id,
            conversation_id=conversation_id,
            title=args.title,
            instruction=args.instruction,
            schedule=args.schedule,
            kind=args.kind or "check",
            mode=args.mode or "act",
            lang=language_of(args.instruction),
        )
    except InvalidInputError as exc:
        raise ToolError(
            f"The rule was not created. Fix `{exc.field}` and call rule_create again: {exc.message}"
        ) from exc
    except NotFoundError as exc:
        raise ToolError(f"The rule was not created: {exc.message} Tell the user.") from exc
    zh = language_of(args.instruction) == "zh"
    if view.kind == "remind":
        example = (
            f"「好,{view.schedule_words}提醒你:{view.instruction.strip()[:40]}」"
            if zh
            else f"“OK, I'll remind you {view.schedule_words}.”"
        )
    elif view.mode == "observe":
        example = (
            f"「已建好规则:{view.schedule_words} {view.title},先观察几天,只记录不打扰你。」"
            if zh
            else f"“Rule created: {view.schedule_words}, {view.title}. I'll watch first and only note what "
            "I would say, without disturbing you.”"
        )
    else:
        example = (
            f"「已建好规则:{view.schedule_words} {view.title},有值得说的就告诉你。」"
            if zh
            else f"“Rule created: {view.schedule_words}, {view.title}. I'll tell you when there's something "
            "worth saying.”"
        )
    told = (
        f"Created rule {view.id} 「{view.title}」 in {view.mode} mode; it runs {view.schedule_words}. "
        "Reply to the user once, in their language, confirming it in one sentence with these schedule "
        f"words, e.g. {example} Do not do the check now."
    )
    if await rules.channel_of_conversation(conversation_id) == "wechat":
        # docs/channels.md#sending: WeChat takes a bot's message only within a day of the person's own.
        note = text("zh" if zh else "en", "channel_push.rule_window_note")
        told += f" This conversation is on WeChat: end your reply with this sentence, word for word: {note}"
    return told

"""Host events the UI bridge and API listen to. Small and immutable: listeners re-read what they show."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ConversationsChanged:
    """A conversation was created, renamed, or its last line or busy state changed."""


@dataclass(frozen=True, slots=True)
class BotsChanged:
    pass


@dataclass(frozen=True, slots=True)
class SkillsChanged:
    """A skill was added or removed through the app (one a person drops into a folder is seen at a bot's
    next turn, and announced then). `bot_id` None: a shared skill, so every bot's list."""

    bot_id: str | None


@dataclass(frozen=True, slots=True)
class MemoryChanged:
    """A note of the bot's memory was kept, changed or deleted, or the notebook filled up or got room."""

    bot_id: str


@dataclass(frozen=True, slots=True)
class WebSearchChanged:
    """Web search was set up, changed or turned off (docs/web-search.md#settings)."""


@dataclass(frozen=True, slots=True)
class McpServersChanged:
    """A bot's MCP servers were saved, or one of them started, stopped, failed or changed its tools."""

    bot_id: str


@dataclass(frozen=True, slots=True)
class MessagesChanged:
    """A message was stored or updated in this conversation."""

    conversation_id: str


@dataclass(frozen=True, slots=True)
class LiveReplyChanged:
    """The reply being streamed in this conversation grew (text or steps), started or finished."""

    conversation_id: str


@dataclass(frozen=True, slots=True)
class AttentionChanged:
    """Something on the needs-you list may have come or gone that no TaskChanged or RuleChanged announces:
    a chat question or approval opened or closed, a delivery got stuck or went out, a bot's balance
    crossed its reserve. Re-read the list."""


@dataclass(frozen=True, slots=True)
class TaskChanged:
    """A task's stage, runs or latest line changed."""

    task_id: str


@dataclass(frozen=True, slots=True)
class RunStepAdded:
    """A working run of this task took a step (a model reply, a tool call or its result): its live
    处理过程 grew. Separate from TaskChanged so lists that show no steps don't re-read on every step."""

    task_id: str
    run_id: str


@dataclass(frozen=True, slots=True)
class RuleChanged:
    """A rule was created, edited (title, words, schedule, mode) or deleted: re-read it, or drop it."""

    rule_id: str


@dataclass(frozen=True, slots=True)
class ChannelChanged:
    """A bot's chat channel was added, removed, or its status changed (connected, login expired, error)."""

    channel_id: str


@dataclass(frozen=True, slots=True)
class PricesChanged:
    """A model's price override was set or removed; views showing prices re-read them."""

    model: str

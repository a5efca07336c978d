"""The host: store, bots, chat and the agent runtime, composed once and run on whatever loop is given.

Constructing a Host is cheap; `start()` imports the agent runtime and its tools, so the desktop app can show
its window first.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from core.agent.http_warmup import warm_up
from core.agent.model_config import ModelConfig, RetryPolicy
from core.agent.outside_sources import CombinedSource
from core.agent.tool_api import ToolSpec
from core.attention.approval_center import ApprovalCenter
from core.attention.chat_tools import ask_user_question_tool
from core.attention.service import AttentionService
from core.audit.channel_sends import AuditedSends
from core.audit.recorder import AuditRecorder
from core.audit.trail import AuditTrail
from core.bots.secret_store import SecretStore
from core.bots.service import BackgroundSettingsChanged, BotService
from core.bots.with_activity import BotsWithActivity
from core.bus import EventBus
from core.changes import AttentionChanged, BotsChanged, ChannelChanged
from core.channels.answers import ChannelAnswers
from core.channels.dingtalk.presses import DingTalkPresses
from core.channels.feishu.apps import FeishuApps
from core.channels.feishu.presses import CardPresses
from core.channels.inbox import ChannelInbox
from core.channels.platform_media import PlatformMedia
from core.channels.sends import ChannelSends
from core.channels.service import ChannelService
from core.channels.telegram.presses import TelegramPresses
from core.channels.wechat.ilink import configured_urls
from core.channels.wechat.media import MediaFetcher
from core.chat.ports import LiveTurns
from core.chat.service import ChatService
from core.clock import Clock, SystemClock
from core.cost.meter import CostMeter
from core.cost.price_book import PriceBook
from core.cost.reserve import BalanceRead, BotBalanceSource, ReserveChanged, ReserveWatcher
from core.delivery.outbox import Outbox
from core.delivery.policy import COALESCE_WINDOW_S
from core.memory.service import MemoryService
from core.preferences_service import PreferencesService
from core.rules.chat_tools import rule_create_tool
from core.rules.commands import RuleCommands
from core.rules.event_triggers import EventTriggers
from core.rules.month_budget import RulePausedAtBudget
from core.rules.runner import RULE_LIMITS, RuleRunner
from core.rules.scheduler import Scheduler
from core.rules.service import RuleService
from core.rules.timeline import StoredTimeline
from core.runs.spending import RunSpending
from core.search.service import SearchService
from core.sidebar_state import BotActivityReader
from core.store.database import Database
from core.tasks.prompts import CHAT_RULE_RULES, CHAT_TASK_RULES
from core.tasks.retention_sweeper import RetentionSweeper
from core.tasks.runner import TASK_RETRY
from core.tasks.service import TaskService
from core.tasks.slots import SlotPolicy
from core.tasks.startup_recovery import StartupRecovery
from core.tasks.tools import chat_task_tools

if TYPE_CHECKING:
    from core.agent.runtime import AgentRuntime
    from core.mcp.service import McpService
    from core.skills.service import SkillsService
    from core.web_search.service import WebSearchService

log = logging.getLogger(__name__)
MAX_GATHER_S = 3600.0


def gather_seconds(environ: Mapping[str, str]) -> float:
    """ERRAND_GATHER_S when it is a number of seconds from 0 to an hour; else the 2-minute default."""
    raw = environ.get("ERRAND_GATHER_S", "")
    if not raw:
        return COALESCE_WINDOW_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= MAX_GATHER_S:
        log.warning(
            "ERRAND_GATHER_S=%r is not 0 to %.0f seconds; using %.0f", raw, MAX_GATHER_S, COALESCE_WINDOW_S
        )
        return COALESCE_WINDOW_S
    return value


class ChatTools:
    """The chat agent's tools beyond the common ones (`core.chat.ports.ChatToolSource`): task_start,
    task_message and task_list with the chat's live turns, rule_create, and ask_user_question."""

    def __init__(self, tasks: TaskService, rules: RuleCommands, approvals: ApprovalCenter) -> None:
        self._tasks = tasks
        self._rules = rules
        self._approvals = approvals

    def chat_tools(self, live: LiveTurns) -> list[ToolSpec]:
        return [
            *chat_task_tools(self._tasks.chat_commands(live)),
            rule_create_tool(self._rules),
            ask_user_question_tool(self._approvals),
        ]


class Host:
    def __init__(
        self,
        data_dir: Path,
        *,
        secrets: SecretStore,
        clock: Clock | None = None,
        model_override: ModelConfig | None = None,
        home: Path | None = None,
        web_transport: httpx.AsyncBaseTransport | None = None,
        database_url: str | None = None,
        chat_retry: RetryPolicy | None = None,
        task_retry: RetryPolicy | None = None,
        slot_policy: SlotPolicy | None = None,
        balance_read: BalanceRead | None = None,
        environ: Mapping[str, str] | None = None,
        gather_s: float | None = None,
        bus: EventBus | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.clock: Clock = clock or SystemClock()
        # The desktop makes the bus first: its window listens before the host is built.
        self.bus = bus or EventBus()
        self.secrets = secrets
        self.db = Database(database_url) if database_url else Database.for_data_dir(data_dir)
        # Built in dependency order, every collaborator through its constructor. Where two parts need each
        # other, the part that closes the loop is built after both (RuleCommands, the chat tools, restart
        # recovery) or the change is announced on the bus (a bot's settings, the chat reserve).
        environ = os.environ if environ is None else environ
        # The outbox reaches chat platforms (WeChat) through their senders; the receiving side is
        # `self.channels` below.
        # Each Feishu channel's REST client, shared by its connection, its sends and its card updates.
        self.feishu_apps = FeishuApps(secrets, self.clock, environ)
        self.channel_sends = ChannelSends(
            self.db, self.bus, self.clock, secrets, environ=environ, feishu=self.feishu_apps
        )
        # The audit trail of what runs did outside themselves (docs/audit.md); it only observes.
        self.audit = AuditRecorder(
            AuditTrail(data_dir / "audit" / "audit.jsonl", self.clock),
            folder_of=self._folder_of_session,
            run_of=self._run_of_session,
        )
        self.media = MediaFetcher(configured_urls(environ)[1])  # attachments that come in on WeChat
        # `gather_s`: how long a push on a channel that rings waits for others to go with it
        # (docs/push-rules.md); tests on the real clock pass 0 (ERRAND_GATHER_S for `errand serve`).
        self.outbox = Outbox(
            self.db,
            self.bus,
            self.clock,
            channels=AuditedSends(self.channel_sends, self.audit),
            coalesce_window_s=gather_s if gather_s is not None else gather_seconds(environ),
        )
        self.bots = BotService(
            self.db, self.bus, self.clock, data_dir, secrets, model_override, held_pushes=self.outbox
        )
        # Cost controls (docs/cost.md): the user's price overrides, the meter both runners price responses
        # with, and the watcher that keeps what is left of a provider balance for chat.
        self.prices = PriceBook(self.db, self.clock, self.bus)
        meter = CostMeter(self.clock, self.prices.overrides)
        self.reserve = ReserveWatcher(self.clock, bus=self.bus, bots=self._balance_sources, read=balance_read)
        self.tasks = TaskService(
            self.db,
            self.bus,
            self.clock,
            self.bots,
            self.outbox,
            meter=meter,
            reserve=self.reserve,
            policy=slot_policy,
            retry=task_retry or TASK_RETRY,
            audit=self.audit,
        )
        # The reads and what runs write about rules; a person's commands are `self.rules` below.
        self.rule_service = RuleService(self.db, self.bus, self.clock, self.bots)
        # Rule runs share the task runner's background slots, so the per-bot and overall caps hold for both.
        self.rule_runner = RuleRunner(
            self.db,
            self.bus,
            self.clock,
            self.bots,
            self.outbox,
            self.rule_service,
            self.tasks.runner,
            spending=RunSpending(meter, self.reserve.record_spend, self.reserve.is_low),
            limits=replace(RULE_LIMITS, retry=task_retry or TASK_RETRY),
        )
        self.scheduler = Scheduler(
            StoredTimeline(self.db, self.bus, self.clock, self.rule_service, self.rule_runner), self.clock
        )
        self.rules = RuleCommands(
            self.db,
            self.bus,
            self.clock,
            self.bots,
            self.rule_service,
            schedule=self.scheduler,
            runs=self.rule_runner,
        )
        # Task runs' approvals wait here (docs/permissions.md); so do rule runs': act asks (1 h), observe is
        # refused.
        self.approvals = ApprovalCenter(
            self.db,
            self.bus,
            self.clock,
            self.outbox,
            task_runs=self.tasks.runner,
            rule_runs=self.rule_runner,
            audit=self.audit,
        )
        # Approvals that waited before a restart are expired once recovery has seen them.
        self.task_recovery = StartupRecovery(self.db, self.clock, self.approvals)
        self.chat = ChatService(
            self.db,
            self.bus,
            self.clock,
            self.bots,
            tools=ChatTools(self.tasks, self.rules, self.approvals),
            task_chips=self.tasks,
            replies=self.outbox,
            retry=chat_retry or RetryPolicy(),
            prompt_sections=(CHAT_TASK_RULES, CHAT_RULE_RULES),
        )
        self.event_triggers = EventTriggers(self.rule_service, self.rule_runner)
        # Chat channels (WeChat, Feishu): each stored message becomes chat in its peer's conversation.
        self.channels = ChannelService(
            self.db,
            self.bus,
            self.clock,
            secrets,
            ChannelInbox(
                self.db,
                self.bus,
                self.clock,
                self.chat,
                outbox=self.outbox,
                answers=ChannelAnswers(self.db, self.tasks, self.approvals, self.rules),
                strangers=self.channel_sends,
                media=self.media,
                workspace_of=self.bots.workspace_of,
                platform_media=PlatformMedia(self.db, self.feishu_apps, secrets, environ),
            ),
            environ=environ,
            feishu=self.feishu_apps,
        )
        # Each bot's notebook (docs/memory.md): its notes travel in every session's system prompt.
        self.memory = MemoryService(self.db, self.clock, self.bus, require_bot=self.bots.get)
        self.attention = AttentionService(
            self.tasks,
            self.approvals,
            self.outbox,
            self.chat,
            self.clock,
            rules=self.rules,
            reserve=self.reserve,
            channels=self.channels,
            bots=self.bots,
            memory=self.memory,
        )
        # A button pressed on a Feishu or DingTalk card, or under a Telegram message, takes the same
        # needs-you actions as the desktop.
        self.channels.answer_presses_with(
            CardPresses(self.db, self.feishu_apps, self.attention, self.tasks),
            TelegramPresses(self.db, self.attention, self.tasks),
            DingTalkPresses(self.db, self.attention, self.tasks),
        )
        # What the desktop window reads of bots: their settings and each one's sidebar activity.
        self.desktop_bots = BotsWithActivity(
            self.bots, BotActivityReader(self.tasks, self.attention, self.chat, self.bots)
        )
        self._runtime: AgentRuntime | None = None
        self._mcp: McpService | None = None
        self._skills: SkillsService | None = None
        self._web_search: WebSearchService | None = None
        self._environ = environ
        # Retention (docs/retention.md): archive idle tasks, prune old run logs, clean up idle folders.
        self.retention = RetentionSweeper(
            self.db,
            self.clock,
            self.bus,
            delete_session=self._delete_session_files,
            session_open=self._session_open,
        )
        self.preferences = PreferencesService(self.db, self.clock)
        # The sidebar's search and GET /api/search: messages, tasks and rules (full text, migration 14).
        self.search = SearchService(self.db)
        self._home = home
        self._web_transport = web_transport
        self.started = asyncio.Event()
        self._background: set[asyncio.Task[None]] = set()
        self.bus.subscribe(self._on_event)
        # Called by `resync()` after the outbox looked again: the scheduler recomputes, channels reconnect.
        self._resync_listeners: list[Callable[[str], Awaitable[None]]] = [
            self.scheduler.recompute,
            self._resync_background,
        ]
        # Said plainly to the user (health, doctor) and to the model: whether shell commands are sandboxed.
        self.sandbox_note = ""

    @property
    def runtime(self) -> AgentRuntime:
        if self._runtime is None:
            raise RuntimeError("the host has not started")
        return self._runtime

    @property
    def mcp(self) -> McpService:
        if self._mcp is None:
            raise RuntimeError("the host has not started")
        return self._mcp

    @property
    def web_search(self) -> WebSearchService:
        if self._web_search is None:
            raise RuntimeError("the host has not started")
        return self._web_search

    @property
    def skills(self) -> SkillsService:
        if self._skills is None:
            raise RuntimeError("the host has not started")
        return self._skills

    async def start(self) -> None:
        # Built off the loop while the store opens (its file work lets it run): the TLS context model
        # clients share (~70 ms), ready before the first turn. The price catalogue waits for a first run.
        warm = asyncio.ensure_future(asyncio.to_thread(warm_up))
        try:
            for sub in ("sessions", "logs", "bots"):
                await asyncio.to_thread((self.data_dir / sub).mkdir, parents=True, exist_ok=True)
            await self.db.open()
            await self.prices.load()
            # The runtime and its tools import in a worker thread: the UI loop stays free meanwhile.
            runtime_module = await asyncio.to_thread(importlib.import_module, "core.agent.runtime")
            mcp_module = await asyncio.to_thread(importlib.import_module, "core.mcp.service")
            skills_module = await asyncio.to_thread(importlib.import_module, "core.skills.service")
            search_module = await asyncio.to_thread(importlib.import_module, "core.web_search.service")
            guard_module = await asyncio.to_thread(importlib.import_module, "core.guard.guard")
            # The memory tools' schemas, imported here rather than inside the first turn.
            await asyncio.to_thread(importlib.import_module, "core.memory.tools")
        finally:
            await warm
        # A bot's MCP servers start when one of its sessions opens, not here (docs/outside-tools.md).
        self._mcp = mcp_module.McpService(
            self.db,
            self.secrets,
            self.clock,
            self.bus,
            logs_dir=self.data_dir / "logs",
            workspace_of=self.bots.workspace_of,
            require_bot=self.bots.get,
        )
        # Skills are read from disk at each turn (docs/skills.md): a folder dropped there needs no restart.
        self._skills = skills_module.SkillsService(
            shared_dir=self.data_dir / "skills",
            bots_dir=self.data_dir / "bots",
            require_bot=self.bots.get,
            bus=self.bus,
        )
        await self._skills.clean_leftovers()
        # One web search setup for every bot (docs/web-search.md); its tool only while one is set up.
        self._web_search = search_module.WebSearchService(
            self.db, self.secrets, self.clock, self.bus, environ=self._environ
        )
        await self.memory.purge()
        self._runtime = runtime_module.AgentRuntime(
            sessions_dir=self.data_dir / "sessions",
            clock=self.clock,
            home=self._home,
            web_transport=self._web_transport,
            logs_dir=self.data_dir / "logs" / "jobs",
            approvals=self.approvals,
            outside_tools=CombinedSource([self._mcp, self._skills, self.memory, self._web_search]),
            guard=guard_module.ToolGuard(guard_module.PolicyFile(self.data_dir / guard_module.POLICY_FILE)),
        )
        self._runtime.subscribe(self.audit.on_agent_event)
        default = await self.bots.ensure_default()
        # The sandbox probe runs a process once per app run; do it here, off the loop, not in a first turn.
        sandbox = await asyncio.to_thread(
            runtime_module.ShellSandbox.detect, await self.bots.permission(default.id), self._home
        )
        self.sandbox_note = sandbox.description
        await self.outbox.recover()  # before anything flushes: what a crash cut off mid-send is unsure
        await self.chat.start(self.runtime)
        await self.task_recovery.recover()
        await self.tasks.start(self.runtime)
        await self.rule_runner.start(self.runtime)
        await self.scheduler.start()
        await self.channels.start()
        self.reserve.start()
        self.retention.start()
        self.started.set()
        log.info("host started on %s", self.data_dir)

    def _folder_of_session(self, session_id: str) -> Path | None:
        session = self._runtime.get(session_id) if self._runtime is not None else None
        return session.spec.cwd if session is not None else None

    def _run_of_session(self, session_id: str) -> str | None:
        if session_id.startswith("task-"):
            return self.tasks.runner.active_run(session_id.removeprefix("task-"))
        if session_id.startswith("rule-"):
            context = self.rule_runner.approval_context(session_id)
            return context[0] if context is not None else None
        return None

    def _on_event(self, event: object) -> None:
        """Changes other parts announce that the host answers with work of its own."""
        if isinstance(event, BackgroundSettingsChanged) and self.started.is_set():
            # A bot's slots, pause or quiet hours changed: a queued run may go now (the bot service then
            # lets held pushes go).
            self.tasks.runner.poke()
        elif isinstance(event, ReserveChanged):
            self._reserve_changed(event.bot_id)
        elif isinstance(event, ChannelChanged) and self.started.is_set():
            # A channel connected again: what waited for it may go now.
            self._spawn(self._flush_outbox())
        elif isinstance(event, RulePausedAtBudget) and self.started.is_set():
            # A run's cost paused its rule: the scheduler re-arms without it until the next 1st.
            self._spawn(self.scheduler.recompute("budget"))

    async def _flush_outbox(self) -> None:
        await self.outbox.flush()

    async def _balance_sources(self) -> list[BotBalanceSource]:
        sources = []
        for bot in await self.bots.list():
            model = await self.bots.model_config(bot.id)
            sources.append(BotBalanceSource(bot.id, model.base_url, model.api_key))
        return sources

    def _reserve_changed(self, bot_id: str) -> None:
        """A bot's balance crossed its reserve: its task runs park or go on, needs-you shows it or not."""
        if not self.started.is_set():
            return
        self._spawn(self.tasks.runner.reserve_changed(bot_id))
        self.bus.publish(BotsChanged())
        self.bus.publish(AttentionChanged())

    def _spawn(self, work: Coroutine[object, object, None]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _session_open(self, session_id: str) -> bool:
        return self._runtime is not None and self._runtime.get(session_id) is not None

    async def _delete_session_files(self, session_id: str) -> bool:
        """Retention removes a cleaned-up task's session history; not while the session is open."""
        if self._runtime is None or self._runtime.get(session_id) is not None:
            return False
        await self._runtime.delete_history(session_id)
        return True

    async def _resync_background(self, reason: str) -> None:
        """After a sleep or a clock change, retention looks again and balances are read again."""
        self.retention.poke()
        await self.reserve.refresh()

    def on_resync(self, listener: Callable[[str], Awaitable[None]]) -> None:
        """Run `listener(reason)` on every resync (after sleep, a clock change, or at start)."""
        self._resync_listeners.append(listener)

    async def resync(self, reason: str) -> None:
        """Time may have jumped (the machine slept, or the clock was changed): look at every time-based
        decision again. The outbox re-checks delivery windows (quiet hours, held items, its one timer);
        then each listener (schedules, channel connections). `reason` is "resume", "clock" or "start"."""
        if not self.started.is_set():
            return
        log.info("resync after %s", reason)
        await self.outbox.flush()
        for listener in list(self._resync_listeners):
            try:
                await listener(reason)
            except Exception:
                log.exception("a resync listener failed after %s", reason)

    async def stop(self) -> None:
        """Finish writes, stop sessions and jobs, close the database. Safe to call twice."""
        await self.scheduler.stop()
        await self.retention.stop()
        await self.reserve.stop()
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.channels.stop()  # nothing more comes in
        await self.outbox.close()  # what is with a platform gets its answer
        if self._runtime is not None:
            await self.rule_runner.stop()
            await self.tasks.shutdown()
            await self._runtime.close()
            await self.chat.stop()
            self._runtime = None
        if self._mcp is not None:
            await self._mcp.close()  # after the sessions: no call is left waiting on a server
        if self._web_search is not None:
            await self._web_search.close()
        await self.outbox.close()  # replies the last turns stored
        await self.channel_sends.close()
        await self.audit.close()  # after the last sends and tool calls: their events are on disk
        await self.feishu_apps.close()
        await self.media.close()
        await self.db.close()
        log.info("host stopped")

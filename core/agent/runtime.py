"""The agent runtime (docs/architecture.md#the-packages-of-core).

It owns sessions, their history on disk, tools, jobs and one event stream.

The host imports it when it starts, in a worker thread: the desktop app shows its window first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

import httpx

from core.agent import events as ev
from core.agent.history import HistoryStore, SessionMeta
from core.agent.jobs import Job, JobManager
from core.agent.model_client import ModelClient
from core.agent.model_config import ModelConfig
from core.agent.sandbox import PathGuard, Permission, ShellSandbox
from core.agent.session import AgentSession
from core.agent.session_spec import SessionSpec
from core.agent.tool_api import ApprovalGate, OutsideToolSource, ToolContext, ToolSpec
from core.agent.tools.common import common_tools
from core.bus import EventBus
from core.clock import Clock
from core.guard.guard import GUARDED_KINDS, GuardedCall, ToolGuard, Verdict

log = logging.getLogger(__name__)


class AgentRuntime:
    def __init__(
        self,
        *,
        sessions_dir: Path,
        clock: Clock,
        home: Path | None = None,
        web_transport: httpx.AsyncBaseTransport | None = None,
        logs_dir: Path | None = None,
        approvals: ApprovalGate | None = None,
        outside_tools: OutsideToolSource | None = None,
        guard: ToolGuard | None = None,
    ) -> None:
        self.clock = clock
        self.events = EventBus()
        self.history = HistoryStore(sessions_dir)
        self.common_tools: list[ToolSpec] = common_tools(web_transport=web_transport)
        self.jobs = JobManager(clock, on_event=self.emit, log_dir=logs_dir)
        self.jobs.on_job_end = self._wake_owner
        self._home = home
        self._sessions: dict[str, AgentSession] = {}
        self._opening: dict[str, asyncio.Future[AgentSession]] = {}
        self._clients: dict[ModelConfig, ModelClient] = {}
        self._sandboxes: dict[SessionSpec, ShellSandbox] = {}
        # One guard per permission, kept across tool calls: building one per call resolved every root again.
        self._guards: dict[Permission, PathGuard] = {}
        # Where calls that need a person wait (the host's ApprovalCenter); None: such calls are refused.
        self.approvals = approvals
        # Where each session's tools from outside come from (the bot's MCP servers); None: there are none.
        self._outside_tools = outside_tools
        # What judges the tool calls of task and rule sessions before they run (docs/guard.md).
        self.guard = guard

    # ---- events -------------------------------------------------------------------------------------

    def emit(self, event: ev.AgentEvent) -> None:
        self.events.publish(event)

    def subscribe(self, listener: Callable[[ev.AgentEvent], None]) -> Callable[[], None]:
        """One subscription for every session's events (the host sees every session)."""
        return self.events.subscribe(listener)

    # ---- sessions -----------------------------------------------------------------------------------

    def get(self, session_id: str) -> AgentSession | None:
        return self._sessions.get(session_id)

    async def open_session(self, spec: SessionSpec) -> AgentSession:
        """The live session with this id, resumed from its history on disk or created new."""
        existing = self._sessions.get(spec.session_id)
        if existing is not None:
            return existing
        pending = self._opening.get(spec.session_id)
        if pending is not None:
            return await pending
        future: asyncio.Future[AgentSession] = asyncio.get_running_loop().create_future()
        self._opening[spec.session_id] = future
        try:
            history = await self.history.load(spec.session_id)
            if not history:
                await self.history.write_meta(
                    SessionMeta(spec.session_id, spec.kind, spec.bot_id, str(spec.cwd), self.clock.time())
                )
            await asyncio.to_thread(spec.cwd.mkdir, parents=True, exist_ok=True)
            outside = await self._outside_tools.for_session(spec) if self._outside_tools is not None else None
            session = AgentSession(spec, self, history, outside)
            self._sessions[spec.session_id] = session
            future.set_result(session)
            return session
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: the caller gets it raised below
            raise
        finally:
            del self._opening[spec.session_id]

    async def close_session(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            await session.close()
            await self.jobs.kill_session(session_id)

    async def history_size(self, session_id: str) -> int:
        return await self.history.size(session_id)

    async def delete_history(self, session_id: str) -> None:
        """Remove a closed session's history from disk (a deleted task)."""
        if session_id in self._sessions:
            raise RuntimeError(f"session {session_id} is still open")
        await self.history.delete(session_id)

    def sessions(self) -> list[AgentSession]:
        return list(self._sessions.values())

    # ---- what sessions use --------------------------------------------------------------------------

    def model_client(self, config: ModelConfig) -> ModelClient:
        client = self._clients.get(config)
        if client is None:
            client = self._clients[config] = ModelClient(config)
        return client

    def shell_sandbox(self, spec: SessionSpec) -> ShellSandbox:
        sandbox = self._sandboxes.get(spec)
        if sandbox is None:
            sandbox = self._sandboxes[spec] = ShellSandbox.detect(spec.permission, home=self._home)
        return sandbox

    def path_guard(self, permission: Permission) -> PathGuard:
        """The guard for `permission`; a session whose permission changes gets another guard."""
        guard = self._guards.get(permission)
        if guard is None:
            guard = self._guards[permission] = PathGuard(permission, home=self._home)
        return guard

    def judge(self, spec: SessionSpec, tool: ToolSpec, args: object) -> Verdict | None:
        """The guard's verdict on this call (`args` validated); None when the session or tool is not guarded:
        chat sessions are a person's own conversation, with approvals of their own."""
        if self.guard is None or spec.kind not in GUARDED_KINDS or tool.effects is None:
            return None
        call = GuardedCall(
            tool.name, tool.effects(args), spec.cwd, self.path_guard(spec.permission), spec.observing
        )
        return self.guard.check(call)

    def sandbox_note(self, spec: SessionSpec) -> str:
        return self.shell_sandbox(spec).description

    def tool_context(self, spec: SessionSpec) -> ToolContext:
        return ToolContext(
            session_id=spec.session_id,
            session_kind=spec.kind,
            cwd=spec.cwd,
            guard=self.path_guard(spec.permission),
            shell=self.shell_sandbox(spec),
            jobs=self.jobs,
            clock=self.clock,
            approvals=self.approvals,
        )

    def _wake_owner(self, job: Job) -> None:
        """A background job ended: wake its session with a notice in a new turn (docs/runs.md#run-states)."""
        session = self._sessions.get(job.session_id)
        if session is not None:
            # Always its own turn (queued behind a running one), so the reply to it stands on its own.
            session.prompt(job.notice(), input_id=f"job:{job.id}")

    # ---- shutdown -----------------------------------------------------------------------------------

    async def close(self) -> None:
        for session in list(self._sessions.values()):
            await session.close()
        self._sessions.clear()
        await self.jobs.shutdown()
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
        await asyncio.to_thread(self.history.close)

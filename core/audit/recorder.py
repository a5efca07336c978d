"""What the host writes to the audit trail (docs/audit.md#what-is-recorded): the tool calls that reach outside
a run (shell commands, file writes outside its folder, web fetches, MCP calls), guard refusals and
overrides, approvals and who gave them, and sends to a chat channel.

Events are queued in the order they happen and written by one task, so the trail's order is theirs and no
caller waits for a disk flush. The trail only observes: a write that fails is logged and counted, and the
run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.agent import events as ev
from core.audit.trail import AuditTrail

log = logging.getLogger(__name__)

MCP_SEPARATOR = "__"  # core.mcp.tools.SEPARATOR: a server's tool is named <server>__<tool>
_FILE_WRITERS = frozenset({"write_file", "edit_file"})
_MAX_TARGET = 2000
_MAX_DETAIL = 300


@dataclass(slots=True)
class _Call:
    session_id: str
    tool: str
    arguments: dict[str, Any]
    guarded: bool = False  # the guard already recorded it


def owner_fields(session_id: str) -> dict[str, str]:
    """The task (or rule) a session belongs to, as its id says (task-<id>, rule-<rule>-<n>, chat-<id>)."""
    if session_id.startswith("task-"):
        return {"session": session_id, "task": session_id.removeprefix("task-")}
    if session_id.startswith("rule-"):
        return {"session": session_id, "ruleId": session_id.removeprefix("rule-").rpartition("-")[0]}
    return {"session": session_id}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class AuditRecorder:
    def __init__(
        self,
        trail: AuditTrail,
        *,
        folder_of: Callable[[str], Path | None] = lambda _s: None,
        run_of: Callable[[str], str | None] = lambda _s: None,
    ) -> None:
        self.trail = trail
        # A session's own folder: a file write inside it is the run's own work, not an outside effect.
        self._folder_of = folder_of
        self._run_of = run_of  # the run a session is working for now, if any
        self._queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._writer: asyncio.Task[None] | None = None
        # By session and call id: two sessions' models may number their calls alike.
        self._calls: dict[tuple[str, str], _Call] = {}
        self.unwritten = 0  # events a failed write lost (said by /api/audit/verify)

    # -- writing ---------------------------------------------------------------------------------------

    def record(self, fields: Mapping[str, Any]) -> None:
        """Queue one event (called on the loop; returns at once)."""
        self._queue.put_nowait(dict(fields))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(self._write(), name="audit-writer")

    async def _write(self) -> None:
        while not self._queue.empty():
            fields = self._queue.get_nowait()
            try:
                await self.trail.append(fields)
            # Any failure: the trail only observes, and a writer that died would leave flush() waiting.
            except Exception as exc:
                self.unwritten += 1
                log.warning("audit event not written (%s): %s", fields.get("kind"), exc)
            finally:
                self._queue.task_done()

    async def flush(self) -> None:
        """Wait until everything queued so far is on disk."""
        await self._queue.join()

    async def task_events(self, task_id: str) -> list[dict[str, Any]]:
        """Every event of one task, in the trail's order (for its Markdown export)."""
        await self.flush()
        return await asyncio.to_thread(lambda: [e for e in self.trail.events() if e.get("task") == task_id])

    async def close(self) -> None:
        await self.flush()
        if self._writer is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer

    # -- what agents did -------------------------------------------------------------------------------

    def _owner(self, session_id: str) -> dict[str, str]:
        fields = owner_fields(session_id)
        run = self._run_of(session_id)
        return {**fields, "run": run} if run else fields

    def on_agent_event(self, event: ev.AgentEvent) -> None:
        if isinstance(event, ev.ToolCall):
            self._calls[(event.session_id, event.call_id)] = _Call(
                event.session_id, event.name, _arguments(event.args)
            )
            return
        elif isinstance(event, ev.GuardDecided):
            call = self._calls.get((event.session_id, event.call_id))
            if call is not None:
                call.guarded = event.decision == "deny"  # an override still runs: its result follows
            self.record(
                {
                    **self._owner(event.session_id),
                    "kind": "guard.deny" if event.decision == "deny" else "guard.override",
                    "action": event.tool,
                    "target": _cut(event.target, _MAX_TARGET),
                    "decision": event.decision,
                    "result": "blocked" if event.decision == "deny" else "allowed",
                    "rule": event.rule,
                    "reason": event.reason,
                    **({"overrode": event.overrode} if event.overrode else {}),
                    "actor": "guard",
                }
            )
        elif isinstance(event, ev.ToolResult):
            call = self._calls.pop((event.session_id, event.call_id), None)
            if call is not None and not call.guarded:
                fields = self._tool_fields(call)
                if fields is not None:
                    self.record({**fields, **_result_fields(event)})

    def _tool_fields(self, call: _Call) -> dict[str, Any] | None:
        """The event a finished call makes, or None when it did nothing outside its run."""
        args = call.arguments
        base = {**self._owner(call.session_id), "action": call.tool, "decision": "allow", "actor": "agent"}
        if call.tool == "bash":
            return {**base, "kind": "command.exec", "target": _cut(str(args.get("command", "")), _MAX_TARGET)}
        if call.tool in _FILE_WRITERS:
            path = str(args.get("path", ""))
            if self._inside_folder(call.session_id, path):
                return None
            return {**base, "kind": "path.write", "target": _cut(path, _MAX_TARGET)}
        if call.tool == "web_fetch":
            return {**base, "kind": "web.fetch", "target": _cut(str(args.get("url", "")), _MAX_TARGET)}
        if MCP_SEPARATOR in call.tool:
            server = call.tool.split(MCP_SEPARATOR, 1)[0]
            shown = json.dumps(args, ensure_ascii=False, sort_keys=True)
            return {**base, "kind": "mcp.call", "target": _cut(f"{server}: {shown}", _MAX_TARGET)}
        return None

    def _inside_folder(self, session_id: str, raw: str) -> bool:
        folder = self._folder_of(session_id)
        if folder is None or not raw:
            return False
        real = os.path.realpath(os.path.join(folder, os.path.expanduser(raw)))
        root = os.path.realpath(folder)
        return real == root or real.startswith(root.rstrip("/") + "/")

    # -- what people and channels did --------------------------------------------------------------------

    def approval(self, *, task_id: str, run_id: str, target: str, status: str, answer: str, by: str) -> None:
        approved = answer == "approved"
        self.record(
            {
                "kind": "approval",
                **({"task": task_id} if task_id else {}),
                **({"run": run_id} if run_id else {}),
                "target": _cut(target, _MAX_TARGET),
                "decision": "allow" if approved else "deny",
                "result": answer if status == "answered" else status,
                "actor": by or "host",
            }
        )

    def channel_send(
        self, *, conversation_id: str, result: str, message_id: str = "", error: str = ""
    ) -> None:
        self.record(
            {
                "kind": "channel.send",
                "target": conversation_id,
                "decision": "allow",
                "result": result,
                **({"messageId": message_id} if message_id else {}),
                **({"error": _cut(error, _MAX_DETAIL)} if error else {}),
                "actor": "outbox",
            }
        )


def _arguments(raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw) if raw else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _result_fields(event: ev.ToolResult) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "result": "ok" if event.ok else "error",
        "durationMs": round(event.duration_s * 1000),
    }
    first = event.output.split("\n", 1)[0]
    if event.name == "bash" and first.startswith("exit code "):
        code = first.removeprefix("exit code ").split(" ", 1)[0]
        if code.lstrip("-").isdigit():
            fields["exitCode"] = int(code)
            fields["result"] = "ok" if code == "0" else "failed"
    if event.stopped:
        fields["result"] = "stopped"
    elif not event.ok:
        fields["error"] = _cut(event.output, _MAX_DETAIL)
    return fields

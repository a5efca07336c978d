"""What the host writes to the audit trail: outside effects of tool calls (not a run's own files), guard
decisions, approvals and who gave them, channel sends as the platform answered (docs/audit.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.agent import events as ev
from core.audit.channel_sends import AuditedSends
from core.audit.recorder import AuditRecorder
from core.audit.trail import AuditTrail
from core.channels.channel import Outgoing, SendHeld, SendOutcomeUnknown
from core.clock import FakeClock

SESSION = "task-t_1"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "tasks" / "t_1").mkdir(parents=True)
    return tmp_path / "ws" / "tasks" / "t_1"


@pytest.fixture
def recorder(tmp_path: Path, folder: Path) -> AuditRecorder:
    trail = AuditTrail(tmp_path / "audit" / "audit.jsonl", FakeClock())
    return AuditRecorder(
        trail,
        folder_of=lambda s: folder if s == SESSION else None,
        run_of=lambda s: "r_7" if s == SESSION else None,
    )


def _call(
    recorder: AuditRecorder, call_id: str, tool: str, args: dict[str, Any], ok: bool, output: str
) -> None:
    recorder.on_agent_event(ev.ToolCall(SESSION, "u_1", call_id, tool, json.dumps(args)))
    recorder.on_agent_event(ev.ToolResult(SESSION, "u_1", call_id, tool, ok, output, 0.25))


async def _events(recorder: AuditRecorder) -> list[dict[str, Any]]:
    await recorder.flush()
    return list(recorder.trail.events())


async def test_outside_effects_are_recorded_and_a_runs_own_files_are_not(recorder: AuditRecorder) -> None:
    _call(recorder, "c1", "bash", {"command": "make"}, True, "exit code 2\nmake: *** no rule")
    _call(recorder, "c2", "write_file", {"path": "report.md", "content": "x"}, True, "Wrote 1 bytes")
    _call(recorder, "c3", "write_file", {"path": "../../../elsewhere.txt", "content": "x"}, True, "Wrote")
    _call(recorder, "c4", "read_file", {"path": "/etc/hosts"}, True, "1\tlocalhost")
    _call(recorder, "c5", "web_fetch", {"url": "https://example.com/p"}, True, "200 OK")
    _call(recorder, "c6", "github__create_issue", {"title": "Bug"}, False, "Error: 403")
    events = await _events(recorder)
    assert [(e["kind"], e["target"], e["result"]) for e in events] == [
        ("command.exec", "make", "failed"),
        ("path.write", "../../../elsewhere.txt", "ok"),
        ("web.fetch", "https://example.com/p", "ok"),
        ("mcp.call", 'github: {"title": "Bug"}', "error"),
    ]
    first = events[0]
    assert (first["exitCode"], first["durationMs"], first["task"], first["run"]) == (2, 250, "t_1", "r_7")
    assert events[3]["error"] == "Error: 403"
    assert recorder.trail.verify().intact


async def test_a_refused_call_is_recorded_once_as_blocked_and_an_override_with_its_result(
    recorder: AuditRecorder,
) -> None:
    recorder.on_agent_event(ev.ToolCall(SESSION, "u", "c1", "bash", '{"command": "rm -rf ~"}'))
    recorder.on_agent_event(
        ev.GuardDecided(
            SESSION, "c1", "bash", "deny", "cmd/recursive-force-delete", "too wide", target="rm -rf ~"
        )
    )
    recorder.on_agent_event(ev.ToolResult(SESSION, "u", "c1", "bash", False, "Error: [guard] blocked", 0))
    recorder.on_agent_event(ev.ToolCall(SESSION, "u", "c2", "bash", '{"command": "rm -rf ~/.cache/pip"}'))
    recorder.on_agent_event(
        ev.GuardDecided(
            SESSION,
            "c2",
            "bash",
            "allow",
            "allow/pip",
            "cache",
            "cmd/recursive-force-delete",
            "rm -rf ~/.cache/pip",
        )
    )
    recorder.on_agent_event(ev.ToolResult(SESSION, "u", "c2", "bash", True, "exit code 0\n", 0.1))
    events = await _events(recorder)
    assert [(e["kind"], e["decision"], e["result"], e.get("rule")) for e in events] == [
        ("guard.deny", "deny", "blocked", "cmd/recursive-force-delete"),
        ("guard.override", "allow", "allowed", "allow/pip"),
        ("command.exec", "allow", "ok", None),
    ]
    assert events[1]["overrode"] == "cmd/recursive-force-delete"


async def test_two_sessions_numbering_their_calls_alike_are_each_recorded(recorder: AuditRecorder) -> None:
    for session, command, _output in (
        ("task-a", "rm -rf build", "exit code 0\n"),
        ("task-b", "git push", "exit code 1\n"),
    ):
        recorder.on_agent_event(
            ev.ToolCall(session, "u", "functions.bash:0", "bash", json.dumps({"command": command}))
        )
    for session, output in (("task-b", "exit code 1\n"), ("task-a", "exit code 0\n")):
        recorder.on_agent_event(ev.ToolResult(session, "u", "functions.bash:0", "bash", True, output, 0.1))
    events = await _events(recorder)
    assert [(e["task"], e["target"], e["exitCode"]) for e in events] == [
        ("b", "git push", 1),
        ("a", "rm -rf build", 0),
    ]


async def test_approvals_say_who_decided(recorder: AuditRecorder) -> None:
    recorder.approval(
        task_id="t_1", run_id="r_7", target="rm -rf build", status="answered", answer="approved", by="person"
    )
    recorder.approval(task_id="", run_id="", target="~/x", status="expired", answer="", by="ttl")
    events = await _events(recorder)
    assert [(e["decision"], e["result"], e["actor"]) for e in events] == [
        ("allow", "approved", "person"),
        ("deny", "expired", "ttl"),
    ]
    assert "task" not in events[1]


class _Platform:
    def __init__(self) -> None:
        self.next: Exception | None = None

    async def send(self, conversation_id: str, text: str, outgoing: Outgoing | None = None) -> str:
        if self.next is not None:
            raise self.next
        return "om_1"


async def test_sends_are_recorded_as_the_platform_answered_and_held_ones_not_at_all(
    recorder: AuditRecorder,
) -> None:
    platform = _Platform()
    sends = AuditedSends(platform, recorder)
    assert await sends.send("c_1", "hi") == "om_1"
    for failure in (
        SendOutcomeUnknown("no answer"),
        RuntimeError("HTTP 500"),
        SendHeld("channel_down", "down"),
    ):
        platform.next = failure
        with pytest.raises(type(failure)):
            await sends.send("c_1", "hi")
    events = await _events(recorder)
    assert [(e["result"], e.get("messageId"), e.get("error")) for e in events] == [
        ("delivered", "om_1", None),
        ("unknown", None, "no answer"),
        ("failed", None, "HTTP 500"),
    ]


async def test_a_write_that_fails_is_counted_and_the_next_one_still_lands(
    recorder: AuditRecorder, tmp_path: Path
) -> None:
    recorder.trail.path.parent.mkdir(parents=True)
    recorder.trail.path.mkdir()  # a folder where the file should be: every append fails
    recorder.record({"kind": "x"})
    await recorder.flush()
    assert recorder.unwritten == 1
    recorder.trail.path.rmdir()
    recorder.record({"kind": "y"})
    assert [e["kind"] for e in await _events(recorder)] == ["y"]

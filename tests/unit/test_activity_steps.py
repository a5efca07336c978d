"""Activity steps (处理过程) built from agent events."""

from __future__ import annotations

from core.activity_steps import MAX_STEPS, ActivityLog, ActivityStep, dropped_count, dropped_note
from core.agent import events as ev


def test_a_tool_call_and_its_result_make_one_step_with_the_command_in_its_title() -> None:
    log = ActivityLog()
    log.feed(ev.ToolCall("s", "u", "c1", "bash", '{"command": "ls -la\\necho more"}'))
    log.feed(ev.ToolResult("s", "u", "c1", "bash", False, "Error: boom", 0.25))
    (step,) = log.steps
    assert (step.kind, step.title, step.ok, step.detail, step.duration_ms) == (
        "tool",
        "bash: ls -la",
        False,
        "Error: boom",
        250,
    )


def test_model_steps_carry_tokens_and_duration() -> None:
    log = ActivityLog()
    log.feed(ev.AssistantMessage("s", "u", 1, "hello", "deepseek-chat", ev.Usage(120, 30), 1.5, 0))
    (step,) = log.steps
    assert (step.kind, step.title, step.tokens_in, step.tokens_out, step.duration_ms) == (
        "model",
        "deepseek-chat",
        120,
        30,
        1500,
    )


def test_only_the_newest_steps_are_kept_and_the_dropped_ones_are_counted() -> None:
    log = ActivityLog()
    for i in range(MAX_STEPS + 5):
        log.feed(ev.ToolCall("s", "u", f"c{i}", "read_file", f'{{"path": "f{i}"}}'))
        log.feed(ev.ToolResult("s", "u", f"c{i}", "read_file", True, "x", 0.001))
    assert len(log.steps) == MAX_STEPS
    assert log.dropped == 5
    assert log.steps[-1].title == f"read_file: f{MAX_STEPS + 4}"
    stored = log.to_json()
    assert stored[0]["title"] == "5 earlier steps not kept" and len(stored) == MAX_STEPS + 1


def test_the_dropped_note_reads_back_as_its_count_and_nothing_else_does() -> None:
    assert dropped_count(dropped_note(130)) == 130
    assert dropped_count(ActivityStep(kind="tool", title="130 earlier steps not kept")) is None
    assert dropped_count(ActivityStep(kind="note", title="Interrupted")) is None


def test_a_report_steps_output_meant_for_the_model_is_not_shown_to_the_person() -> None:
    log = ActivityLog()
    log.feed(ev.ToolCall("s", "u", "c1", "task_report", '{"state": "done", "summary": "ok"}'))
    log.feed(ev.ToolResult("s", "u", "c1", "task_report", True, "Recorded. End your turn now.", 0.01))
    log.feed(ev.ToolCall("s", "u", "c2", "task_report", '{"state": "bogus"}'))
    log.feed(ev.ToolResult("s", "u", "c2", "task_report", False, "state: must be done or failed", 0.01))
    shown, refused = log.steps
    assert shown.title == "task_report" and shown.detail == "" and shown.ok
    assert refused.detail == "state: must be done or failed" and not refused.ok

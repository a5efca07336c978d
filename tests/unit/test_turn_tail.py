"""What became of an input after a crash, read from the history alone."""

from __future__ import annotations

from core.agent.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ReplyText,
    ResponsePart,
    ToolCall,
    ToolReturn,
    UserText,
)
from core.agent.turn_tail import tail_of


def ask(text: str, input_id: str) -> ModelRequest:
    return ModelRequest(parts=(UserText(text),), input_ids=(input_id,))


def call(tool: str = "bash", text: str = "") -> ModelResponse:
    parts: list[ResponsePart] = [ReplyText(text)] if text else []
    return ModelResponse(parts=(*parts, ToolCall("c1", tool, '{"command": "ls"}')))


def returned() -> ModelRequest:
    return ModelRequest(parts=(ToolReturn("c1", "bash", "a.txt"),))


def answer(text: str) -> ModelResponse:
    return ModelResponse(parts=(ReplyText(text),))


def test_an_input_not_in_the_history_was_never_taken() -> None:
    assert tail_of([ask("hi", "m1"), answer("hello")], "m2").state == "not_taken"


def test_an_answered_turn_gives_its_reply_as_the_steps_said_it() -> None:
    history: list[ModelMessage] = [
        ask("list it", "m1"),
        call(text="Looking."),
        returned(),
        answer("One file: a.txt."),
    ]
    tail = tail_of(history, "m1")
    assert (tail.state, tail.text) == ("answered", "Looking.\n\nOne file: a.txt.")


def test_a_request_left_unanswered_at_the_end_is_owed_an_answer() -> None:
    assert tail_of([ask("list it", "m1")], "m1").state == "unanswered"
    assert tail_of([ask("list it", "m1"), call(), returned()], "m1").state == "unanswered"


def test_a_turn_that_stopped_inside_a_tool_is_cut() -> None:
    assert tail_of([ask("list it", "m1"), call()], "m1").state == "cut_in_tool"


def test_an_input_followed_by_another_before_its_answer_is_cut() -> None:
    history: list[ModelMessage] = [ask("first", "m1"), ask("second", "m2"), answer("both")]
    assert tail_of(history, "m1").state == "cut_in_tool"
    assert tail_of(history, "m2").state == "answered"

"""Session histories on disk: ours (version 2), and the files written before it in pydantic-ai's format.

`tests/data/history_pydantic_ai/chat-c_gen/` was written by Errand 0.1 (pydantic-ai 2.68 messages) from a
real chat session against the scripted model: a turn of three tool calls (one with broken JSON arguments),
a note the host added, a reply cut short by a cancel, a turn stopped inside a tool, and a request whose
answer a crash lost. `chat-c_gen.wire.json` is what that version sent to the model for this history.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.agent import history_format
from core.agent.history import HistoryStore
from core.agent.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ReplyText,
    ToolCall,
    ToolReturn,
    Usage,
    UserText,
)
from core.agent.session import INTERRUPTED
from core.agent.turn_tail import tail_of
from core.agent.wire_format import to_wire_messages

OLD = Path(__file__).resolve().parents[1] / "data" / "history_pydantic_ai"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HistoryStore]:
    shutil.copytree(OLD / "chat-c_gen", tmp_path / "chat-c_gen")
    history = HistoryStore(tmp_path)
    yield history
    history.close()


def _normalized(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool-call arguments compared as JSON values: the old version re-spaced them."""
    out: list[dict[str, Any]] = json.loads(json.dumps(wire))
    for message in out:
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = json.loads(call["function"]["arguments"])
    return out


async def test_an_old_history_loads_whole_and_reads_as_before(store: HistoryStore) -> None:
    history = await store.load("chat-c_gen")
    assert len(history) == 14
    assert [m.input_ids for m in history if isinstance(m, ModelRequest) and m.input_ids] == [
        ("m1",),
        ("m2",),
        ("m3",),
        ("m4",),
        ("m5",),
    ]
    # What became of each input after the crash is read from the old file as it was before.
    assert (tail_of(history, "m1").state, tail_of(history, "m1").text) == (
        "answered",
        "Let me look.\n\nHere you go: 牛奶和鸡蛋 — done.",
    )
    assert (tail_of(history, "m2").state, tail_of(history, "m2").text) == ("answered", "Once upon a time t")
    assert tail_of(history, "m5").state == "unanswered"
    calls = history[3]
    assert isinstance(calls, ModelResponse)
    assert calls.tool_calls == [
        ToolCall("call_2_0", "read_file", '{"path": "notes.txt"}'),
        ToolCall("call_2_1", "grep", "{oops"),
    ]
    assert (calls.usage.input_tokens, calls.model_name, calls.finish_reason) == (
        251,
        "fake-model",
        "tool_call",
    )
    resumed = history[11]
    assert isinstance(resumed, ModelRequest)
    assert resumed.parts == (ToolReturn("call_5_0", "bash", INTERRUPTED), UserText("ok"))
    assert history[8] == ModelResponse(parts=(ReplyText("Once upon a time t"),))


async def test_an_old_history_is_sent_to_the_model_as_the_old_version_sent_it(store: HistoryStore) -> None:
    history = await store.load("chat-c_gen")
    sent_before = json.loads((OLD / "chat-c_gen.wire.json").read_text(encoding="utf-8"))
    assert _normalized(to_wire_messages(history)) == _normalized(sent_before)


async def test_new_steps_append_to_an_old_history_in_the_new_format(
    store: HistoryStore, tmp_path: Path
) -> None:
    old = await store.load("chat-c_gen")
    answer = ModelResponse(
        parts=(ReplyText("Yes, one more."),),
        usage=Usage(600, 5, 512),
        model_name="fake-model",
        response_id="r9",
        finish_reason="stop",
    )
    store.append_now("chat-c_gen", [answer])
    lines = (tmp_path / "chat-c_gen" / "history.jsonl").read_bytes().splitlines()
    assert json.loads(lines[-1])["v"] == history_format.VERSION
    assert await store.load("chat-c_gen") == [*old, answer]


async def test_every_message_comes_back_as_it_was_written(tmp_path: Path) -> None:
    messages: list[ModelMessage] = [
        ModelRequest(parts=(UserText("找一下 a.txt"),), instructions="be brief", input_ids=("m1", "m2")),
        ModelResponse(
            parts=(
                ReplyText("Looking."),
                ToolCall("c1", "bash", '{"command": "ls"}'),
                ToolCall("c2", "x", "{"),
            ),
            usage=Usage(10, 2, 4),
            model_name="m",
            response_id="r1",
            finish_reason="tool_call",
        ),
        ModelRequest(parts=(ToolReturn("c1", "bash", "a.txt\n"), ToolReturn("c2", "x", "Error: bad"))),
        ModelResponse(parts=()),
    ]
    history = HistoryStore(tmp_path)
    try:
        history.append_now("s1", messages)
        assert await history.load("s1") == messages
    finally:
        history.close()


async def test_a_line_cut_short_or_from_an_unknown_version_is_skipped_and_the_rest_kept(
    tmp_path: Path,
) -> None:
    history = HistoryStore(tmp_path)
    try:
        first = ModelRequest(parts=(UserText("hi"),), input_ids=("m1",))
        answer = ModelResponse(parts=(ReplyText("hello"),))
        history.append_now("s1", [first])
        path = tmp_path / "s1" / "history.jsonl"
        with path.open("ab") as f:
            f.write(b'{"v": 3, "kind": "request", "parts": []}\n')
            f.write(history_format.encode(answer))
            f.write(history_format.encode(answer)[:20])  # the crash came mid-write
        assert await history.load("s1") == [first, answer]
    finally:
        history.close()


@pytest.mark.parametrize(
    "line",
    [
        b"",
        b"not json",
        b"42",
        b'{"v": 2, "kind": "thought", "parts": []}',
        b'{"v": 2, "kind": "request", "parts": [{"type": "image"}]}',
        b'{"v": 2, "kind": "response"}',
        b'[{"kind": "request"}]',
    ],
)
def test_an_unreadable_line_says_so(line: bytes) -> None:
    with pytest.raises(history_format.UnreadableLine):
        history_format.decode(line)


def test_old_parts_errand_never_wrote_are_left_out_and_the_message_kept() -> None:
    line = json.dumps(
        [
            {
                "kind": "response",
                "parts": [
                    {"part_kind": "thinking", "content": "hmm"},
                    {
                        "part_kind": "tool-call",
                        "tool_name": "bash",
                        "args": {"command": "ls"},
                        "tool_call_id": "c",
                    },
                ],
            }
        ]
    ).encode()
    (message,) = history_format.decode(line)
    assert message == ModelResponse(parts=(ToolCall("c", "bash", '{"command": "ls"}'),))

"""The rules of a bot's memory notebook: which words may become a note, when it is full, and what the model
reads of it (docs/memory.md)."""

from __future__ import annotations

import pytest

from core.memory.notebook import (
    MAX_CHARS,
    MAX_ENTRIES,
    MAX_ENTRY_CHARS,
    clean_text,
    looks_secret,
    memory_section,
    source_of_session,
    text_problem,
    usage_of,
)
from core.store.memory import MemoryEntry

DAY = 1_764_460_800.0  # 2025-11-30 00:00 UTC


def entry(entry_id: str, text: str, updated_at: float = DAY) -> MemoryEntry:
    return MemoryEntry(entry_id, "b_1", text, "conversation", "c_1", "", updated_at, updated_at, "bot")


def test_a_note_is_kept_on_one_line_and_an_empty_or_long_one_is_refused_with_the_limit() -> None:
    assert clean_text("  The user\n  wants   English.\n") == "The user wants English."
    assert text_problem("") == "is empty; say what to remember"
    assert text_problem("x" * MAX_ENTRY_CHARS) is None
    problem = text_problem("x" * (MAX_ENTRY_CHARS + 1))
    assert problem is not None and f"more than {MAX_ENTRY_CHARS}" in problem


@pytest.mark.parametrize(
    "text",
    [
        # Built from parts, so that no whole key-shaped string stands in the source.
        "The key is " + "sk-" + "proj-" + "a1b2" * 6,
        "use Bearer " + "eyJ" + "hbGciOiJIUzI1NiIsInR5cCI6",
        "token " + "ghp_" + "x1y2" * 9,
        "slack " + "xox" + "b-1234567890-abcdef",
        "aws " + "AKIA" + "IOSFODNN7EXAMPLE" + " here",  # AWS's documented example id
        "-----BEGIN OPENSSH " + "PRIVATE KEY----- abc",
        "the admin password: hunter2zz",
    ],
)
def test_words_shaped_like_a_key_or_token_are_recognised(text: str) -> None:
    assert looks_secret(text)


@pytest.mark.parametrize(
    "text", ["The user's API key is in the keyring", "ask-me-first before deploying", "Bearer of bad news"]
)
def test_ordinary_words_about_keys_are_not_secrets(text: str) -> None:
    assert not looks_secret(text)


def test_the_notebook_is_full_at_either_limit() -> None:
    fifty = [entry(f"m_{i}", "short") for i in range(MAX_ENTRIES)]
    assert not usage_of(fifty).room_for(1)
    assert usage_of(fifty[:-1]).room_for(MAX_ENTRY_CHARS)
    long_ones = [entry(f"m_{i}", "x" * 500) for i in range(MAX_CHARS // 500)]
    assert usage_of(long_ones).chars == MAX_CHARS
    assert not usage_of(long_ones).room_for(1)
    assert usage_of(long_ones[:-1]).room_for(500)


def test_where_a_note_comes_from_is_read_from_its_session() -> None:
    assert source_of_session("chat-c_0a1b2c3d4e5f") == ("conversation", "c_0a1b2c3d4e5f")
    assert source_of_session("task-t_0a1b2c3d4e5f") == ("task", "t_0a1b2c3d4e5f")
    assert source_of_session("rule-r_0a1b2c3d4e5f-12") == ("rule", "r_0a1b2c3d4e5f")


def test_the_model_reads_each_note_with_its_id_and_day_and_nothing_without_notes() -> None:
    assert memory_section([]) == ""
    section = memory_section([entry("m_1", "The user wants English."), entry("m_2", "Server: build-2")])
    lines = section.splitlines()
    assert "forget" in lines[0] and "out of date" in section
    assert lines[-2:] == [
        "- [m_1] The user wants English. (2025-11-30)",
        "- [m_2] Server: build-2 (2025-11-30)",
    ]

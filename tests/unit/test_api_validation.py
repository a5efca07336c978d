"""The local API's own checks without a host: what no body may hold, the exact loopback Host test, and the
rule routes' times (issue 12 items 3 and 4). tests/integration/test_api_bad_input.py sweeps them on every
route."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.api.rule_routes import LAST_INSTANT, _instant
from core.api.server import is_loopback_host
from core.api.validation import MAX_DEPTH, MAX_JSON_INT, check_json_values
from core.errors import InvalidInputError


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ('{"name": "\\ud800"}', "name", "lone surrogate (\\ud800)"),
        ('{"model": {"apiKey": "sk-\\udfff"}}', "model.apiKey", "lone surrogate"),
        ('{"days": [1, "\\udc80"]}', "days[1]", "lone surrogate"),
        ('{"\\ud800": 1}', "\\ud800", "field name holds a lone surrogate"),
        ('{"text": "a\\u0000b"}', "text", "NUL"),
        ('{"a\\u0000": 1}', "a\\u0000", "NUL"),
        ('{"budgetUsd": NaN}', "budgetUsd", "finite"),
        ('{"budgetUsd": -Infinity}', "budgetUsd", "finite"),
        ('{"from": 1e400}', "from", "finite"),
        ('{"count": 9007199254740993}', "count", "too large"),
        ('{"count": -9007199254740993}', "count", "too large"),
    ],
)
def test_what_no_field_accepts_is_refused_naming_the_field(body: str, field: str, words: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        check_json_values(json.loads(body))
    assert caught.value.field == field
    assert words in caught.value.message


def test_what_fields_may_hold_passes() -> None:
    check_json_values(
        {
            "text": "\u200f\u202e RTL marks, 😀 (a valid surrogate pair in JSON) and 中文",
            "count": MAX_JSON_INT,
            "flag": True,
            "nested": nested(MAX_DEPTH - 1),
            "amount": 1e308,
        }
    )


def test_nesting_past_the_limit_is_refused_without_recursion() -> None:
    with pytest.raises(InvalidInputError) as caught:
        check_json_values({"a": nested(MAX_DEPTH)})
    assert "nests deeper" in caught.value.message
    with pytest.raises(InvalidInputError):
        check_json_values({"a": nested(50_000)})  # deeper than the interpreter's own recursion limit


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "localhost", "[::1]", "127.0.0.1:8080", "LocalHost:1", "[::1]:65535", " localhost "]
)
def test_loopback_hosts_are_served(host: str) -> None:
    assert is_loopback_host(host)


@pytest.mark.parametrize(
    "host",
    [
        "",
        "::1",
        "localhost.evil.com",
        "[::1].evil.com",
        "[::1]evil.com:80",
        "127.0.0.1.nip.io",
        "127.0.0.1:80.evil.com",
        "localhost:",
        "localhost:123456",
        "localhost:\u0661",
        "127.0.0.2",
        "evil.com#@localhost",
        "localhost\udcff",
    ],
)
def test_anything_else_is_not(host: str) -> None:
    assert not is_loopback_host(host)


@pytest.mark.parametrize(
    "value",
    [
        "1" + "0" * 400,
        10**400,
        1e308,
        float("nan"),
        -1,
        LAST_INSTANT + 1,
        "10000-01-01T00:00",
        "0001-01-01T00:00+14:00",
        "nan",
        True,
        [],
    ],
)
def test_a_time_outside_what_schedules_can_count_is_refused(value: object) -> None:
    with pytest.raises(InvalidInputError) as caught:
        _instant(value)
    assert caught.value.field == "from"


def test_times_in_range_are_read() -> None:
    assert _instant(0) == 0.0
    assert _instant(str(LAST_INSTANT)) == float(LAST_INSTANT)
    assert _instant("2026-09-21T08:00:00+08:00") == 1_789_948_800.0

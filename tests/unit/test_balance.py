"""Reading a provider balance for the chat reserve: OpenRouter's key limit, DeepSeek's balance without a
limit, providers that report nothing (never asked), and every provider problem as a reading, not a raise.
Against a fake balance server over real HTTP; real provider hosts only through httpx.MockTransport."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from core.cost.balance import read_balance
from tests.fakes.balance_server import BALANCE_PATH, KEY_PATH, FakeBalanceServer


@pytest.fixture
async def server() -> AsyncIterator[FakeBalanceServer]:
    async with FakeBalanceServer() as made:
        yield made


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False) as made:
        yield made


def never_called(request: httpx.Request) -> httpx.Response:
    raise AssertionError(f"no request expected, got {request.url}")


async def test_an_openrouter_key_with_a_limit_gives_limit_and_remaining(
    server: FakeBalanceServer, client: httpx.AsyncClient
) -> None:
    server.limit, server.usage = 10.0, 1.8

    reading = await read_balance(client, server.openrouter_base, "sk-test", provider="openrouter")

    assert reading.code == "ok" and reading.supported
    assert reading.limit_usd == 10.0
    assert reading.remaining_usd == pytest.approx(8.2)
    assert reading.balance_text == "$8.20"
    assert reading.provider == "openrouter" and reading.provider_name == "OpenRouter"
    assert reading.reason == ""
    assert server.hits == {KEY_PATH: 1}
    assert server.authorizations == ["Bearer sk-test"]


async def test_limit_remaining_is_taken_as_the_provider_says(
    server: FakeBalanceServer, client: httpx.AsyncClient
) -> None:
    server.limit, server.usage, server.limit_remaining = 10.0, 9.0, 4.5  # a monthly reset: not limit - usage

    reading = await read_balance(client, server.openrouter_base, "sk-test", provider="openrouter")

    assert (reading.limit_usd, reading.remaining_usd) == (10.0, 4.5)


async def test_an_openrouter_key_without_a_limit_is_off(
    server: FakeBalanceServer, client: httpx.AsyncClient
) -> None:
    server.limit, server.usage = None, 3.0

    reading = await read_balance(client, server.openrouter_base, "sk-test", provider="openrouter")

    assert reading.code == "no_limit" and not reading.supported
    assert reading.limit_usd is None and reading.remaining_usd is None
    assert reading.reason == "this key has no spending limit"


async def test_a_refused_key_is_an_error_reading(
    server: FakeBalanceServer, client: httpx.AsyncClient
) -> None:
    server.api_key = "sk-right"

    reading = await read_balance(client, server.openrouter_base, "sk-wrong", provider="openrouter")

    assert reading.code == "error" and not reading.supported
    assert (reading.problem, reading.status) == ("key", 401)
    assert "refused the API key (HTTP 401)" in reading.reason
    assert "sk-wrong" not in reading.reason


async def test_a_server_error_is_an_error_reading(
    server: FakeBalanceServer, client: httpx.AsyncClient
) -> None:
    server.key_status = 503

    reading = await read_balance(client, server.openrouter_base, "sk-test", provider="openrouter")

    assert (reading.code, reading.problem, reading.status) == ("error", "http", 503)
    assert reading.reason.endswith("answered HTTP 503")


async def test_deepseek_shows_a_balance_but_no_limit(
    server: FakeBalanceServer, client: httpx.AsyncClient
) -> None:
    reading = await read_balance(client, server.deepseek_base, "sk-ds", provider="deepseek")

    assert reading.code == "no_limit" and not reading.supported
    assert reading.balance_text == "¥110.00"
    assert reading.limit_usd is None and reading.remaining_usd is None
    assert reading.reason == "the provider shows a balance but no spending limit"
    assert reading.provider_name == "DeepSeek"
    assert server.hits == {BALANCE_PATH: 1}  # at the origin, not under /v1
    assert server.authorizations == ["Bearer sk-ds"]


async def test_deepseek_balances_in_two_currencies_are_shown_side_by_side(
    server: FakeBalanceServer, client: httpx.AsyncClient
) -> None:
    server.balances = [("CNY", "110.5"), ("USD", "5")]

    reading = await read_balance(client, server.deepseek_base, "sk-ds", provider="deepseek")

    assert reading.balance_text == "¥110.50 / $5.00"


async def test_an_endpoint_that_reports_no_balance_is_never_asked(
    server: FakeBalanceServer, client: httpx.AsyncClient
) -> None:
    # The fake server's address is a custom endpoint: no provider is told by its host.
    reading = await read_balance(client, server.openrouter_base, "sk-test")

    assert reading.code == "unsupported" and not reading.supported
    assert reading.reason == "this provider does not report a balance"
    assert server.request_count == 0

    async with httpx.AsyncClient(transport=httpx.MockTransport(never_called)) as offline:
        for base in ("https://api.openai.com/v1", "http://127.0.0.1:11434/v1", "https://example.com/v1"):
            assert (await read_balance(offline, base, "sk-test")).code == "unsupported"


async def test_no_key_reads_nothing(server: FakeBalanceServer, client: httpx.AsyncClient) -> None:
    reading = await read_balance(client, server.openrouter_base, "  ", provider="openrouter")

    assert reading.code == "no_key" and not reading.supported
    assert server.request_count == 0


@pytest.mark.parametrize("body", ["not json{", '{"data": {"limit": "ten"}}', '{"data": []}', "[]"])
async def test_an_answer_that_is_not_the_expected_json_is_an_error_reading(
    server: FakeBalanceServer, client: httpx.AsyncClient, body: str
) -> None:
    server.key_body = body

    reading = await read_balance(client, server.openrouter_base, "sk-test", provider="openrouter")

    assert (reading.code, reading.problem) == ("error", "answer")
    assert "not" in reading.reason and "JSON" in reading.reason


async def test_a_bad_deepseek_answer_is_an_error_reading(
    server: FakeBalanceServer, client: httpx.AsyncClient
) -> None:
    server.balance_body = '{"balance_infos": [{"currency": "CNY", "total_balance": "lots"}]}'

    reading = await read_balance(client, server.deepseek_base, "sk-ds", provider="deepseek")

    assert (reading.code, reading.problem) == ("error", "answer")


async def test_an_unreachable_host_is_an_error_reading(client: httpx.AsyncClient) -> None:
    async with FakeBalanceServer() as gone:
        base = gone.openrouter_base
    # Stopped: nothing listens on that port any more.
    reading = await read_balance(client, base, "sk-test", provider="openrouter")

    assert (reading.code, reading.problem) == ("error", "network")
    assert reading.reason.startswith("cannot reach 127.0.0.1:")


async def test_a_timeout_is_an_error_reading() -> None:
    def hang(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    async with httpx.AsyncClient(transport=httpx.MockTransport(hang)) as offline:
        reading = await read_balance(offline, "https://openrouter.ai/api/v1", "sk-test")

    assert (reading.code, reading.problem) == ("error", "timeout")
    assert reading.reason == "openrouter.ai did not answer within 10 s"


async def test_the_provider_is_told_by_the_host_and_each_is_asked_at_its_own_address() -> None:
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if request.url.path == "/api/v1/key":
            return httpx.Response(200, json={"data": {"limit": 5, "limit_remaining": 0.5, "usage": 4.5}})
        return httpx.Response(
            200, json={"is_available": True, "balance_infos": [{"currency": "USD", "total_balance": "2.00"}]}
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as offline:
        openrouter = await read_balance(offline, "https://openrouter.ai/api/v1/", "sk-or")
        deepseek = await read_balance(offline, "https://api.deepseek.com/v1", "sk-ds")

    assert seen == ["https://openrouter.ai/api/v1/key", "https://api.deepseek.com/user/balance"]
    assert (openrouter.code, openrouter.limit_usd, openrouter.remaining_usd) == ("ok", 5.0, 0.5)
    assert (deepseek.code, deepseek.balance_text) == ("no_limit", "$2.00")

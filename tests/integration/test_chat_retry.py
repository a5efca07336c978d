"""重试 on a failed chat reply, end to end: a real host and SQLite file, the scripted model over HTTP; the
conversation read through the API (the retry itself is the chat facade's, as the desktop calls it).

The model is asked again for the same request: the person's words reach it once, the conversation keeps
one copy of them and one reply. Anything but the latest failed reply is refused and changes nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.errors import ConflictError, NotFoundError
from core.host import Host
from tests.fakes.model_server import RecordedRequest, Reply, ScriptedModelServer
from tests.integration.host_fixtures import make_host, running_api
from tests.integration.test_chat_api import messages, new_conversation, wait_for_roles


def user_texts(request: RecordedRequest) -> list[str]:
    return [str(m.get("content")) for m in request.messages if m.get("role") == "user"]


async def fail_first(
    host: Host, client: httpx.AsyncClient, model_server: ScriptedModelServer, text: str
) -> tuple[str, list[dict[str, Any]]]:
    model_server.push(Reply.error(401, message="Incorrect API key provided"))
    cid = await new_conversation(client)
    await client.post(f"/api/conversations/{cid}/messages", json={"text": text})
    return cid, await wait_for_roles(host, client, cid, ["user", "error"])


@pytest.mark.parametrize("status", [401, 500])
async def test_retrying_a_failed_reply_asks_again_once_and_replaces_it(
    host: Host, model_server: ScriptedModelServer, status: int
) -> None:
    # A 500 is retried by the client first (three more times in tests); a 401 fails at once.
    model_server.push_many([Reply.error(status)] * (4 if status >= 500 else 1))
    async with running_api(host) as client:
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "what is 6*7?"})
        user, error = await wait_for_roles(host, client, cid, ["user", "error"])
        assert error["retryable"] is True
        assert user["retryable"] is False
        failed_requests = len(model_server.requests)

        model_server.push(Reply.text("It is 42."))
        await host.chat.retry(cid, error["id"])

        got = await wait_for_roles(host, client, cid, ["user", "assistant"])
        assert [(m["role"], m["text"]) for m in got] == [("user", "what is 6*7?"), ("assistant", "It is 42.")]
        assert got[0]["id"] == user["id"] and got[0]["state"] == "answered"
        assert got[1]["state"] == "done" and not got[1]["retryable"]
        assert len(model_server.requests) == failed_requests + 1
        assert user_texts(model_server.requests[-1]) == ["what is 6*7?"]


async def test_retry_keeps_the_earlier_conversation_as_it_was(
    host: Host, model_server: ScriptedModelServer
) -> None:
    model_server.push_many([Reply.text("Hello!"), Reply.error(401)])
    async with running_api(host) as client:
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "hi"})
        await wait_for_roles(host, client, cid, ["user", "assistant"])
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "and now?"})
        got = await wait_for_roles(host, client, cid, ["user", "assistant", "user", "error"])

        model_server.push(Reply.text("Now this."))
        await host.chat.retry(cid, got[3]["id"])
        after = await wait_for_roles(host, client, cid, ["user", "assistant", "user", "assistant"])
        assert [m["text"] for m in after] == ["hi", "Hello!", "and now?", "Now this."]
        retried = model_server.requests[-1]
        assert user_texts(retried) == ["hi", "and now?"]
        assert [m["role"] for m in retried.messages if m["role"] != "system"] == ["user", "assistant", "user"]


async def test_only_the_latest_failed_reply_can_be_retried(
    host: Host, model_server: ScriptedModelServer
) -> None:
    async with running_api(host) as client:
        cid, (_user, first_error) = await fail_first(host, client, model_server, "one")
        model_server.push(Reply.error(401))
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "two"})
        before = await wait_for_roles(host, client, cid, ["user", "error", "user", "error"])
        assert [m["retryable"] for m in before] == [False, False, False, True]
        served = len(model_server.requests)

        with pytest.raises(ConflictError, match="latest") as older:
            await host.chat.retry(cid, first_error["id"])
        assert older.value.words("zh") == "只能重试最近一条出错的回复；更早的请重新发送那条消息。"
        # Not a failed reply at all: the person's own message.
        with pytest.raises(ConflictError, match="not a failed reply"):
            await host.chat.retry(cid, before[2]["id"])
        with pytest.raises(NotFoundError):
            await host.chat.retry(cid, 999_999)
        other = await new_conversation(client)
        with pytest.raises(NotFoundError):  # a message of another conversation
            await host.chat.retry(other, before[3]["id"])

        assert await messages(client, cid) == before
        assert len(model_server.requests) == served


async def test_a_good_reply_is_not_retried(host: Host, model_server: ScriptedModelServer) -> None:
    model_server.push(Reply.text("Fine."))
    async with running_api(host) as client:
        cid = await new_conversation(client)
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "hi"})
        got = await wait_for_roles(host, client, cid, ["user", "assistant"])
        with pytest.raises(ConflictError, match="not a failed reply"):
            await host.chat.retry(cid, got[1]["id"])
        assert await messages(client, cid) == got
        assert len(model_server.requests) == 1


async def test_two_retries_at_once_start_one_turn(host: Host, model_server: ScriptedModelServer) -> None:
    async with running_api(host) as client:
        cid, (_user, error) = await fail_first(host, client, model_server, "once please")
        served = len(model_server.requests)
        model_server.push(Reply.text("Done once.", latency_s=0.2))

        outcomes = await asyncio.gather(
            host.chat.retry(cid, error["id"]), host.chat.retry(cid, error["id"]), return_exceptions=True
        )
        assert outcomes.count(None) == 1
        refused = next(o for o in outcomes if o is not None)
        assert isinstance(refused, ConflictError) and "being written" in refused.message

        got = await wait_for_roles(host, client, cid, ["user", "assistant"])
        assert got[1]["text"] == "Done once."
        assert len(model_server.requests) == served + 1
        # The failed reply is gone: retrying it again is refused.
        with pytest.raises(NotFoundError):
            await host.chat.retry(cid, error["id"])


async def test_a_retry_while_a_reply_is_written_is_refused(
    host: Host, model_server: ScriptedModelServer
) -> None:
    async with running_api(host) as client:
        cid, (_user, error) = await fail_first(host, client, model_server, "first")
        model_server.push(Reply.hang())
        await client.post(f"/api/conversations/{cid}/messages", json={"text": "second"})
        await model_server.wait_for_requests(2)
        with pytest.raises(ConflictError):
            await host.chat.retry(cid, error["id"])
        await host.chat.cancel_reply(cid)


async def test_a_failed_reply_can_be_retried_after_a_restart(
    tmp_path: Path, home: Path, model_server: ScriptedModelServer
) -> None:
    first = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(first) as client:
        cid, (_user, error) = await fail_first(first, client, model_server, "still there?")

    again = make_host(tmp_path / "data", model_server.base_url, home=home)
    async with running_api(again) as client:
        listed = await messages(client, cid)
        assert [(m["role"], m["retryable"]) for m in listed] == [("user", False), ("error", True)]
        model_server.push(Reply.text("Yes."))
        await again.chat.retry(cid, error["id"])
        got = await wait_for_roles(again, client, cid, ["user", "assistant"])
        assert got[1]["text"] == "Yes."
        assert user_texts(model_server.requests[-1]) == ["still there?"]

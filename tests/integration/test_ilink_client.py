"""The iLink client against a fake iLink server on 127.0.0.1: QR login, the long poll with its cursor, sends
with the peer's token, and every way the platform says no (an expired session, a peer who must write
first, HTTP errors, answers that are not JSON, time-outs)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from core.channels.wechat.ilink import ILinkClient, ILinkError, SendRefused, SessionExpired
from tests.fakes.fake_ilink import SENDS_PER_TOKEN, FakeILink


@pytest.fixture
async def ilink() -> AsyncIterator[FakeILink]:
    async with FakeILink(hold_s=0.2) as server:
        yield server


@pytest.fixture
async def client(ilink: FakeILink) -> AsyncIterator[ILinkClient]:
    made = ILinkClient(ilink.base_url, token=ilink.token)
    yield made
    await made.close()


async def test_a_qr_login_walks_to_confirmed_and_gives_the_accounts_token_and_owner(ilink: FakeILink) -> None:
    client = ILinkClient(ilink.base_url)
    try:
        code = await client.qr_code()
        assert code.content.startswith(ilink.base_url)
        states = [await client.qr_status(code.qrcode) for _ in range(3)]
        assert [s.status for s in states] == ["wait", "scaned", "confirmed"]
        done = states[-1]
        assert (done.bot_token, done.account_id, done.owner_id) == (
            ilink.token,
            ilink.account_id,
            ilink.owner_id,
        )
        assert done.base_url == ilink.base_url
        assert ilink.qr_polls[0] == {"qrcode": code.qrcode}
    finally:
        await client.close()


async def test_a_verify_code_is_passed_on_and_a_gateway_error_while_waiting_is_still_waiting(
    ilink: FakeILink,
) -> None:
    ilink.qr_script = ["need_verifycode", "confirmed"]
    ilink.fail_next["get_qrcode_status"] = [502]
    client = ILinkClient(ilink.base_url)
    try:
        code = await client.qr_code()
        assert (await client.qr_status(code.qrcode)).status == "wait"
        assert (await client.qr_status(code.qrcode)).status == "need_verifycode"
        assert (await client.qr_status(code.qrcode, verify_code="4821")).status == "confirmed"
        assert ilink.qr_polls[-1] == {"qrcode": code.qrcode, "verify_code": "4821"}
    finally:
        await client.close()


async def test_the_long_poll_gives_what_was_said_after_the_cursor_and_waits_when_there_is_nothing(
    ilink: FakeILink, client: ILinkClient
) -> None:
    said = ilink.user_says("research Y")
    first = await client.get_updates("")
    assert [(m.text, m.context_token) for m in first.messages] == [("research Y", said["context_token"])]
    assert first.cursor == "c1"

    quiet = await client.get_updates(first.cursor, timeout_s=5.0)  # the fake holds 0.2 s, then nothing
    assert quiet.messages == () and quiet.cursor == "c1"

    ilink.user_says("and Z?")
    later = await client.get_updates(first.cursor)
    assert [m.text for m in later.messages] == ["and Z?"]


async def test_our_own_time_out_on_a_long_poll_is_no_news_with_the_cursor_kept(
    ilink: FakeILink, client: ILinkClient
) -> None:
    ilink.fail_next["getupdates"] = ["timeout"]
    quiet = await client.get_updates("c0", timeout_s=0.2)
    assert quiet.messages == () and quiet.cursor == ""  # '' = keep the cursor you have


async def test_a_malformed_message_is_refused_and_the_rest_of_the_batch_arrives(
    ilink: FakeILink, client: ILinkClient
) -> None:
    ilink.user_says("one")
    ilink.queue_raw({"message_id": "x", "item_list": "not a list", "from_user_id": "u"})
    ilink.user_says("two")
    updates = await client.get_updates("")
    assert [m.text for m in updates.messages] == ["one", "two"]
    assert [e.field for e in updates.refused] == ["msgs[1].item_list"]


async def test_a_send_goes_with_the_peers_token_and_its_id_comes_back(
    ilink: FakeILink, client: ILinkClient
) -> None:
    said = ilink.user_says("hi")
    message_id = await client.send_text(ilink.owner_id, said["context_token"], "hello")
    [sent] = ilink.sent
    assert message_id == sent.message_id
    assert (sent.message.to_user, sent.message.context_token, sent.message.text) == (
        ilink.owner_id,
        said["context_token"],
        "hello",
    )
    assert sent.body["base_info"]["channel_version"]


async def test_each_send_has_a_fresh_client_id_and_the_eleventh_on_one_token_is_refused(
    ilink: FakeILink, client: ILinkClient
) -> None:
    token = ilink.user_says("hi")["context_token"]
    for n in range(SENDS_PER_TOKEN):
        await client.send_text(ilink.owner_id, token, f"update {n}")
    assert len({s.message.client_id for s in ilink.sent}) == SENDS_PER_TOKEN
    with pytest.raises(SendRefused) as refused:
        await client.send_text(ilink.owner_id, token, "one too many")
    assert refused.value.ret == -2
    assert len(ilink.sent) == SENDS_PER_TOKEN


async def test_an_expired_session_says_so_on_polls_and_sends(ilink: FakeILink, client: ILinkClient) -> None:
    token = ilink.user_says("hi")["context_token"]
    ilink.expire_session = True
    with pytest.raises(SessionExpired):
        await client.get_updates("")
    with pytest.raises(SessionExpired):
        await client.send_text(ilink.owner_id, token, "hello")
    assert ilink.sent == []


@pytest.mark.parametrize(("fault", "said"), [(500, "HTTP 500"), ("not-json", "not JSON"), ("ret", "ret -1")])
async def test_a_failing_platform_is_an_ilink_error_that_says_what_happened(
    ilink: FakeILink, client: ILinkClient, fault: int | str, said: str
) -> None:
    ilink.fail_next["getupdates"] = [fault]
    with pytest.raises(ILinkError) as caught:
        await client.get_updates("")
    assert said in str(caught.value)
    assert not isinstance(caught.value, SessionExpired)


async def test_nothing_signed_goes_out_before_login(ilink: FakeILink) -> None:
    client = ILinkClient(ilink.base_url)
    try:
        with pytest.raises(ILinkError, match="not logged in"):
            await client.get_updates("")
        assert ilink.signed_calls == 0  # refused here, before anything went out
    finally:
        await client.close()

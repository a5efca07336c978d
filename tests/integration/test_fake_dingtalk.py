"""The fake DingTalk, driven by our own OpenAPI client (`DingTalkApi`) and read through dingtalk-stream
0.24.3's own types (`CallbackMessage`, `SystemMessage`, `EventMessage`, `AckMessage`) and our message
readers (`read_message`, `read_press`)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any
from urllib.parse import quote

import dingtalk_stream
import httpx
import pytest
import websockets
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus

from core.channels.dingtalk.cards import card, card_data, settled
from core.channels.dingtalk.config import DingTalkApp
from core.channels.dingtalk.messages import DingTalkPress, quote_ref, read_message, read_press
from core.channels.dingtalk.openapi import (
    BOT_TOPIC,
    CARD_TOPIC,
    CredentialsRefused,
    DingTalkApi,
    DingTalkError,
)
from core.clock import SystemClock
from tests.fakes.fake_dingtalk import FakeDingTalk, NoClientConnected

SDK: ModuleType = dingtalk_stream
APP = DingTalkApp("dingfakeappkey01", "fake-secret", "dingfakeappkey01")
STAFF = "manager4242"
GROUP = ("cidGroup0000000000000001==", "测试群")
WAIT = 5.0


class Clock:
    """The fake's `now`: epoch seconds that a test moves on."""

    def __init__(self, t: float = 1_790_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def fake(clock: Clock) -> AsyncIterator[FakeDingTalk]:
    async with FakeDingTalk(now=clock) as server:
        yield server


@pytest.fixture
async def api(fake: FakeDingTalk) -> AsyncIterator[DingTalkApi]:
    client = DingTalkApi(APP, fake.endpoint, SystemClock())
    yield client
    await client.close()


async def connect(api: DingTalkApi) -> ClientConnection:
    url, ticket = await api.open_connection()
    return await websockets.connect(f"{url}?ticket={quote(ticket, safe='')}")


async def next_frame(ws: ClientConnection) -> dict[str, Any]:
    async with asyncio.timeout(WAIT):
        raw = await ws.recv()
    frame = json.loads(raw)
    assert isinstance(frame, dict)
    return frame


async def ack(ws: ClientConnection, message_id: str, data: dict[str, Any], *, code: int = 200) -> None:
    """An ack as the SDK's handlers build it."""
    answer = SDK.AckMessage()
    answer.code = code
    answer.headers.message_id = message_id
    answer.headers.content_type = SDK.frames.Headers.CONTENT_TYPE_APPLICATION_JSON
    answer.message = "OK"
    answer.data = data
    await ws.send(json.dumps(answer.to_dict()))


# ---- OpenAPI: token ----------------------------------------------------------------------------------


async def test_the_token_is_fetched_once_and_cached(fake: FakeDingTalk, api: DingTalkApi) -> None:
    first = await api.token()
    assert await api.token() == first
    assert fake.token_requests == 1


async def test_a_wrong_secret_is_refused_credentials(fake: FakeDingTalk) -> None:
    wrong = DingTalkApi(
        DingTalkApp(APP.app_key, "not-the-secret", APP.robot_code), fake.endpoint, SystemClock()
    )
    try:
        with pytest.raises(CredentialsRefused) as refused:
            await wrong.token()
        assert refused.value.code == "invalidClientIdOrSecret"
        assert refused.value.http_status == 400
        with pytest.raises(CredentialsRefused):
            await wrong.open_connection()
    finally:
        await wrong.close()


async def test_an_expired_token_is_renewed_once_and_the_send_goes(
    fake: FakeDingTalk, api: DingTalkApi
) -> None:
    fake.add_staff(STAFF)
    await api.token()
    fake.expire_tokens()
    answer = await api.batch_send(STAFF, "sampleText", {"content": "hi"})
    assert answer.process_query_key
    assert fake.token_requests == 2
    assert [(s.via, s.to, s.text) for s in fake.sent] == [("batch", STAFF, "hi")]


async def test_a_robot_route_without_a_token_is_401(fake: FakeDingTalk) -> None:
    async with httpx.AsyncClient() as http:
        response = await http.post(f"{fake.endpoint}/v1.0/robot/groupMessages/send", json={})
    assert response.status_code == 401
    assert response.json()["code"] == "InvalidAuthentication"


# ---- OpenAPI: one-to-one and group sends, read-back --------------------------------------------------


async def test_batch_send_is_recorded_and_reads_back_success(fake: FakeDingTalk, api: DingTalkApi) -> None:
    fake.add_staff(STAFF)
    answer = await api.batch_send(STAFF, "sampleMarkdown", {"title": "Report", "text": "**done**"})
    assert answer.invalid == [] and answer.throttled == []
    (sent,) = await fake.wait_for_sent(1)
    assert (sent.via, sent.to, sent.msg_key, sent.title, sent.text) == (
        "batch",
        STAFF,
        "sampleMarkdown",
        "Report",
        "**done**",
    )
    assert sent.process_query_key == answer.process_query_key
    assert await api.send_status(answer.process_query_key) == "SUCCESS"


async def test_batch_send_to_unknown_staff_lists_them_invalid(fake: FakeDingTalk, api: DingTalkApi) -> None:
    answer = await api.batch_send("nobody", "sampleText", {"content": "hi"})
    assert answer.invalid == ["nobody"]
    assert fake.sent == []


async def test_a_bad_msg_key_is_refused(fake: FakeDingTalk, api: DingTalkApi) -> None:
    fake.add_staff(STAFF)
    with pytest.raises(DingTalkError) as refused:
        await api.batch_send(STAFF, "sampleVoice", {"content": "hi"})
    assert refused.value.http_status == 400 and refused.value.code == "invalidParameter.msgKey.invalid"
    with pytest.raises(DingTalkError):
        await api.batch_send(STAFF, "sampleText", {"content": "x" * 16_000})
    assert fake.sent == []


async def test_throttled_staff_get_nothing_until_the_throttle_ends(
    fake: FakeDingTalk, api: DingTalkApi
) -> None:
    fake.add_staff(STAFF)
    fake.throttle(STAFF, 1)
    answer = await api.batch_send(STAFF, "sampleText", {"content": "one"})
    assert answer.throttled == [STAFF]
    assert fake.sent == []
    again = await api.batch_send(STAFF, "sampleText", {"content": "two"})
    assert again.throttled == []
    assert [s.text for s in fake.sent] == ["two"]


async def test_hold_status_answers_processing_then_success(fake: FakeDingTalk, api: DingTalkApi) -> None:
    fake.add_staff(STAFF)
    key = (await api.batch_send(STAFF, "sampleText", {"content": "hi"})).process_query_key
    fake.hold_status(1)
    assert await api.send_status(key) == "PROCESSING"
    assert await api.send_status(key) == "SUCCESS"


async def test_fail_delivery_reads_back_fail_and_is_not_sent(fake: FakeDingTalk, api: DingTalkApi) -> None:
    fake.add_staff(STAFF)
    fake.fail_delivery(1)
    key = (await api.batch_send(STAFF, "sampleText", {"content": "hi"})).process_query_key
    assert await api.send_status(key) == "FAIL"
    assert fake.sent == [] and [f.text for f in fake.failed] == ["hi"]


async def test_read_back_names_who_read_it(fake: FakeDingTalk, api: DingTalkApi) -> None:
    fake.add_staff(STAFF, "Lin")
    key = (await api.batch_send(STAFF, "sampleText", {"content": "hi"})).process_query_key
    fake.mark_read(key, STAFF)
    token = await api.token()
    async with httpx.AsyncClient() as http:
        response = await http.get(
            f"{fake.endpoint}/v1.0/robot/oToMessages/readStatus",
            params={"robotCode": APP.robot_code, "processQueryKey": key},
            headers={"x-acs-dingtalk-access-token": token},
        )
        unknown = await http.get(
            f"{fake.endpoint}/v1.0/robot/oToMessages/readStatus",
            params={"robotCode": APP.robot_code, "processQueryKey": "pqk-unknown"},
            headers={"x-acs-dingtalk-access-token": token},
        )
    (info,) = response.json()["messageReadInfoList"]
    assert (info["userId"], info["name"], info["readStatus"]) == (STAFF, "Lin", "READ")
    assert unknown.status_code == 400


async def test_group_send_to_a_known_group_reads_back(fake: FakeDingTalk, api: DingTalkApi) -> None:
    fake.add_group(*GROUP)
    key = await api.group_send(GROUP[0], "sampleText", {"content": "all"})
    assert [(s.via, s.to, s.text) for s in fake.sent] == [("group", GROUP[0], "all")]
    assert await api.send_status(key, group_id=GROUP[0]) == "SUCCESS"
    with pytest.raises(DingTalkError) as wrong_group:
        await api.send_status(key, group_id="cidOther==")
    assert wrong_group.value.http_status == 400


async def test_group_send_to_an_unknown_group_is_refused(fake: FakeDingTalk, api: DingTalkApi) -> None:
    with pytest.raises(DingTalkError) as refused:
        await api.group_send("cidNowhere==", "sampleText", {"content": "all"})
    assert refused.value.http_status == 400
    assert refused.value.code == "invalidParameter.openConversationId.invalid"
    assert fake.sent == []


async def test_a_wrong_robot_code_is_refused(fake: FakeDingTalk) -> None:
    fake.add_staff(STAFF)
    other = DingTalkApi(
        DingTalkApp(APP.app_key, APP.app_secret, "dingotherrobot"), fake.endpoint, SystemClock()
    )
    try:
        with pytest.raises(DingTalkError) as refused:
            await other.batch_send(STAFF, "sampleText", {"content": "hi"})
    finally:
        await other.close()
    assert refused.value.code == "invalidParameter.robotCode.notExsit"


# ---- OpenAPI: cards ----------------------------------------------------------------------------------


QUESTION = card("Which one?", "Pick", [("A", "q:7:0"), ("B", "q:7:1")])


async def test_send_card_is_idempotent_by_card_biz_id(fake: FakeDingTalk, api: DingTalkApi) -> None:
    fake.add_staff(STAFF)
    await api.send_card("card-1", card_data(QUESTION), user_id=STAFF)
    await api.send_card("card-1", card_data(QUESTION), user_id=STAFF)
    (sent,) = fake.sent
    assert (sent.via, sent.to, sent.card_biz_id, sent.card) == ("card", STAFF, "card-1", QUESTION)


async def test_the_card_answer_carries_the_key_at_top_level(fake: FakeDingTalk, api: DingTalkApi) -> None:
    """As the robot card API's Tea model (SendRobotInteractiveCardResponseBody) has it."""
    fake.add_group(*GROUP)
    body = {
        "cardTemplateId": "StandardCard",
        "robotCode": APP.robot_code,
        "cardBizId": "card-2",
        "cardData": card_data(QUESTION),
        "openConversationId": GROUP[0],
        "sendOptions": {},
    }
    async with httpx.AsyncClient() as http:
        response = await http.post(
            f"{fake.endpoint}/v1.0/im/v1.0/robot/interactiveCards/send",
            json=body,
            headers={"x-acs-dingtalk-access-token": await api.token()},
        )
    assert response.status_code == 200
    assert set(response.json()) == {"processQueryKey"}
    assert response.json()["processQueryKey"] == fake.sent[0].process_query_key


async def test_a_card_our_rule_refuses_is_a_400(fake: FakeDingTalk, api: DingTalkApi) -> None:
    fake.add_staff(STAFF)
    twice = copy_of(QUESTION)
    twice["contents"][1]["actions"][1]["id"] = "q:7:0"  # two buttons with one id
    with pytest.raises(DingTalkError) as refused:
        await api.send_card("card-3", json.dumps(twice), user_id=STAFF)
    assert refused.value.http_status == 400 and refused.value.code == "invalidParameter.cardData"
    assert "used twice" in str(refused.value)
    assert fake.sent == []


async def test_update_card_is_recorded_and_an_unknown_card_refused(
    fake: FakeDingTalk, api: DingTalkApi
) -> None:
    fake.add_staff(STAFF)
    await api.send_card("card-4", card_data(QUESTION), user_id=STAFF)
    done = settled(QUESTION, "Answered: A")
    await api.update_card("card-4", card_data(done))
    (update,) = await fake.wait_for_card_updates(1)
    assert (update.card_biz_id, update.card) == ("card-4", done)
    assert fake.card("card-4") == done
    with pytest.raises(DingTalkError) as unknown:
        await api.update_card("card-nope", card_data(done))
    assert unknown.value.http_status == 400


# ---- session webhook ---------------------------------------------------------------------------------


async def test_webhook_send_and_its_expiry(fake: FakeDingTalk, api: DingTalkApi, clock: Clock) -> None:
    fake.add_staff(STAFF)
    ws = await connect(api)
    said = await fake.user_says("hello")
    assert said is not None
    await next_frame(ws)
    body = {"msgtype": "text", "text": {"content": "hi back"}, "at": {"atUserIds": [STAFF]}}
    await api.webhook_send(fake.webhook_url(said.session), body)
    (sent,) = fake.sent
    assert (sent.via, sent.to, sent.text, sent.at_user_ids, sent.session) == (
        "webhook",
        said.conversation_id,
        "hi back",
        (STAFF,),
        said.session,
    )
    clock.t += 90 * 60 + 1
    with pytest.raises(DingTalkError) as expired:
        await api.webhook_send(fake.webhook_url(said.session), body)
    assert expired.value.code == "300005"
    with pytest.raises(DingTalkError) as unknown:
        await api.webhook_send(fake.webhook_url("no-such-session"), body)
    assert unknown.value.code not in ("", "0")
    assert len(fake.sent) == 1
    await ws.close()


# ---- faults ------------------------------------------------------------------------------------------


async def test_a_lost_answer_is_sent_but_unanswered(fake: FakeDingTalk, api: DingTalkApi) -> None:
    fake.add_staff(STAFF)
    fake.lose_answer(1)
    with pytest.raises(DingTalkError) as lost:
        await api.batch_send(STAFF, "sampleText", {"content": "maybe"})
    assert lost.value.sent is True
    assert [s.text for s in fake.sent] == ["maybe"] and fake.lost == fake.sent
    await api.batch_send(STAFF, "sampleText", {"content": "surely"})
    assert [s.text for s in fake.sent] == ["maybe", "surely"]


async def test_fail_sends_answers_the_status_before_anything(fake: FakeDingTalk, api: DingTalkApi) -> None:
    fake.fail_sends(1, status=503)
    with pytest.raises(DingTalkError) as failed:
        await api.group_send(
            "cidNowhere==", "sampleText", {"content": "x"}
        )  # would be a 400 without the fault
    assert failed.value.http_status == 503
    assert fake.sent == []


# ---- stream: gateway and tickets ---------------------------------------------------------------------


async def test_open_records_subscriptions_and_a_ticket_works_once(
    fake: FakeDingTalk, api: DingTalkApi
) -> None:
    url, ticket = await api.open_connection()
    (opened,) = fake.opened
    assert {s["topic"] for s in opened.subscriptions} == {BOT_TOPIC, CARD_TOPIC}
    assert url.startswith("ws://127.0.0.1:") and opened.ticket == ticket
    ws = await websockets.connect(f"{url}?ticket={quote(ticket, safe='')}")
    assert (await fake.wait_connected(1)).ws is not None
    with pytest.raises(InvalidStatus) as reused:
        await websockets.connect(f"{url}?ticket={quote(ticket, safe='')}")
    assert reused.value.response.status_code == 401
    await ws.close()


async def test_a_ticket_older_than_90_s_is_refused(
    fake: FakeDingTalk, api: DingTalkApi, clock: Clock
) -> None:
    url, ticket = await api.open_connection()
    clock.t += 91
    with pytest.raises(InvalidStatus) as refused:
        await websockets.connect(f"{url}?ticket={quote(ticket, safe='')}")
    assert refused.value.response.status_code == 401
    assert fake.connects == 0


async def test_nothing_is_pushed_without_a_connection(fake: FakeDingTalk) -> None:
    with pytest.raises(NoClientConnected):
        await fake.user_says("hello")


# ---- stream: robot messages --------------------------------------------------------------------------


async def test_a_one_to_one_message_reads_through_the_sdk(fake: FakeDingTalk, api: DingTalkApi) -> None:
    ws = await connect(api)
    said = await fake.user_says("  please report  ", staff_id=STAFF, nick="Lin")
    assert said is not None
    frame = await next_frame(ws)
    callback = SDK.CallbackMessage.from_dict(frame)
    assert (frame["type"], callback.headers.topic, callback.headers.message_id) == (
        "CALLBACK",
        BOT_TOPIC,
        said.message_id,
    )
    arrival = read_message(SDK, callback.data)
    assert (arrival.peer, arrival.platform_id, arrival.body["text"]) == (STAFF, said.msg_id, "please report")
    assert arrival.body["chat_type"] == "p2p" and arrival.body["sender_nick"] == "Lin"
    assert json.loads(arrival.reply_token)["url"] == fake.webhook_url(said.session)
    await ack(ws, said.message_id, {"response": "OK"})
    got = await fake.wait_for_ack(said.message_id)
    assert got.code == 200 and got.data == {"response": "OK"}
    assert fake.bad_acks == []
    await ws.close()


async def test_a_quote_of_the_bot_reads_as_its_words(fake: FakeDingTalk, api: DingTalkApi) -> None:
    ws = await connect(api)
    await fake.user_says("this one", quote=fake.quote_of_bot("Which report?  Pick one"))
    arrival = read_message(SDK, json.loads((await next_frame(ws))["data"]))
    assert arrival.body["quote"] == {"svr_id": quote_ref("Which report? Pick one"), "by": "bot"}
    first = await fake.user_says("first")
    assert first is not None
    await next_frame(ws)
    await fake.user_says("as I said", quote=fake.quote_of_user(first.msg_id))
    arrival = read_message(SDK, json.loads((await next_frame(ws))["data"]))
    assert arrival.body["quote"] == {"svr_id": first.msg_id}
    await ws.close()


async def test_a_group_message_arrives_only_when_it_ats_the_bot(fake: FakeDingTalk, api: DingTalkApi) -> None:
    ws = await connect(api)
    assert await fake.user_says("just chatting", group=GROUP, at_bot=False) is None
    assert fake.frames_pushed == []
    said = await fake.user_says("@Errand report", group=GROUP)
    assert said is not None and said.conversation_id == GROUP[0]
    arrival = read_message(SDK, json.loads((await next_frame(ws))["data"]))
    assert (arrival.peer, arrival.body["sender"], arrival.body["chat_title"]) == (GROUP[0], STAFF, GROUP[1])
    key = await api.group_send(GROUP[0], "sampleText", {"content": "ok"})  # the group is known now
    assert key
    await ws.close()


async def test_a_picture_message_reads_its_download_code(fake: FakeDingTalk, api: DingTalkApi) -> None:
    ws = await connect(api)
    await fake.user_says(msgtype="picture", picture_code="dl-code-1")
    arrival = read_message(SDK, json.loads((await next_frame(ws))["data"]))
    assert arrival.body["items"] == [{"kind": "image", "media": {"dingtalk_download": "dl-code-1"}}]
    await ws.close()


# ---- stream: card presses, pings, events -------------------------------------------------------------


async def test_a_press_reads_as_our_button(fake: FakeDingTalk, api: DingTalkApi) -> None:
    fake.add_staff(STAFF)
    await api.send_card("card-5", card_data(QUESTION), user_id=STAFF)
    ws = await connect(api)
    message_id = await fake.press("card-5", "q:7:1", staff_id=STAFF)
    frame = await next_frame(ws)
    callback = SDK.CallbackMessage.from_dict(frame)
    assert callback.headers.topic == CARD_TOPIC and callback.headers.message_id == message_id
    assert read_press(SDK, callback.data) == DingTalkPress("card-5", "q:7:1", STAFF)
    with pytest.raises(ValueError):
        await fake.press("card-5", "q:7:9", staff_id=STAFF)
    with pytest.raises(KeyError):
        await fake.press("card-none", "q:7:1", staff_id=STAFF)
    await ws.close()


async def test_a_ping_is_echoed(fake: FakeDingTalk, api: DingTalkApi) -> None:
    ws = await connect(api)
    message_id = await fake.ping()
    ping = SDK.SystemMessage.from_dict(await next_frame(ws))
    assert ping.headers.topic == "ping" and set(ping.data) == {"opaque"}
    await ack(ws, message_id, ping.data)
    assert await fake.wait_for_pongs(1) == [ping.data]
    wrong = await fake.ping()
    await next_frame(ws)
    await ack(ws, wrong, {"opaque": "something else"})
    await fake.wait_until(lambda: len(fake.bad_acks) == 1)
    assert len(fake.pongs) == 1
    await ws.close()


async def test_an_event_ack_needs_a_status(fake: FakeDingTalk, api: DingTalkApi) -> None:
    ws = await connect(api)
    good = await fake.event("chat_update_title", {"title": "new"}, "evt-1")
    event = SDK.EventMessage.from_dict(await next_frame(ws))
    assert (event.headers.event_id, event.data) == ("evt-1", {"title": "new"})
    await ack(ws, good, {"status": "SUCCESS"})
    bad = await fake.event("chat_update_title", {"title": "newer"}, "evt-2")
    await next_frame(ws)
    await ack(ws, bad, {"response": "OK"})
    await fake.wait_for_acks(2)
    assert [why for why, _ in fake.bad_acks] == ["an EVENT ack needs data.status SUCCESS or LATER, not None"]
    await ws.close()


async def test_a_bad_frame_from_the_client_is_recorded(fake: FakeDingTalk, api: DingTalkApi) -> None:
    ws = await connect(api)
    await fake.wait_connected(1)
    await ws.send("not json")
    await fake.wait_until(lambda: fake.bad_frames == ["not json"])
    await fake.push_raw({"type": "NOPE"})
    assert await next_frame(ws) == {"type": "NOPE"}
    await ws.close()


# ---- stream: disconnects -----------------------------------------------------------------------------


async def test_tell_disconnect_closes_after_grace_and_routes_to_the_new(
    fake: FakeDingTalk, api: DingTalkApi
) -> None:
    old = await connect(api)
    await fake.wait_connected(1)
    await fake.tell_disconnect(grace_s=0.05)
    notice = SDK.SystemMessage.from_dict(await next_frame(old))
    assert notice.headers.topic == "disconnect"
    with pytest.raises(NoClientConnected):
        await fake.user_says("nobody can take this")
    new = await connect(api)
    await fake.wait_connected(2)
    said = await fake.user_says("after the switch")
    assert said is not None
    assert (await next_frame(new))["headers"]["messageId"] == said.message_id
    async with asyncio.timeout(WAIT):
        await old.wait_closed()
    assert len(fake.connections) == 1
    await new.close()


async def test_drop_connection_closes_abruptly(fake: FakeDingTalk, api: DingTalkApi) -> None:
    ws = await connect(api)
    await fake.wait_connected(1)
    await fake.drop_connection()
    with pytest.raises(ConnectionClosed):
        async with asyncio.timeout(WAIT):
            await ws.recv()
    assert fake.connections == []


def copy_of(value: dict[str, Any]) -> dict[str, Any]:
    copied = json.loads(json.dumps(value))
    assert isinstance(copied, dict)
    return copied

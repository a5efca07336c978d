"""The fake Feishu server, driven by the real lark-oapi 1.7.5: its REST builders and async methods, its frame
type, its ack, chunk-joining and handshake-error logic. What tests of the Feishu adapter rely on."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import lark_oapi as lark  # type: ignore[import-untyped]
import pytest
import websockets
from lark_oapi.api.auth.v3 import (  # type: ignore[import-untyped]
    InternalTenantAccessTokenRequest,
    InternalTenantAccessTokenRequestBody,
)
from lark_oapi.api.im.v1 import (  # type: ignore[import-untyped]
    CreateMessageRequest,
    CreateMessageRequestBody,
    GetMessageResourceRequest,
    ListMessageRequest,
    PatchMessageRequest,
    PatchMessageRequestBody,
    ReplyMessageRequest,
    ReplyMessageRequestBody,
)
from lark_oapi.event.callback.model.p2_card_action_trigger import (  # type: ignore[import-untyped]
    P2CardActionTriggerResponse,
)
from lark_oapi.ws.client import _parse_ws_conn_exception  # type: ignore[import-untyped]
from lark_oapi.ws.exception import ClientException, ServerException  # type: ignore[import-untyped]
from lark_oapi.ws.pb.pbbp2_pb2 import Frame  # type: ignore[import-untyped]
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.fakes.fake_feishu import FakeFeishu, NoClientConnected, mention

USER = "ou_user000000000000000000000000001"
GROUP = "oc_group00000000000000000000000001"
DM = "oc_dm000000000000000000000000000001"
CARD = {"config": {"update_multi": True}, "elements": [{"tag": "markdown", "content": "working…"}]}


class Clock:
    def __init__(self, t: float = 1_700_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def fake(clock: Clock) -> AsyncIterator[FakeFeishu]:
    async with FakeFeishu(now=clock) as server:
        yield server


def sdk(fake: FakeFeishu) -> Any:
    return (
        lark.Client.builder()
        .app_id(fake.app_id)
        .app_secret(fake.app_secret)
        .domain(fake.url)
        .enable_set_token(True)
        .build()
    )


async def token_response(fake: FakeFeishu, *, app_id: str = "", secret: str = "") -> Any:
    body = InternalTenantAccessTokenRequestBody.builder().app_id(app_id or fake.app_id)
    request = InternalTenantAccessTokenRequest.builder().request_body(
        body.app_secret(secret or fake.app_secret).build()
    )
    return await sdk(fake).auth.v3.tenant_access_token.ainternal(request.build())


async def option(fake: FakeFeishu) -> Any:
    response = await token_response(fake)
    # Feishu puts the token beside code/msg, not under data, so the SDK's model leaves it in the raw body
    token = json.loads(response.raw.content)["tenant_access_token"]
    return lark.RequestOption.builder().tenant_access_token(token).build()


async def create(
    fake: FakeFeishu,
    opt: Any,
    content: Any,
    *,
    to: str = GROUP,
    kind: str = "chat_id",
    msg_type: str = "text",
    uuid: str = "",
) -> Any:
    body = CreateMessageRequestBody.builder().receive_id(to).msg_type(msg_type)
    body = body.content(content if isinstance(content, str) else json.dumps(content))
    if uuid:
        body = body.uuid(uuid)
    request = CreateMessageRequest.builder().receive_id_type(kind).request_body(body.build()).build()
    return await sdk(fake).im.v1.message.acreate(request, opt)


async def reply(
    fake: FakeFeishu,
    opt: Any,
    message_id: str,
    content: dict[str, Any],
    *,
    in_thread: bool = False,
) -> Any:
    body = ReplyMessageRequestBody.builder().msg_type("text").content(json.dumps(content))
    body = body.reply_in_thread(in_thread)
    request = ReplyMessageRequest.builder().message_id(message_id).request_body(body.build()).build()
    return await sdk(fake).im.v1.message.areply(request, opt)


async def patch(fake: FakeFeishu, opt: Any, message_id: str, card: dict[str, Any]) -> Any:
    body = PatchMessageRequestBody.builder().content(json.dumps(card)).build()
    request = PatchMessageRequest.builder().message_id(message_id).request_body(body).build()
    return await sdk(fake).im.v1.message.apatch(request, opt)


async def history(fake: FakeFeishu, opt: Any, chat_id: str, **query: Any) -> Any:
    builder = ListMessageRequest.builder().container_id_type("chat").container_id(chat_id)
    for name, value in query.items():
        builder = getattr(builder, name)(value)
    return await sdk(fake).im.v1.message.alist(builder.build(), opt)


def in_group(fake: FakeFeishu, text: str = "hi", **fields: Any) -> dict[str, Any]:
    return fake.message_event(chat_id=GROUP, sender=USER, text=text, chat_type="group", **fields)


# ---- auth -------------------------------------------------------------------------------------------------


async def test_credentials_give_a_token_and_wrong_ones_feishus_codes(fake: FakeFeishu) -> None:
    good = await token_response(fake)
    assert good.code == 0 and json.loads(good.raw.content)["expire"] == 7200
    wrong_secret = await token_response(fake, secret="nope")
    unknown_app = await token_response(fake, app_id="cli_nobody")
    assert (wrong_secret.code, wrong_secret.msg, wrong_secret.raw.status_code) == (
        10014,
        "app secret invalid",
        200,
    )
    assert (unknown_app.code, unknown_app.raw.status_code) == (10003, 200)
    assert fake.token_requests == 3


async def test_rest_calls_need_an_issued_token(fake: FakeFeishu) -> None:
    in_group(fake)
    bogus = lark.RequestOption.builder().tenant_access_token("t-made-up").build()
    refused = await create(fake, bogus, {"text": "x"})
    assert (refused.code, refused.raw.status_code) == (99991663, 400)
    opt = await option(fake)
    assert (await create(fake, opt, {"text": "x"})).code == 0
    fake.expire_tokens()
    assert (await create(fake, opt, {"text": "x"})).code == 99991663
    assert len(fake.sent) == 1


async def test_bot_info(fake: FakeFeishu) -> None:
    opt = await option(fake)
    request = (
        lark.BaseRequest.builder()
        .http_method(lark.HttpMethod.GET)
        .uri("/open-apis/bot/v3/info")
        .token_types({lark.AccessTokenType.TENANT})
        .build()
    )
    response = await sdk(fake).arequest(request, opt)
    bot = json.loads(response.raw.content)["bot"]
    assert (bot["open_id"], bot["app_name"], bot["activate_status"]) == (fake.bot_open_id, fake.app_name, 2)


# ---- sending ----------------------------------------------------------------------------------------------


async def test_sends_and_replies_are_recorded_and_shaped_like_feishus(fake: FakeFeishu) -> None:
    opt = await option(fake)
    asked = in_group(fake, "what's up")["event"]["message"]["message_id"]
    created = await create(fake, opt, {"text": "hello"})
    assert created.code == 0
    data = created.data
    assert (data.chat_id, data.msg_type, data.sender.id_type, data.sender.sender_type) == (
        GROUP,
        "text",
        "app_id",
        "app",
    )
    assert json.loads(data.body.content) == {"text": "hello"}
    threaded = await reply(fake, opt, asked, {"text": "on it"}, in_thread=True)
    assert threaded.data.thread_id.startswith("omt_") and threaded.data.root_id == asked
    sent = await fake.wait_for_sent(2)
    assert [(s.chat_id, s.reply_to, s.content["text"]) for s in sent] == [
        (GROUP, "", "hello"),
        (GROUP, asked, "on it"),
    ]
    assert sent[1].root_id == asked and sent[1].thread_id == threaded.data.thread_id


async def test_a_user_is_reached_by_open_id_in_their_p2p_chat(fake: FakeFeishu) -> None:
    opt = await option(fake)
    refused = await create(fake, opt, {"text": "hi"}, to=USER, kind="open_id")
    assert refused.code == 230013
    fake.message_event(chat_id=DM, sender=USER, text="hello bot")
    assert (await create(fake, opt, {"text": "hi"}, to=USER, kind="open_id")).data.chat_id == DM


async def test_the_same_uuid_sends_once(fake: FakeFeishu, clock: Clock) -> None:
    opt = await option(fake)
    in_group(fake)
    first = await create(fake, opt, {"text": "once"}, uuid="u-1")
    again = await create(fake, opt, {"text": "twice?"}, uuid="u-1")
    assert again.code == 0 and again.data.message_id == first.data.message_id
    assert [s.uuid for s in fake.sent] == ["u-1"]
    clock.t += 3601
    later = await create(fake, opt, {"text": "an hour on"}, uuid="u-1")
    assert later.data.message_id != first.data.message_id
    too_long = await create(fake, opt, {"text": "x"}, uuid="u" * 51)
    assert too_long.code == 230001 and len(fake.sent) == 2


@pytest.mark.parametrize(
    ("msg_type", "content", "code"),
    [
        ("text", "not json", 230001),
        ("text", {"txt": "typo"}, 230001),
        ("text", {"text": "x" * (150 * 1024)}, 230025),
        ("interactive", {"header": {}}, 230099),
        ("interactive", {"schema": "2.0", "elements": []}, 230099),
        ("interactive", {"elements": [{"tag": "markdown", "content": "x" * (30 * 1024)}]}, 230025),
        ("nonsense", {"text": "x"}, 230001),
    ],
)
async def test_content_is_checked_like_the_platform(
    fake: FakeFeishu, msg_type: str, content: Any, code: int
) -> None:
    opt = await option(fake)
    in_group(fake)
    refused = await create(fake, opt, content, msg_type=msg_type)
    assert (refused.code, refused.raw.status_code) == (code, 400)
    assert fake.sent == []


async def test_cards_v1_and_v2_are_accepted_and_an_unknown_chat_refused(fake: FakeFeishu) -> None:
    opt = await option(fake)
    assert (await create(fake, opt, CARD, msg_type="interactive")).code == 230002
    in_group(fake)
    v2 = {"schema": "2.0", "body": {"elements": [{"tag": "markdown", "content": "hi"}]}}
    for card in (CARD, v2):
        assert (await create(fake, opt, card, msg_type="interactive")).code == 0
    assert [s.content for s in fake.sent] == [CARD, v2]


async def test_only_our_shared_cards_can_be_patched(fake: FakeFeishu) -> None:
    opt = await option(fake)
    users = in_group(fake)["event"]["message"]["message_id"]
    card = (await create(fake, opt, CARD, msg_type="interactive")).data.message_id
    text = (await create(fake, opt, {"text": "plain"})).data.message_id
    unshared = (await create(fake, opt, {"elements": []}, msg_type="interactive")).data.message_id
    done = {"config": {"update_multi": True}, "elements": [{"tag": "markdown", "content": "done"}]}
    assert (await patch(fake, opt, card, done)).code == 0
    for target in (users, text, unshared, "om_unknown"):
        assert (await patch(fake, opt, target, done)).code == 230001
    patches = await fake.wait_for_patches(1)
    assert [(p.message_id, p.content) for p in patches] == [(card, done)]
    assert fake.sent[0].patched == [done]
    listed = await history(fake, opt, GROUP)
    assert json.loads(listed.data.items[1].body.content) == done and listed.data.items[1].updated


async def test_failed_sends(fake: FakeFeishu) -> None:
    opt = await option(fake)
    in_group(fake)
    fake.fail_sends(1, code=230020)
    fake.fail_sends(1, code=99991400)
    limited = await create(fake, opt, {"text": "a"})
    assert (limited.code, limited.raw.status_code) == (230020, 400)
    frequency = await create(fake, opt, {"text": "a"})
    assert (frequency.code, frequency.raw.status_code) == (99991400, 429)
    assert "x-ogw-ratelimit-reset" in frequency.raw.headers
    fake.fail_sends(1)
    with pytest.raises(json.JSONDecodeError):  # the SDK parses every answer as JSON, a gateway page too
        await create(fake, opt, {"text": "a"})
    assert fake.sent == []
    assert (await create(fake, opt, {"text": "a"})).code == 0


async def test_a_lost_answer_is_still_sent(fake: FakeFeishu) -> None:
    opt = await option(fake)
    in_group(fake)
    fake.lose_answer(1)
    with pytest.raises(httpx.RemoteProtocolError):
        await create(fake, opt, {"text": "did it go?"}, uuid="u-lost")
    assert [s.content for s in await fake.wait_for_sent(1)] == [{"text": "did it go?"}]
    retried = await create(fake, opt, {"text": "did it go?"}, uuid="u-lost")
    assert retried.data.message_id == fake.sent[0].message_id and len(fake.sent) == 1


# ---- history ----------------------------------------------------------------------------------------------


async def test_history_pages_in_order_with_users_and_our_sends(fake: FakeFeishu, clock: Clock) -> None:
    opt = await option(fake)
    base = int(clock.t) * 1000
    said = [
        fake.say_while_offline(
            chat_id=GROUP, sender=USER, text=f"m{i}", chat_type="group", create_time_ms=base + i * 1000
        )
        for i in range(4)
    ]
    clock.t += 10
    ours = (await create(fake, opt, {"text": "reply"})).data.message_id
    pages, token = [], ""
    while True:
        page = await history(fake, opt, GROUP, page_size=2, **({"page_token": token} if token else {}))
        pages.append([m.message_id for m in page.data.items])
        if not page.data.has_more:
            break
        token = page.data.page_token
    assert pages == [said[:2], said[2:4], [ours]]
    everything = (await history(fake, opt, GROUP, sort_type="ByCreateTimeDesc")).data.items
    assert [m.message_id for m in everything] == [ours, *reversed(said)]
    assert [m.sender.sender_type for m in everything] == ["app", "user", "user", "user", "user"]
    assert everything[1].sender.id == USER and everything[1].create_time == str(base + 3000)
    assert fake.history_calls == {GROUP: 4}


async def test_history_filters_by_seconds_and_refuses_a_changed_query(fake: FakeFeishu, clock: Clock) -> None:
    opt = await option(fake)
    start = int(clock.t)
    ids = [
        fake.say_while_offline(
            chat_id=GROUP,
            sender=USER,
            text=str(i),
            chat_type="group",
            create_time_ms=(start + i) * 1000 + 500,
        )
        for i in range(5)
    ]
    window = await history(fake, opt, GROUP, start_time=str(start + 1), end_time=str(start + 3))
    assert [m.message_id for m in window.data.items] == ids[1:4]
    first = await history(fake, opt, GROUP, page_size=1)
    changed = await history(
        fake, opt, GROUP, page_size=1, sort_type="ByCreateTimeDesc", page_token=first.data.page_token
    )
    assert changed.code == 230001
    assert (await history(fake, opt, GROUP, page_size=51)).code == 230001
    assert (await history(fake, opt, "oc_not_ours")).code == 230002
    fake.history_forbidden = True
    assert (await history(fake, opt, GROUP)).code == 230027


async def test_history_mentions_are_flat_where_events_nest_them(fake: FakeFeishu) -> None:
    opt = await option(fake)
    event = in_group(
        fake, "@_user_1 status?", mentions=[mention(open_id=fake.bot_open_id, name="Errand Bot")]
    )
    assert event["event"]["message"]["mentions"][0]["id"]["open_id"] == fake.bot_open_id
    assert isinstance(event["event"]["message"]["content"], str)
    item = (await history(fake, opt, GROUP)).data.items[0]
    assert (item.mentions[0].id, item.mentions[0].id_type) == (fake.bot_open_id, "open_id")
    assert in_group(fake, history=False) and len((await history(fake, opt, GROUP)).data.items) == 1


async def test_resources_are_served_for_their_message(fake: FakeFeishu) -> None:
    opt = await option(fake)
    message_id = in_group(fake, msg_type="image", content={"image_key": "img_1"})["event"]["message"][
        "message_id"
    ]
    fake.put_resource(message_id, "img_1", b"\x89PNG...")

    async def fetch(key: str) -> Any:
        request = (
            GetMessageResourceRequest.builder().message_id(message_id).file_key(key).type("image").build()
        )
        return await sdk(fake).im.v1.message_resource.aget(request, opt)

    assert (await fetch("img_1")).file.read() == b"\x89PNG..."
    missing = await fetch("img_2")
    # the SDK looks for "Content-Type" in httpx's lower-cased headers, so an error body is left unparsed
    assert missing.raw.status_code == 400 and json.loads(missing.raw.content)["code"] == 234003


# ---- long connection: raw frames --------------------------------------------------------------------------


async def ws_url(fake: FakeFeishu) -> str:
    async with httpx.AsyncClient() as http:
        answer = (
            await http.post(
                f"{fake.url}/callback/ws/endpoint", json={"AppID": fake.app_id, "AppSecret": fake.app_secret}
            )
        ).json()
    assert answer["code"] == 0
    assert answer["data"]["ClientConfig"] == {
        "ReconnectCount": -1,
        "ReconnectInterval": 1,
        "ReconnectNonce": 0,
        "PingInterval": 120,
    }
    return str(answer["data"]["URL"])


def frame_of(data: bytes | str) -> Any:
    frame = Frame()
    frame.ParseFromString(data)
    return frame


def headers_of(frame: Any) -> dict[str, str]:
    return {h.key: h.value for h in frame.headers}


async def test_pings_get_pongs_carrying_the_client_config(fake: FakeFeishu) -> None:
    async with websockets.connect(await ws_url(fake), proxy=None) as ws:
        await fake.wait_connected(1)
        ping = Frame(SeqID=0, LogID=0, service=7, method=0)
        ping.headers.add(key="type", value="ping")
        await ws.send(ping.SerializeToString())
        pong = frame_of(await ws.recv())
        assert (pong.method, headers_of(pong)["type"]) == (0, "pong")
        assert json.loads(pong.payload)["PingInterval"] == 120
    assert fake.pings == 1


async def test_a_pushed_event_arrives_in_chunks_and_waits_for_its_ack(fake: FakeFeishu) -> None:
    async with websockets.connect(await ws_url(fake), proxy=None) as ws:
        await fake.wait_connected(1)
        event = in_group(fake, "long " * 200)
        pushed = asyncio.create_task(fake.push(event, chunks=3))
        frames = [frame_of(await ws.recv()) for _ in range(3)]
        assert [(headers_of(f)["sum"], headers_of(f)["seq"]) for f in frames] == [
            ("3", "0"),
            ("3", "1"),
            ("3", "2"),
        ]
        assert json.loads(b"".join(f.payload for f in frames)) == event
        assert not pushed.done()
        last = frames[-1]
        result = base64.b64encode(json.dumps({"toast": {"type": "info", "content": "ok"}}).encode()).decode()
        last.payload = json.dumps({"code": 200, "data": result}).encode()
        await ws.send(last.SerializeToString())
        ack = await pushed
    assert (ack.code, ack.data) == (200, {"toast": {"type": "info", "content": "ok"}})
    assert fake.acks == [ack]


async def test_push_needs_a_client_that_stays_to_ack(fake: FakeFeishu) -> None:
    with pytest.raises(NoClientConnected):
        await fake.push(in_group(fake))
    async with websockets.connect(await ws_url(fake), proxy=None) as ws:
        await fake.wait_connected(1)
        pushed = asyncio.create_task(fake.push(in_group(fake)))
        unanswered = frame_of(await ws.recv())
        frame_id = await fake.push_nowait(in_group(fake))
        later = frame_of(await ws.recv())
        later.payload = b'{"code":200}'
        await ws.send(later.SerializeToString())
        assert [(a.code, a.headers["message_id"]) for a in await fake.wait_for_acks(1)] == [(200, frame_id)]
    with pytest.raises(ConnectionError):
        await pushed
    assert headers_of(unanswered)["type"] == "event"


async def test_a_dropped_connection_is_closed_and_the_next_one_counted(fake: FakeFeishu) -> None:
    for n, abrupt in ((1, False), (2, True)):
        ws = await websockets.connect(await ws_url(fake), proxy=None)
        await fake.wait_connected(n)
        await fake.drop_connection(abrupt=abrupt)
        with pytest.raises(ConnectionClosed):
            await ws.recv()
        assert not fake.connected
    assert fake.connections == 2


async def test_refused_handshakes_raise_what_the_sdk_expects(fake: FakeFeishu) -> None:
    url = await ws_url(fake)
    fake.reject_handshakes(1)
    fake.reject_handshakes(1, status=514, auth_code=1, msg="auth failed")
    with pytest.raises(InvalidStatus) as limit:
        await websockets.connect(url, proxy=None)
    with pytest.raises(ClientException) as client_error:
        _parse_ws_conn_exception(limit.value)
    assert str(client_error.value) == "514: too many connections"  # the code is the status, not 1000040350
    with pytest.raises(InvalidStatus) as other:
        await websockets.connect(url, proxy=None)
    with pytest.raises(ServerException):
        _parse_ws_conn_exception(other.value)
    async with websockets.connect(url, proxy=None):
        await fake.wait_connected(1)
    assert (fake.rejected_handshakes, fake.connections) == (2, 1)


# ---- long connection: the SDK's own frame handling --------------------------------------------------------


class SdkConnection:
    """lark-oapi's ws.Client with its connection steps driven here, as the adapter does: its blocking
    start() would need a loop of its own."""

    def __init__(self, fake: FakeFeishu, handler: Any, secret: str | None = None) -> None:
        self.client = lark.ws.Client(
            fake.app_id,
            secret or fake.app_secret,
            event_handler=handler,
            domain=fake.url,
            auto_reconnect=False,
        )
        self.client._cache._cron.cancel()  # it would outlive the test's loop
        self.reader: asyncio.Task[None] | None = None

    async def open(self) -> None:
        url = await asyncio.to_thread(self.client._get_conn_url)  # requests, so off the loop
        conn: ClientConnection = await websockets.connect(url, proxy=None)
        self.client._conn, self.client._service_id = conn, "7"
        self.reader = asyncio.create_task(self._read(conn))

    async def _read(self, conn: ClientConnection) -> None:
        async for message in conn:
            await self.client._handle_message(message)

    async def close(self) -> None:
        if self.client._conn is not None:
            await self.client._conn.close()
        if self.reader is not None:
            await self.reader


def handler(on_message: Callable[[Any], None], on_card: Callable[[Any], Any]) -> Any:
    return (
        lark.EventDispatcherHandler.builder("", "")
        .register_p2_im_message_receive_v1(on_message)
        .register_p2_card_action_trigger(on_card)
        .build()
    )


async def test_the_sdk_reads_our_frames_and_its_acks_read_back(fake: FakeFeishu) -> None:
    messages: list[Any] = []
    cards: list[Any] = []

    def on_card(data: Any) -> Any:
        cards.append(data)
        return P2CardActionTriggerResponse({"toast": {"type": "success", "content": "noted"}})

    sdk_conn = SdkConnection(fake, handler(messages.append, on_card))
    await sdk_conn.open()
    try:
        await fake.wait_connected(1)
        event = in_group(fake, "@_user_1 hi " + "x" * 3000, mentions=[mention(open_id=fake.bot_open_id)])
        assert (await fake.push(event, chunks=4)).code == 200  # joined by the SDK's _combine
        message = messages[0].event.message
        assert json.loads(message.content)["text"].startswith("@_user_1 hi")
        assert (message.chat_id, message.mentions[0].id.open_id) == (GROUP, fake.bot_open_id)
        assert messages[0].header.event_id == event["header"]["event_id"]

        press = fake.card_action_event(
            operator=USER, message_id="om_card", chat_id=GROUP, value={"answer": "yes"}
        )
        ack = await fake.push(press)
        assert (ack.code, ack.data) == (200, {"toast": {"type": "success", "content": "noted"}})
        assert cards[0].event.action.value == {"answer": "yes"}
        assert cards[0].event.context.open_message_id == "om_card"
        assert "biz_rt" in ack.headers

        unhandled = {**event, "header": {**event["header"], "event_type": "im.chat.updated_v1"}}
        assert (await fake.push(unhandled)).code == 500  # processor not found
        with pytest.raises(TimeoutError):  # 1.7.5 drops type=card frames without an ack
            await fake.push(press, frame_type="card", timeout=0.3)
        assert len(cards) == 1
    finally:
        await sdk_conn.close()


async def test_the_sdk_takes_the_endpoints_config_and_its_refusal(fake: FakeFeishu) -> None:
    fake.reconnect_interval = 3
    sdk_conn = SdkConnection(fake, handler(lambda _: None, lambda _: None))
    await sdk_conn.open()
    await sdk_conn.close()
    assert (sdk_conn.client._reconnect_interval, sdk_conn.client._reconnect_nonce) == (3, 0)
    refused = SdkConnection(fake, handler(lambda _: None, lambda _: None), secret="nope")
    with pytest.raises(ClientException) as error:
        await refused.open()
    assert error.value.code == 10014
    assert fake.endpoint_requests == 2

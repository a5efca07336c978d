"""What comes in from Feishu, read strictly (core/channels/feishu/events.py): envelopes built by the fake's
own builders are taken; malformed ones are refused with the field that was wrong; and what the bot reads of a
message (its words, its attachments) is what the person wrote, @-mentions and rich text included."""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.channels.feishu.events import (
    CARD_PRESSED,
    MAX_ID,
    MESSAGE_RECEIVED,
    EventError,
    FeishuMessage,
    card_press_of,
    flatten,
    message_from_history,
    message_of,
    parse_envelope,
)
from core.errors import InvalidInputError
from tests.fakes.fake_feishu import FakeFeishu, mention

OWNER = "ou_owner00000000000000000000000001"
ALICE = "ou_alice00000000000000000000000001"
P2P = "oc_p2p000000000000000000000000001"
GROUP = "oc_group00000000000000000000000001"
NOW_S = 1_767_000_000.0  # a fixed "now" for the fake's times


@pytest.fixture
def feishu() -> FakeFeishu:
    """Only the envelope builders are used: they need no server, so it is never started."""
    return FakeFeishu(now=lambda: NOW_S)


def payload(envelope: dict[str, Any]) -> bytes:
    """As the long connection hands it over: a data frame's JSON bytes."""
    return json.dumps(envelope, ensure_ascii=False).encode()


def received(envelope: dict[str, Any]) -> FeishuMessage:
    return message_of(parse_envelope(payload(envelope)))


def refused_field(envelope: dict[str, Any]) -> str:
    """The field a malformed message event is refused on, whichever step refuses it."""
    with pytest.raises(EventError) as refused:
        received(envelope)
    return refused.value.field


def message_part(envelope: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = envelope["event"]["message"]
    return message


def said(
    feishu: FakeFeishu,
    bot: str,
    *,
    msg_type: str = "text",
    content: dict[str, Any] | None = None,
    text: str = "",
    mentions: list[dict[str, Any]] | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    """What the bot gets of a message in the group: (its words, its attachments)."""
    event = feishu.message_event(
        chat_id=GROUP,
        sender=OWNER,
        chat_type="group",
        msg_type=msg_type,
        content=content,
        text=text,
        mentions=mentions or [],
    )
    flat = flatten(received(event), bot)
    return flat.text, flat.items


# --- envelopes ---------------------------------------------------------------------------------------------


def test_a_message_event_from_the_fake_is_read_whole(feishu: FakeFeishu) -> None:
    event = feishu.message_event(chat_id=P2P, sender=OWNER, text="你好", event_id="ev_1")
    envelope = parse_envelope(payload(event))
    assert (envelope.event_id, envelope.event_type) == ("ev_1", MESSAGE_RECEIVED)
    assert envelope.create_time_ms == int(NOW_S * 1000)

    message = message_of(envelope)
    assert message.message_id == message_part(event)["message_id"]
    assert (message.chat_id, message.chat_type, message.sender) == (P2P, "p2p", OWNER)
    assert (message.msg_type, message.content) == ("text", {"text": "你好"})
    assert not message.from_app
    assert message.event_id == "ev_1" and message.create_time_ms == int(NOW_S * 1000)
    assert (message.parent_id, message.root_id, message.thread_id, message.mentions) == ("", "", "", ())


def test_a_reply_in_a_group_keeps_its_thread_and_its_mentions(feishu: FakeFeishu) -> None:
    first = feishu.message_event(chat_id=GROUP, sender=OWNER, chat_type="group", text="一")
    first_id = message_part(first)["message_id"]
    bot = mention(open_id=feishu.bot_open_id, name=feishu.app_name)
    reply = feishu.message_event(
        chat_id=GROUP,
        sender=OWNER,
        chat_type="group",
        text="@_user_1 二",
        mentions=[bot],
        parent_id=first_id,
        thread_id="omt_1",
    )
    message = received(reply)
    assert message.chat_type == "group"
    assert (message.parent_id, message.root_id, message.thread_id) == (first_id, first_id, "omt_1")
    assert [(m.key, m.open_id, m.name) for m in message.mentions] == [
        ("@_user_1", feishu.bot_open_id, feishu.app_name)
    ]
    assert message.mentions_bot(feishu.bot_open_id)
    assert not message.mentions_bot(ALICE) and not message.mentions_bot("")


def test_a_message_another_app_sent_is_marked_as_from_an_app(feishu: FakeFeishu) -> None:
    event = feishu.message_event(chat_id=GROUP, sender=ALICE, chat_type="group", text="构建完成")
    event["event"]["sender"]["sender_type"] = "app"
    assert received(event).from_app


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b"not json", "payload"),
        (b"\xff\xfe{}", "payload"),  # not UTF-8
        (b'["a list"]', "payload"),
        (b'{"schema": "2.0"}', "header"),
        # a schema 1.0 event: no header, its type inside the event
        (b'{"uuid": "u1", "type": "event_callback", "event": {"type": "message"}}', "header"),
        (b'{"header": "2.0", "event": {}}', "header"),
        (b'{"header": {"event_id": "e1"}, "event": {}}', "header.event_type"),
        (b'{"header": {"event_type": "im.message.receive_v1"}}', "event"),
        (b'{"header": {"event_type": "im.message.receive_v1"}, "event": "x"}', "event"),
        (b'{"header": {"event_type": "x", "event_id": 7}, "event": {}}', "header.event_id"),
        (b'{"header": {"event_type": "x", "create_time": "soon"}, "event": {}}', "header.create_time"),
        (b'{"header": {"event_type": "x", "create_time": "-5"}, "event": {}}', "header.create_time"),
    ],
)
def test_a_bad_envelope_is_refused_naming_its_part(raw: bytes, field: str) -> None:
    with pytest.raises(EventError) as refused:
        parse_envelope(raw)
    assert refused.value.field == field
    assert isinstance(refused.value, InvalidInputError)  # the API's and the log's kind of error
    assert str(refused.value).startswith(f"{field}: ")


def test_an_over_long_event_id_is_refused(feishu: FakeFeishu) -> None:
    event = feishu.message_event(chat_id=P2P, sender=OWNER, text="hi", event_id="e" * (MAX_ID + 1))
    with pytest.raises(EventError) as refused:
        parse_envelope(payload(event))
    assert refused.value.field == "header.event_id"


# --- a received message, refused -------------------------------------------------------------------------


def test_content_that_is_not_a_json_string_is_refused(feishu: FakeFeishu) -> None:
    event = feishu.message_event(chat_id=P2P, sender=OWNER, text="hi")
    message_part(event)["content"] = {"text": "hi"}  # an object, where Feishu sends a JSON string
    assert refused_field(event) == "event.message.content"
    del message_part(event)["content"]
    assert refused_field(event) == "event.message.content"


@pytest.mark.parametrize("content", ["hi", "{'text': 'hi'}", "", '["hi"]', '"hi"'])
def test_content_that_is_not_a_json_object_is_refused(feishu: FakeFeishu, content: str) -> None:
    event = feishu.message_event(chat_id=P2P, sender=OWNER, text="hi")
    message_part(event)["content"] = content
    assert refused_field(event) == "event.message.content"


@pytest.mark.parametrize("chat_type", ["topic", "", None, "P2P"])
def test_an_unknown_chat_type_is_refused(feishu: FakeFeishu, chat_type: str | None) -> None:
    event = feishu.message_event(chat_id=P2P, sender=OWNER, text="hi")
    message_part(event)["chat_type"] = chat_type
    assert refused_field(event) == "event.message.chat_type"


@pytest.mark.parametrize(
    ("part", "field"),
    [
        ("message_id", "event.message.message_id"),
        ("chat_id", "event.message.chat_id"),
        ("message_type", "event.message.message_type"),
    ],
)
def test_a_message_without_its_ids_is_refused(feishu: FakeFeishu, part: str, field: str) -> None:
    event = feishu.message_event(chat_id=P2P, sender=OWNER, text="hi")
    message_part(event)[part] = ""
    assert refused_field(event) == field
    del message_part(event)[part]
    assert refused_field(event) == field


def test_a_message_without_its_sender_is_refused(feishu: FakeFeishu) -> None:
    event = feishu.message_event(chat_id=P2P, sender=OWNER, text="hi")
    del event["event"]["sender"]["sender_id"]["open_id"]
    assert refused_field(event) == "event.sender.sender_id.open_id"
    event["event"]["sender"]["sender_id"] = "ou_x"
    assert refused_field(event) == "event.sender.sender_id"
    event["event"]["sender"] = None
    assert refused_field(event) == "event.sender"
    event = feishu.message_event(chat_id=P2P, sender=OWNER, text="hi")
    event["event"]["message"] = "hi"
    assert refused_field(event) == "event.message"


def test_ids_of_at_most_the_limit_are_taken_and_longer_or_unprintable_ones_are_refused(
    feishu: FakeFeishu,
) -> None:
    longest = "om_" + "a" * (MAX_ID - 3)
    event = feishu.message_event(chat_id=P2P, sender=OWNER, text="hi", message_id=longest)
    assert received(event).message_id == longest

    for chat_id, sender, message_id, field in [
        ("oc_" + "a" * MAX_ID, OWNER, None, "event.message.chat_id"),
        (P2P, "ou_" + "a" * MAX_ID, None, "event.sender.sender_id.open_id"),
        (P2P, OWNER, longest + "a", "event.message.message_id"),
        (P2P, OWNER, "om_1\nom_2", "event.message.message_id"),  # a line break would forge a log line
    ]:
        event = feishu.message_event(chat_id=chat_id, sender=sender, text="hi", message_id=message_id)
        assert refused_field(event) == field, (chat_id, sender, message_id)

    event = feishu.message_event(chat_id=P2P, sender=OWNER, text="hi", parent_id="om_" + "p" * MAX_ID)
    assert refused_field(event) == "event.message.parent_id"
    event = feishu.message_event(chat_id=P2P, sender=OWNER, text="hi")
    message_part(event)["message_id"] = 12345  # a number where an id goes
    assert refused_field(event) == "event.message.message_id"


def test_bad_mentions_and_times_are_refused(feishu: FakeFeishu) -> None:
    event = feishu.message_event(chat_id=GROUP, sender=OWNER, chat_type="group", text="@_user_1 hi")
    message_part(event)["mentions"] = {"key": "@_user_1"}
    assert refused_field(event) == "event.message.mentions"
    message_part(event)["mentions"] = ["@_user_1"]
    assert refused_field(event) == "event.message.mentions[0]"
    message_part(event)["mentions"] = [mention(open_id=feishu.bot_open_id), {"key": "k" * (MAX_ID + 1)}]
    assert refused_field(event) == "event.message.mentions[1].key"

    event = feishu.message_event(chat_id=P2P, sender=OWNER, text="hi")
    message_part(event)["create_time"] = "yesterday"
    assert refused_field(event) == "event.message.create_time"


# --- a card button press ---------------------------------------------------------------------------------


def test_a_card_press_from_the_fake_is_read(feishu: FakeFeishu) -> None:
    event = feishu.card_action_event(
        operator=OWNER, message_id="om_card1", chat_id=GROUP, value={"a": "answer", "i": "ap_1", "o": 0}
    )
    envelope = parse_envelope(payload(event))
    assert envelope.event_type == CARD_PRESSED
    press = card_press_of(envelope)
    assert (press.operator, press.message_id, press.chat_id) == (OWNER, "om_card1", GROUP)
    assert press.value == {"a": "answer", "i": "ap_1", "o": 0}
    assert press.event_id == envelope.event_id != ""


@pytest.mark.parametrize(
    ("spoil", "field"),
    [
        (lambda e: e["event"].pop("operator"), "event.operator"),
        (lambda e: e["event"]["operator"].pop("open_id"), "event.operator.open_id"),
        (lambda e: e["event"]["operator"].update(open_id="ou_" + "x" * MAX_ID), "event.operator.open_id"),
        (lambda e: e["event"].update(action=["button"]), "event.action"),
        (lambda e: e["event"].pop("context"), "event.context"),
        (lambda e: e["event"]["context"].pop("open_message_id"), "event.context.open_message_id"),
        (lambda e: e["event"]["context"].update(open_chat_id=7), "event.context.open_chat_id"),
    ],
)
def test_a_bad_card_press_is_refused_naming_its_part(feishu: FakeFeishu, spoil: Any, field: str) -> None:
    event = feishu.card_action_event(operator=OWNER, message_id="om_card1", chat_id=GROUP, value={"a": "x"})
    spoil(event)
    with pytest.raises(EventError) as refused:
        card_press_of(parse_envelope(payload(event)))
    assert refused.value.field == field


# --- a message from a chat's history ---------------------------------------------------------------------


def history_item(**changes: Any) -> dict[str, Any]:
    """One item of `GET /open-apis/im/v1/messages`, shaped as Feishu (and the fake) lists it: the sender's id
    flat with its type, the content under `body`, mentions with flat ids."""
    item: dict[str, Any] = {
        "message_id": "om_h1",
        "root_id": "",
        "parent_id": "",
        "thread_id": "",
        "msg_type": "text",
        "chat_id": GROUP,
        "create_time": "1767000000123",
        "update_time": "1767000000123",
        "deleted": False,
        "updated": False,
        "sender": {"id": OWNER, "id_type": "open_id", "sender_type": "user", "tenant_key": "tk_fake"},
        "body": {"content": json.dumps({"text": "@_user_1 @_user_2 看一下"}, ensure_ascii=False)},
        "mentions": [
            {"key": "@_user_1", "id": "ou_bot", "id_type": "open_id", "name": "Errand Bot"},
            {"key": "@_user_2", "id": ALICE, "id_type": "open_id", "name": "Alice"},
        ],
    }
    return item | changes


def test_a_history_item_is_read_with_its_flat_mentions() -> None:
    message = message_from_history(history_item(parent_id="om_h0", root_id="om_h0"), "group")
    assert (message.message_id, message.chat_id, message.chat_type) == ("om_h1", GROUP, "group")
    assert (message.sender, message.from_app, message.msg_type) == (OWNER, False, "text")
    assert message.create_time_ms == 1_767_000_000_123
    assert (message.parent_id, message.root_id, message.event_id) == ("om_h0", "om_h0", "")
    assert [(m.key, m.open_id, m.name) for m in message.mentions] == [
        ("@_user_1", "ou_bot", "Errand Bot"),
        ("@_user_2", ALICE, "Alice"),
    ]
    assert message.mentions_bot("ou_bot")
    assert flatten(message, "ou_bot").text == "@Alice 看一下"


def test_a_history_item_an_app_sent_is_from_an_app() -> None:
    ours = {"id": "cli_fake00000000001", "id_type": "app_id", "sender_type": "app", "tenant_key": "tk"}
    assert message_from_history(history_item(sender=ours), "p2p").from_app
    assert message_from_history(history_item(sender=ours | {"sender_type": "system"}), "p2p").from_app
    assert not message_from_history(history_item(), "p2p").from_app


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"sender": None}, "items[].sender"),
        ({"body": "hi"}, "items[].body"),
        ({"body": {"content": {"text": "hi"}}}, "items[].body.content"),
        ({"body": {"content": "hi"}}, "items[].body.content"),
        ({"message_id": ""}, "items[].message_id"),
        ({"message_id": "om_" + "a" * MAX_ID}, "items[].message_id"),
        ({"chat_id": None}, "items[].chat_id"),
        ({"msg_type": None}, "items[].msg_type"),
        ({"mentions": "@_user_1"}, "items[].mentions"),
        ({"create_time": "noon"}, "items[].create_time"),
    ],
)
def test_a_bad_history_item_is_refused_naming_its_part(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(EventError) as refused:
        message_from_history(history_item(**changes), "group")
    assert refused.value.field == field


# --- what the bot reads of a message ---------------------------------------------------------------------


def test_the_bots_mention_is_dropped_and_another_persons_becomes_their_name(feishu: FakeFeishu) -> None:
    bot = mention("@_user_1", open_id=feishu.bot_open_id, name=feishu.app_name)
    alice = mention("@_user_2", open_id=ALICE, name="Alice")
    words, items = said(
        feishu, feishu.bot_open_id, text="@_user_1 帮 @_user_2 查一下  报价", mentions=[bot, alice]
    )
    assert (words, items) == ("帮 @Alice 查一下 报价", [])
    # Mentioned last, as Feishu's clients put it when one types the @ at the end.
    words, _ = said(feishu, feishu.bot_open_id, text="查一下报价 @_user_1", mentions=[bot])
    assert words == "查一下报价"


def test_a_placeholder_without_its_mention_is_dropped_and_lines_are_kept(feishu: FakeFeishu) -> None:
    words, _ = said(feishu, feishu.bot_open_id, text="第一行 @_user_9\n  第二行  ")
    assert words == "第一行\n第二行"


def test_without_the_bots_open_id_every_mention_is_a_name(feishu: FakeFeishu) -> None:
    bot = mention("@_user_1", open_id=feishu.bot_open_id, name=feishu.app_name)
    words, _ = said(feishu, "", text="@_user_1 你好", mentions=[bot])
    assert words == f"@{feishu.app_name} 你好"


def _post_body() -> dict[str, Any]:
    return {
        "title": "周报",
        "content": [
            [
                {"tag": "at", "user_id": "@_user_1", "user_name": "Errand Bot"},
                {"tag": "text", "text": " 请看 "},
                {"tag": "a", "text": "这份文档", "href": "https://example.com/doc"},
                {"tag": "text", "text": ",问 "},
                {"tag": "at", "user_id": "@_user_2", "user_name": "Alice"},
            ],
            [{"tag": "img", "image_key": "img_v3_0001", "width": 300, "height": 200}],
            [{"tag": "a", "text": "https://example.com/x", "href": "https://example.com/x"}],
            [{"tag": "code_block", "language": "SHELL", "text": "ls -l"}],
            [{"tag": "emotion", "emoji_type": "SMILE"}, {"tag": "md", "text": "**完**"}],
        ],
    }


@pytest.mark.parametrize("localised", [False, True], ids=["plain", "zh_cn"])
def test_a_post_reads_as_its_title_and_lines_with_links_mentions_code_and_images(
    feishu: FakeFeishu, localised: bool
) -> None:
    content = {"zh_cn": _post_body()} if localised else _post_body()
    mentions = [
        mention("@_user_1", open_id=feishu.bot_open_id, name=feishu.app_name),
        mention("@_user_2", open_id=ALICE, name="Alice"),
    ]
    words, items = said(feishu, feishu.bot_open_id, msg_type="post", content=content, mentions=mentions)
    assert words.splitlines() == [
        "周报",
        "请看 这份文档 (https://example.com/doc),问 @Alice",
        "https://example.com/x",  # a bare link once, not "x (x)"
        "ls -l",
        "[SMILE]**完**",
    ]
    assert items == [{"kind": "image", "media": {"file_key": "img_v3_0001", "type": "image"}}]


def test_an_english_post_is_read_too(feishu: FakeFeishu) -> None:
    content = {"en_us": {"title": "", "content": [[{"tag": "text", "text": "see you"}]]}}
    assert said(feishu, feishu.bot_open_id, msg_type="post", content=content) == ("see you", [])


def test_a_code_block_in_a_post_keeps_its_indentation(feishu: FakeFeishu) -> None:
    code = "def price(n):\n    if n > 3:\n        return n * 2\n    return n"
    content = {"title": "", "content": [[{"tag": "code_block", "language": "PYTHON", "text": code}]]}
    words, _ = said(feishu, feishu.bot_open_id, msg_type="post", content=content)
    assert code in words


def test_a_code_block_after_words_starts_its_own_line(feishu: FakeFeishu) -> None:
    paragraph = [{"tag": "text", "text": "看看"}, {"tag": "code_block", "text": "x = 1"}]
    content = {"title": "", "content": [paragraph]}
    assert said(feishu, feishu.bot_open_id, msg_type="post", content=content)[0] == "看看\nx = 1"


def test_an_image_message_is_an_attachment_with_its_key(feishu: FakeFeishu) -> None:
    words, items = said(feishu, feishu.bot_open_id, msg_type="image", content={"image_key": "img_v3_0002"})
    assert (words, items) == ("", [{"kind": "image", "media": {"file_key": "img_v3_0002", "type": "image"}}])


@pytest.mark.parametrize("msg_type", ["file", "audio", "media"])
def test_a_file_audio_or_video_message_is_a_file_attachment_with_its_key(
    feishu: FakeFeishu, msg_type: str
) -> None:
    content = {"file_key": "file_v3_0003", "file_name": "报价.pdf"}
    words, items = said(feishu, feishu.bot_open_id, msg_type=msg_type, content=content)
    media = {"file_key": "file_v3_0003", "type": "file", "file_name": "报价.pdf"}
    assert (words, items) == ("", [{"kind": "file", "media": media}])
    _, items = said(feishu, feishu.bot_open_id, msg_type=msg_type, content={"file_key": "file_v3_0004"})
    assert items[0]["media"]["file_name"] == ""  # Feishu's voice messages carry no name


@pytest.mark.parametrize(
    ("msg_type", "content", "field"),
    [
        ("image", {}, "content.image_key"),
        ("image", {"image_key": ""}, "content.image_key"),
        ("file", {"file_name": "a.pdf"}, "content.file_key"),
        ("audio", {"file_key": 3}, "content.file_key"),
    ],
)
def test_an_attachment_without_its_key_is_refused(
    feishu: FakeFeishu, msg_type: str, content: dict[str, Any], field: str
) -> None:
    with pytest.raises(EventError) as refused:
        said(feishu, feishu.bot_open_id, msg_type=msg_type, content=content)
    assert refused.value.field == field


@pytest.mark.parametrize("msg_type", ["sticker", "share_chat", "interactive"])
def test_a_type_we_do_not_read_is_named_not_dropped(feishu: FakeFeishu, msg_type: str) -> None:
    words, items = said(feishu, feishu.bot_open_id, msg_type=msg_type, content={"file_key": "x"})
    assert (words, items) == (f"[{msg_type}]", [])

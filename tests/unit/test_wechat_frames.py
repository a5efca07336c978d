"""iLink frames are read field by field: what a user said, their token, what they quoted. A bad message is
refused naming the field while the rest of its batch is kept; sends are checked as the platform checks
them."""

from __future__ import annotations

from typing import Any

import pytest

from core.channels.wechat.frames import (
    MAX_TEXT,
    FrameError,
    dedupe_key,
    parse_message,
    parse_send,
    parse_updates,
    text_message,
)


def message(**fields: Any) -> dict[str, Any]:
    return {
        "seq": 12,
        "message_id": 7000000000000000123,
        "from_user_id": "u@im.wechat",
        "to_user_id": "bot@im.bot",
        "client_id": "wx-1",
        "create_time_ms": 1700000000000,
        "message_type": 1,
        "message_state": 2,
        "context_token": "ctx-1",
        "item_list": [{"type": 1, "text_item": {"text": "research Y"}}],
        **fields,
    }


def test_a_text_message_gives_its_words_token_and_exact_id() -> None:
    got = parse_message(message())
    assert (got.text, got.context_token, got.from_user, got.kind) == (
        "research Y",
        "ctx-1",
        "u@im.wechat",
        "user",
    )
    assert got.message_id == "7000000000000000123"  # a uint64 kept exact, as text
    assert got.quote is None


def test_a_voice_transcript_counts_as_words_and_media_items_keep_their_keys() -> None:
    got = parse_message(
        message(
            item_list=[
                {"type": 3, "voice_item": {"text": "call mum"}},
                {"type": 2, "image_item": {"media": {"encrypt_query_param": "q1", "aes_key": "a2V5"}}},
                {"type": 4, "file_item": {"file_name": "a.pdf", "media": {"encrypt_query_param": "q2"}}},
                {"type": 5, "video_item": {"media": {"encrypt_query_param": "q3", "aes_key": "a2V5"}}},
                {"type": 11, "tool_item": {}},
            ]
        )
    )
    assert got.text == "call mum"
    assert [item.kind for item in got.items] == ["voice", "image", "file", "video", "other"]
    image, file, video = got.items[1].media, got.items[2].media, got.items[3].media
    assert image is not None and (image.encrypted_query_param, image.aes_key) == ("q1", "a2V5")
    assert file is not None and file.file_name == "a.pdf"
    assert video is not None and video.encrypted_query_param == "q3"
    assert got.items[4].type_code == 11


@pytest.mark.parametrize(
    ("ref", "svr_id"),
    [
        ({"title": "Result", "svr_id": "900"}, "900"),
        (
            {"title": "Result", "message_item": {"msg_id": "901", "type": 1, "text_item": {"text": "old"}}},
            "901",
        ),
    ],
)
def test_a_quote_carries_the_quoted_messages_server_id(ref: dict[str, Any], svr_id: str) -> None:
    got = parse_message(message(item_list=[{"type": 1, "text_item": {"text": "and Z?"}, "ref_msg": ref}]))
    assert got.quote is not None and got.quote.svr_id == svr_id and got.quote.title == "Result"


def test_one_bad_message_is_refused_by_field_and_the_rest_of_the_batch_is_kept() -> None:
    updates = parse_updates(
        {
            "ret": 0,
            "msgs": [message(), {"message_id": 5, "item_list": []}, "junk", message(seq=13, message_id=124)],
            "get_updates_buf": "c4",
        }
    )
    assert [m.message_id for m in updates.messages] == ["7000000000000000123", "124"]
    assert [e.field for e in updates.refused] == ["msgs[1].from_user_id", "msgs[2]"]
    assert updates.cursor == "c4"


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"item_list": "text"}, "msgs[0].item_list"),
        ({"item_list": [{"type": "one"}]}, "msgs[0].item_list[0].type"),
        ({"item_list": [{"type": 1, "text_item": {"text": ["x"]}}]}, "msgs[0].item_list[0].text_item.text"),
        ({"context_token": {"a": 1}}, "msgs[0].context_token"),
        ({"seq": True}, "msgs[0].seq"),
    ],
)
def test_a_field_of_the_wrong_shape_is_named(bad: dict[str, Any], field: str) -> None:
    with pytest.raises(FrameError) as caught:
        parse_message(message(**bad))
    assert caught.value.field == field


def test_a_body_that_is_not_a_batch_is_refused() -> None:
    with pytest.raises(FrameError):
        parse_updates(["not", "an", "object"])
    with pytest.raises(FrameError):
        parse_updates({"msgs": {"a": 1}})


def test_a_redelivered_message_has_the_same_key_falling_back_from_id_to_client_id_seq_and_hash() -> None:
    full = parse_message(message())
    assert dedupe_key("acc", full) == dedupe_key("acc", parse_message(message()))
    assert dedupe_key("acc", full).endswith(":mid:7000000000000000123")
    assert dedupe_key("acc", parse_message(message(message_id=""))).endswith(":cid:wx-1")
    assert dedupe_key("acc", parse_message(message(message_id="", client_id=""))).endswith(":seq:12")
    bare = parse_message(message(message_id="", client_id="", seq=0))
    assert ":sha:" in dedupe_key("acc", bare)
    other_time = parse_message(message(message_id="", client_id="", seq=0, create_time_ms=1))
    assert dedupe_key("acc", bare) != dedupe_key("acc", other_time)


def test_what_we_send_is_what_the_platform_reads() -> None:
    body = {"msg": text_message("u@im.wechat", "c-1", "ctx-1", "done"), "base_info": {}}
    sent = parse_send(body)
    assert (sent.to_user, sent.client_id, sent.context_token, sent.text) == (
        "u@im.wechat",
        "c-1",
        "ctx-1",
        "done",
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"context_token": ""}, "msg.context_token"),
        ({"client_id": ""}, "msg.client_id"),
        ({"message_type": 1}, "msg.message_type"),
        ({"item_list": []}, "msg.item_list"),
        (
            {"item_list": [{"type": 1, "text_item": {"text": "x" * (MAX_TEXT + 1)}}]},
            "msg.item_list[0].text_item.text",
        ),
    ],
)
def test_a_send_the_platform_would_refuse_is_refused_by_field(change: dict[str, Any], field: str) -> None:
    msg = {**text_message("u", "c", "ctx", "hi"), **change}
    with pytest.raises(FrameError) as caught:
        parse_send({"msg": msg})
    assert caught.value.field == field


def test_the_wechat_urls_can_point_at_a_server_on_this_machine() -> None:
    from core.channels.wechat.ilink import DEFAULT_BASE_URL, DEFAULT_CDN_URL, client_version, configured_urls

    assert configured_urls({}) == (DEFAULT_BASE_URL, DEFAULT_CDN_URL)
    local = {
        "ERRAND_WECHAT_BASE_URL": "http://127.0.0.1:9/",
        "ERRAND_WECHAT_CDN_URL": "http://127.0.0.1:9/c2c",
    }
    assert configured_urls(local) == ("http://127.0.0.1:9", "http://127.0.0.1:9/c2c")
    assert client_version("2.4.8") == str(2 << 16 | 4 << 8 | 8)

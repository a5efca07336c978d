"""The fake Telegram Bot API, driven by the real python-telegram-bot 22.8: its Bot methods, its request
encoding (form fields, nested values as JSON strings) and its mapping of error answers to exceptions."""

from __future__ import annotations

import asyncio
import datetime as dtm
import json
from collections.abc import AsyncIterator

import httpx
import pytest
from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, ReplyParameters
from telegram.error import (
    BadRequest,
    Conflict,
    EndPointNotFound,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TimedOut,
)

from tests.fakes.fake_telegram import CallbackAnswer, FakeTelegram

TOKEN = "123456789:AAH-fake-token-0000000000000000000"
USER = 42
DM = 42
GROUP = -1001234567890
KEYBOARD = InlineKeyboardMarkup([[InlineKeyboardButton("OK", callback_data="approve:7")]])


class Clock:
    def __init__(self, t: float = 1_700_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def tg(clock: Clock) -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(token=TOKEN, now=clock) as server:
        yield server


@pytest.fixture
async def bot(tg: FakeTelegram) -> AsyncIterator[Bot]:
    async with Bot(TOKEN, base_url=tg.base_url, base_file_url=tg.file_base_url) as b:
        yield b


async def test_initialize_calls_get_me(tg: FakeTelegram, bot: Bot) -> None:
    assert tg.calls == ["getMe"]
    assert (bot.id, bot.username, bot.first_name) == (123456789, "errand_test_bot", "Errand")
    assert await bot.delete_webhook() is True
    assert tg.calls == ["getMe", "deleteWebhook"]


async def test_wrong_token_is_invalid_token(tg: FakeTelegram) -> None:
    with pytest.raises(InvalidToken, match="rejected"):
        async with Bot("123456789:wrong", base_url=tg.base_url):
            pass
    assert tg.calls == []  # refused before any method ran
    async with httpx.AsyncClient() as client:
        res = await client.post(f"{tg.base_url}123456789:wrong/getMe")
    assert (res.status_code, res.json()) == (
        401,
        {"ok": False, "error_code": 401, "description": "Unauthorized"},
    )


async def test_unknown_method_is_404(tg: FakeTelegram, bot: Bot) -> None:
    async with httpx.AsyncClient() as client:
        res = await client.post(f"{tg.base_url}{TOKEN}/sendTelepathy")
    assert (res.status_code, res.json()) == (
        404,
        {"ok": False, "error_code": 404, "description": "Not Found"},
    )
    with pytest.raises(EndPointNotFound):
        await bot.do_api_request("sendTelepathy", api_kwargs={"chat_id": DM})


async def test_offsets_confirm_updates(tg: FakeTelegram, bot: Bot, clock: Clock) -> None:
    first = tg.user_says(chat_id=DM, user_id=USER, text="hi")
    tg.user_says(chat_id=DM, user_id=USER, text="there")
    updates = await bot.get_updates(timeout=0)
    assert [u.update_id for u in updates] == [1000, 1001]
    m = updates[0].message
    assert m is not None and m.text == "hi" and m.message_id == first["message_id"] == 1
    assert m.from_user is not None and m.from_user.id == USER and m.chat.type == "private"
    assert m.date == dtm.datetime.fromtimestamp(clock.t, dtm.UTC)
    again = await bot.get_updates(offset=1001, timeout=0)  # confirms 1000
    assert [u.update_id for u in again] == [1001]
    assert tg.last_offset == 1001
    assert await bot.get_updates(offset=1002, timeout=0) == ()
    assert await bot.get_updates(timeout=0) == ()  # confirmed updates never come back
    assert tg.pending_updates == []
    assert [c["offset"] for c in tg.get_updates_calls] == [None, 1001, 1002, None]


async def test_held_poll_returns_when_a_message_is_queued(tg: FakeTelegram, bot: Bot) -> None:
    poll = asyncio.create_task(bot.get_updates(timeout=30))
    await tg.wait_polling(1)
    assert not poll.done()
    tg.user_says(chat_id=GROUP, user_id=USER, text="@errand_test_bot hello", chat_type="supergroup")
    async with asyncio.timeout(5):
        updates = await poll
    assert len(updates) == 1 and updates[0].message is not None
    assert updates[0].message.chat.type == "supergroup" and updates[0].message.chat.id == GROUP
    assert tg.get_updates_calls[-1]["timeout"] == 30


async def test_poll_that_finds_nothing_answers_empty_after_timeout(tg: FakeTelegram, bot: Bot) -> None:
    assert await bot.get_updates(timeout=dtm.timedelta(milliseconds=50)) == ()
    assert tg.polls_held == 1 and tg.get_updates_calls[0]["timeout"] == 0.05


async def test_a_second_poll_ends_the_held_one_with_conflict(tg: FakeTelegram, bot: Bot) -> None:
    older = asyncio.create_task(bot.get_updates(timeout=30))
    await tg.wait_polling(1)
    # a second instance (one Bot holds one getUpdates connection: a second poll would time out in its pool)
    async with Bot(TOKEN, base_url=tg.base_url) as other:
        newer = asyncio.create_task(other.get_updates(timeout=30))
        with pytest.raises(Conflict, match="terminated by other getUpdates request"):
            await older
        await tg.wait_polling(2)
        tg.user_says(chat_id=DM, user_id=USER, text="hi")
        assert len(await newer) == 1


async def test_allowed_updates_are_remembered(tg: FakeTelegram, bot: Bot) -> None:
    sent = await bot.send_message(chat_id=tg.add_chat(DM)["id"], text="pick", reply_markup=KEYBOARD)
    tg.press(chat_id=DM, user_id=USER, message_id=sent.message_id, data="approve:7")
    tg.user_says(chat_id=DM, user_id=USER, text="hi")
    updates = await bot.get_updates(timeout=0, allowed_updates=["message"])
    assert [u.message.text for u in updates if u.message] == ["hi"] and len(updates) == 1
    assert tg.get_updates_calls[-1]["allowed_updates"] == ["message"]
    tg.press(chat_id=DM, user_id=USER, message_id=sent.message_id, data="approve:7")
    assert await bot.get_updates(offset=updates[-1].update_id + 1, timeout=0) == ()  # still only messages


async def test_send_reply_with_keyboard(tg: FakeTelegram, bot: Bot) -> None:
    said = tg.user_says(chat_id=DM, user_id=USER, text="do it")
    message = await bot.send_message(
        chat_id=DM,
        text="*Working*",
        parse_mode="MarkdownV2",
        reply_parameters=ReplyParameters(message_id=said["message_id"]),
        reply_markup=KEYBOARD,
    )
    assert message.message_id == 2 and message.text == "*Working*"
    assert message.from_user is not None and message.from_user.id == bot.id and message.from_user.is_bot
    assert message.reply_to_message is not None and message.reply_to_message.text == "do it"
    assert message.reply_markup == KEYBOARD
    [sent] = await tg.wait_for_sent(1)
    assert (sent.chat_id, sent.message_id, sent.text, sent.reply_to, sent.parse_mode) == (
        DM,
        2,
        "*Working*",
        said["message_id"],
        "MarkdownV2",
    )
    assert sent.reply_markup == {"inline_keyboard": [[{"text": "OK", "callback_data": "approve:7"}]]}
    older = await bot.send_message(chat_id=DM, text="again", reply_to_message_id=said["message_id"])
    assert older.reply_to_message is not None and tg.sent[-1].reply_to == said["message_id"]
    # the user replies to the bot: reply_to_message.from is the bot
    reply = tg.user_says(chat_id=DM, user_id=USER, text="yes", reply_to=message.message_id)
    assert reply["reply_to_message"]["from"]["id"] == bot.id
    [update] = await bot.get_updates(offset=1001, timeout=0)
    assert update.message is not None and update.message.reply_to_message is not None
    assert update.message.reply_to_message.message_id == message.message_id


async def test_bad_requests(tg: FakeTelegram, bot: Bot) -> None:
    tg.add_chat(DM)
    with pytest.raises(BadRequest, match=r"(?i)message is too long"):
        await bot.send_message(chat_id=DM, text="x" * 4097)
    await bot.send_message(chat_id=DM, text="x" * 4096)
    too_long = InlineKeyboardMarkup([[InlineKeyboardButton("OK", callback_data="d" * 65)]])
    with pytest.raises(BadRequest, match=r"(?i)button_data_invalid"):
        await bot.send_message(chat_id=DM, text="pick", reply_markup=too_long)
    with pytest.raises(BadRequest, match=r"(?i)chat not found"):
        await bot.send_message(chat_id=777, text="hello")
    with pytest.raises(BadRequest, match=r"(?i)message to be replied not found"):
        await bot.send_message(chat_id=DM, text="hello", reply_parameters=ReplyParameters(message_id=99))
    with pytest.raises(BadRequest, match=r"(?i)message text is empty"):
        await bot.send_message(chat_id=DM, text="")
    assert len(tg.sent) == 1


async def test_rate_limit_raises_retry_after(
    tg: FakeTelegram, bot: Bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")  # retry_after as a timedelta, without PTB's deprecation
    tg.add_chat(DM)
    tg.rate_limit(1, retry_after=7)
    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(chat_id=DM, text="hello")
    assert caught.value.retry_after == dtm.timedelta(seconds=7)
    assert "Flood control exceeded" in str(caught.value)  # PTB words its own message
    assert tg.sent == []
    await bot.send_message(chat_id=DM, text="hello")
    assert len(tg.sent) == 1


async def test_failed_and_lost_sends(tg: FakeTelegram, bot: Bot) -> None:
    tg.add_chat(DM)
    tg.fail_sends(1)
    with pytest.raises(NetworkError, match="Internal Server Error") as failed:
        await bot.send_message(chat_id=DM, text="one")
    assert not isinstance(failed.value, BadRequest | TimedOut)
    assert tg.sent == []
    tg.lose_answer(1)
    with pytest.raises(NetworkError, match="RemoteProtocolError") as lost:
        await bot.send_message(chat_id=DM, text="two")
    assert not isinstance(lost.value, TimedOut)
    assert [s.text for s in tg.sent] == ["two"]  # it did arrive
    await bot.send_message(chat_id=DM, text="three")
    assert [s.message_id for s in tg.sent] == [1, 2]


async def test_poll_faults(tg: FakeTelegram, bot: Bot) -> None:
    tg.fail_polls(1)
    tg.conflict(1)
    with pytest.raises(NetworkError, match="Bad Gateway"):
        await bot.get_updates(timeout=0)
    with pytest.raises(Conflict, match="terminated by other getUpdates request"):
        await bot.get_updates(timeout=0)
    tg.user_says(chat_id=DM, user_id=USER, text="hi")
    assert len(await bot.get_updates(timeout=0)) == 1


async def test_callback_query_answer_and_edit(tg: FakeTelegram, bot: Bot) -> None:
    tg.add_chat(DM)
    message = await bot.send_message(chat_id=DM, text="approve?", reply_markup=KEYBOARD)
    query_id = tg.press(chat_id=DM, user_id=USER, message_id=message.message_id, data="approve:7")
    [update] = await bot.get_updates(timeout=0)
    query = update.callback_query
    assert query is not None and query.id == query_id and query.data == "approve:7"
    assert query.from_user.id == USER and query.message is not None
    assert query.message.message_id == message.message_id
    assert await bot.answer_callback_query(query_id, text="Approved") is True
    assert await tg.wait_for_callback_answers(1) == [CallbackAnswer(query_id, "Approved", False)]
    with pytest.raises(BadRequest, match=r"(?i)query id is invalid"):
        await bot.answer_callback_query(query_id)
    with pytest.raises(BadRequest, match=r"(?i)query id is invalid"):
        await bot.answer_callback_query("not-issued")
    edited = await bot.edit_message_reply_markup(chat_id=DM, message_id=message.message_id, reply_markup=None)
    assert not isinstance(edited, bool) and edited.reply_markup is None
    [edit] = await tg.wait_for_edits(1)
    assert (edit.method, edit.message_id, edit.reply_markup) == (
        "editMessageReplyMarkup",
        message.message_id,
        None,
    )
    with pytest.raises(BadRequest, match=r"(?i)message is not modified"):
        await bot.edit_message_reply_markup(chat_id=DM, message_id=message.message_id)
    done = await bot.edit_message_text("approved", chat_id=DM, message_id=message.message_id)
    assert not isinstance(done, bool) and done.text == "approved" and done.edit_date is not None
    assert tg.message(DM, message.message_id)["text"] == "approved"
    said = tg.user_says(chat_id=DM, user_id=USER, text="mine")
    with pytest.raises(BadRequest, match=r"(?i)message can.t be edited"):
        await bot.edit_message_text("no", chat_id=DM, message_id=said["message_id"])


async def test_photo_and_document_download(tg: FakeTelegram, bot: Bot) -> None:
    tg.put_file("ph-1", b"\xff\xd8jpeg", "photos/file_1.jpg")
    tg.put_file("doc-1", b"%PDF-1.4", "documents/report 1.pdf")
    tg.user_says(chat_id=DM, user_id=USER, text="look", photo="ph-1")
    tg.user_says(chat_id=DM, user_id=USER, document=("doc-1", "report.pdf"))
    photo_update, doc_update = await bot.get_updates(timeout=0)
    assert photo_update.message is not None and photo_update.message.caption == "look"
    file = await bot.get_file(photo_update.message.photo[-1].file_id)
    assert file.file_size == 6
    assert await file.download_as_bytearray() == bytearray(b"\xff\xd8jpeg")
    assert doc_update.message is not None and doc_update.message.document is not None
    assert doc_update.message.document.file_name == "report.pdf"
    doc = await doc_update.message.document.get_file()
    assert await doc.download_as_bytearray() == bytearray(b"%PDF-1.4")
    with pytest.raises(BadRequest, match=r"(?i)invalid file_id"):
        await bot.get_file("nope")


@pytest.mark.filterwarnings("ignore:Please use 'Bot.getUpdates'")
async def test_raw_updates_through_do_api_request(tg: FakeTelegram, bot: Bot) -> None:
    tg.queue_raw({"message": {"message_id": 1}})  # no chat, no date: PTB's own parsing would choke
    tg.user_says(chat_id=DM, user_id=USER, text="hi", entities=[{"type": "bold", "offset": 0, "length": 2}])
    raw = await bot.do_api_request("getUpdates", api_kwargs={"offset": 0, "timeout": 0, "limit": 1})
    assert raw == [{"update_id": 1000, "message": {"message_id": 1}}]
    raw = await bot.do_api_request("getUpdates", api_kwargs={"offset": 1001, "timeout": 0})
    assert isinstance(raw, list) and raw[0]["message"]["entities"][0]["type"] == "bold"
    topic = tg.user_says(chat_id=GROUP, user_id=USER, text="t", chat_type="supergroup", message_thread_id=9)
    assert topic["message_thread_id"] == 9 and topic["chat"]["type"] == "supergroup"
    answer = await bot.send_message(chat_id=GROUP, text="in topic", message_thread_id=9)
    assert answer.message_thread_id == 9 and tg.sent[-1].message_thread_id == 9


async def test_json_and_multipart_bodies(tg: FakeTelegram) -> None:
    tg.add_chat(DM)
    markup = {"inline_keyboard": [[{"text": "OK", "callback_data": "a"}]]}
    async with httpx.AsyncClient() as client:
        res = await client.post(
            f"{tg.base_url}{TOKEN}/sendMessage", json={"chat_id": DM, "text": "json", "reply_markup": markup}
        )
        assert res.json()["ok"] is True and res.json()["result"]["reply_markup"] == markup
        res = await client.post(
            f"{tg.base_url}{TOKEN}/sendMessage",
            data={"chat_id": str(DM), "text": "multi", "reply_markup": json.dumps(markup)},
            files={"unused": ("a.bin", b"\x00")},
        )
        assert res.json()["result"]["text"] == "multi"
        res = await client.get(f"{tg.base_url}{TOKEN}/getMe")
        assert res.json()["result"]["username"] == "errand_test_bot"
    assert [s.text for s in tg.sent] == ["json", "multi"]
    assert tg.sent[1].reply_markup == markup

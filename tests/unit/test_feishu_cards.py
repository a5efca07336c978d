"""The cards a person gets on Feishu: what they read, which buttons they see, what pressing one asks for,
how a card looks once it was answered, and that nothing we send is too big or malformed."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from core.channels.feishu.cards import (
    ANSWER_MAX_CHARS,
    CARD_MAX_BYTES,
    ID_MAX_CHARS,
    TEXT_MAX_BYTES,
    Card,
    CardAction,
    CardActionError,
    approval_card,
    card_content,
    check_card,
    chosen_card,
    digest_card,
    failure_card,
    gone_card,
    parse_action,
    question_card,
    result_card,
    text_content,
)
from core.errors import InvalidInputError
from core.translations import Language

# --- what a person sees -----------------------------------------------------------------------------------


def heading(card: Card) -> str:
    return str(card["header"]["title"]["content"])


def colour(card: Card) -> str:
    return str(card["header"]["template"])


def blocks(card: Card) -> list[str]:
    return [e["text"]["content"] for e in card["elements"] if e["tag"] == "div"]


def notes(card: Card) -> list[str]:
    return [part["content"] for e in card["elements"] if e["tag"] == "note" for part in e["elements"]]


def buttons(card: Card) -> list[dict[str, Any]]:
    return [b for e in card["elements"] if e["tag"] == "action" for b in e["actions"]]


def labels(card: Card) -> list[str]:
    return [b["text"]["content"] for b in buttons(card)]


def press(card: Card, label: str) -> CardAction:
    """What Feishu sends back when the person presses the button labelled `label`: its value, through JSON."""
    (button,) = [b for b in buttons(card) if b["text"]["content"] == label]
    return parse_action(json.loads(json.dumps(button["value"])))


def every_card(lang: Language) -> list[Card]:
    asked = question_card(
        title="GPU 价格调研",
        question="比较包月价还是按小时价?",
        item_id="ap_1",
        options=["包月价", "按小时价"],
        default="包月价",
        lang=lang,
    )
    return [
        result_card(title="GPU 价格调研", summary="A100 包月最便宜的是 X 云", task_id="t_1", lang=lang),
        asked,
        question_card(
            title="登录", question="账号用哪个?", item_id="ap_2", options=[], default=None, lang=lang
        ),
        approval_card(title="清理旧构建", what="rm -rf build/", item_id="ap_3", lang=lang),
        failure_card(title="GPU 价格调研", reason="价格页要登录", task_id="t_1", item_id="at_1", lang=lang),
        digest_card(lines=["X 降价到 ¥199", "issue #12 有新回复"], lang=lang),
        digest_card(lines=["GPU 价格调研好了"], lang=lang, away=True),
        chosen_card(asked, chosen="包月价", by="小明", lang=lang),
        gone_card(asked, lang=lang),
    ]


def test_a_result_shows_its_summary_as_written_and_offers_details_and_revising() -> None:
    summary = "Cheapest: **X cloud** at ¥7,800 [see](http://x) <at id=all></at> _a_b_"
    card = result_card(title="GPU 价格调研", summary=summary, task_id="t_1", lang="zh")
    assert heading(card) == "GPU 价格调研"
    assert colour(card) == "green"
    assert blocks(card) == [summary]
    # Shown as plain text, so the markup characters stay characters instead of bold, links or @all.
    assert all(e["text"]["tag"] == "plain_text" for e in card["elements"] if e["tag"] == "div")
    assert notes(card) == ["回复这条消息可以继续问。"]
    assert labels(card) == ["详情", "继续改"]
    assert press(card, "详情") == CardAction("detail", task_id="t_1")
    assert press(card, "继续改") == CardAction("revise", task_id="t_1")


def test_a_result_in_english() -> None:
    card = result_card(title="GPU prices", summary="X cloud is cheapest.", task_id="t_1", lang="en")
    assert notes(card) == ["Reply to this message to ask more."]
    assert labels(card) == ["Details", "Revise"]
    assert press(card, "Revise") == CardAction("revise", task_id="t_1")


@pytest.mark.parametrize(
    ("lang", "head", "default_note"),
    [
        ("zh", "❓「GPU 价格调研」想问你", "不回复就按「包月价」做"),
        ("en", "❓ “GPU 价格调研” asks you", "If you don't answer, I'll go with “包月价”."),
    ],
)
def test_a_question_has_a_button_per_option_and_says_what_happens_without_an_answer(
    lang: Language, head: str, default_note: str
) -> None:
    card = question_card(
        title="GPU 价格调研",
        question="比较包月价还是按小时价?",
        item_id="ap_1",
        options=["包月价", "按小时价"],
        default="包月价",
        lang=lang,
    )
    assert heading(card) == head
    assert blocks(card) == ["比较包月价还是按小时价?"]
    assert notes(card) == [default_note]
    assert labels(card) == ["包月价", "按小时价"]
    assert press(card, "按小时价") == CardAction("answer", item_id="ap_1", answer="按小时价")
    # The option taken without an answer is the one that stands out.
    assert [b["type"] for b in buttons(card)] == ["primary", "default"]


def test_a_question_without_a_default_says_nothing_about_one() -> None:
    card = question_card(
        title="T", question="A or B?", item_id="ap_1", options=["A", "B"], default=None, lang="en"
    )
    assert notes(card) == []
    assert labels(card) == ["A", "B"]
    assert {b["type"] for b in buttons(card)} == {"default"}


@pytest.mark.parametrize(
    ("lang", "hint"),
    [("zh", "回复这条消息,写下你的回答。"), ("en", "Reply to this message with your answer.")],
)
def test_a_question_without_options_asks_for_a_reply_in_words(lang: Language, hint: str) -> None:
    card = question_card(
        title="GPU 价格调研", question="账号用哪个?", item_id="ap_1", options=[], default=None, lang=lang
    )
    assert buttons(card) == []
    assert notes(card) == [hint]


@pytest.mark.parametrize(
    ("lang", "head", "approve", "deny"),
    [
        ("zh", "「清理旧构建」需要你批准", "批准一次", "拒绝"),
        ("en", "“清理旧构建” needs your approval", "Approve once", "Deny"),
    ],
)
def test_an_approval_names_the_task_and_the_step_and_offers_approve_once_or_deny(
    lang: Language, head: str, approve: str, deny: str
) -> None:
    card = approval_card(title="清理旧构建", what="rm -rf build/", item_id="ap_9", lang=lang)
    assert heading(card) == head
    assert blocks(card) == ["rm -rf build/"]
    assert labels(card) == [approve, deny]
    assert [b["type"] for b in buttons(card)] == ["primary", "danger"]
    assert press(card, approve) == CardAction("approve", item_id="ap_9")
    assert press(card, deny) == CardAction("deny", item_id="ap_9")


@pytest.mark.parametrize(
    ("lang", "head", "retry", "stop"),
    [
        ("zh", "⚠️「GPU 价格调研」没做完", "重试", "停止"),
        ("en", "⚠️ “GPU 价格调研” did not finish", "Retry", "Stop"),
    ],
)
def test_a_failure_is_red_says_why_and_offers_retry_or_stop(
    lang: Language, head: str, retry: str, stop: str
) -> None:
    card = failure_card(
        title="GPU 价格调研", reason="价格页要登录,我进不去。", task_id="t_1", item_id="at_1", lang=lang
    )
    assert heading(card) == head
    assert colour(card) == "red"
    assert blocks(card) == ["价格页要登录,我进不去。"]
    assert labels(card) == [retry, stop]
    assert press(card, retry) == CardAction("retry", item_id="at_1", task_id="t_1")
    assert press(card, stop) == CardAction("stop", task_id="t_1")


@pytest.mark.parametrize(
    ("lang", "head", "away"), [("zh", "2 条提醒", "你不在时"), ("en", "2 updates", "While you were away")]
)
def test_a_digest_is_one_card_with_a_line_per_item_and_no_buttons(
    lang: Language, head: str, away: str
) -> None:
    lines = ["X 降价到 ¥199", "仓库 Y 的 issue #12\n有新回复"]
    card = digest_card(lines=lines, lang=lang)
    assert heading(card) == head
    assert blocks(card) == ["· X 降价到 ¥199", "· 仓库 Y 的 issue #12 有新回复"]
    assert buttons(card) == []
    assert heading(digest_card(lines=lines, lang=lang, away=True)) == away


def test_a_digest_of_one_reads_in_the_singular_and_of_nothing_is_refused() -> None:
    assert heading(digest_card(lines=["X 降价了"], lang="en")) == "1 update"
    with pytest.raises(ValueError, match="at least one line"):
        digest_card(lines=[" ", ""], lang="zh")


def test_a_card_without_a_title_still_has_a_heading() -> None:
    card = result_card(title="  \n ", summary="done", task_id="t_1", lang="zh")
    assert heading(card) == "任务"
    check_card(card)


# --- after a press ----------------------------------------------------------------------------------------


def test_once_answered_the_card_shows_the_choice_and_who_made_it_and_no_buttons() -> None:
    asked = question_card(
        title="GPU 价格调研",
        question="包月价还是按小时价?",
        item_id="ap_1",
        options=["包月价", "按小时价"],
        default="包月价",
        lang="zh",
    )
    before = copy.deepcopy(asked)
    done = chosen_card(asked, chosen="按小时价", by="小明", lang="zh")
    assert buttons(done) == []
    assert notes(done)[-1] == "已选择「按小时价」 · 小明"
    # The rest of the card is what everyone saw before: the question and what the default was.
    assert heading(done) == heading(asked)
    assert blocks(done) == ["包月价还是按小时价?"]
    assert notes(done)[0] == "不回复就按「包月价」做"
    assert done["config"]["update_multi"] is True
    assert asked == before  # the card that was sent is left as it was
    check_card(done)


def test_an_answered_card_in_english_and_without_a_name() -> None:
    asked = approval_card(title="Clean up", what="rm -rf build/", item_id="ap_3", lang="en")
    assert notes(chosen_card(asked, chosen="Approve once", by="Ann", lang="en")) == [
        "Chose “Approve once” · Ann"
    ]
    assert notes(chosen_card(asked, chosen="Approve once", by=" ", lang="en")) == ["Chose “Approve once”"]


def test_several_rows_of_buttons_give_way_to_one_line() -> None:
    card = result_card(title="T", summary="S", task_id="t_1", lang="zh")
    card["elements"].append(copy.deepcopy(card["elements"][-1]))
    done = chosen_card(card, chosen="详情", by="小明", lang="zh")
    assert buttons(done) == []
    assert notes(done) == ["回复这条消息可以继续问。", "已选择「详情」 · 小明"]


@pytest.mark.parametrize(("lang", "words"), [("zh", "这件事已经结束了"), ("en", "This is already over.")])
def test_a_card_whose_matter_is_over_has_no_buttons_and_says_so(lang: Language, words: str) -> None:
    card = failure_card(title="T", reason="R", task_id="t_1", item_id="at_1", lang=lang)
    gone = gone_card(card, lang=lang)
    assert buttons(gone) == []
    assert notes(gone) == [words]
    assert blocks(gone) == ["R"]
    assert labels(card)  # the original still has its buttons


# --- button values ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_button_on_every_card_comes_back_as_what_it_offers(lang: Language) -> None:
    for card in every_card(lang):
        for button in buttons(card):
            action = parse_action(json.loads(json.dumps(button["value"])))
            assert action.value() == button["value"]


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (["answer"], "value"),
        ('{"a":"stop"}', "value"),
        ({}, "a"),
        ({"a": "delete", "task": "t_1"}, "a"),
        ({"a": 3}, "a"),
        ({"a": "approve"}, "item"),
        ({"a": "retry", "item": "at_1"}, "task"),
        ({"a": "stop", "task": 7}, "task"),
        ({"a": "stop", "task": ""}, "task"),
        ({"a": "stop", "task": "t" * (ID_MAX_CHARS + 1)}, "task"),
        ({"a": "deny", "item": "ap_1\nap_2"}, "item"),
        ({"a": "answer", "item": "ap_1"}, "answer"),
        ({"a": "answer", "item": "ap_1", "answer": "x" * (ANSWER_MAX_CHARS + 1)}, "answer"),
        ({"a": "detail", "task": "t_1", "item": "ap_1"}, "item"),
    ],
)
def test_a_value_our_buttons_never_carry_is_refused_naming_what_is_wrong(value: object, field: str) -> None:
    with pytest.raises(CardActionError) as refused:
        parse_action(value)
    assert refused.value.field == field
    assert isinstance(refused.value, InvalidInputError)
    assert refused.value.message.startswith(f"{field}: ")


def test_the_longest_ids_and_answers_we_allow_are_taken() -> None:
    value = {"a": "answer", "item": "i" * ID_MAX_CHARS, "answer": "好" * ANSWER_MAX_CHARS}
    assert parse_action(value) == CardAction(
        "answer", item_id="i" * ID_MAX_CHARS, answer="好" * ANSWER_MAX_CHARS
    )


def test_a_card_that_could_never_be_answered_is_refused_when_built() -> None:
    with pytest.raises(CardActionError, match="task: is empty"):
        result_card(title="T", summary="S", task_id="", lang="zh")
    with pytest.raises(CardActionError, match="answer: is"):
        question_card(
            title="T", question="Q", item_id="ap_1", options=["x" * 501, "y"], default=None, lang="en"
        )


# --- the shape rule ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_card_we_build_passes_the_shape_rule(lang: Language) -> None:
    for card in every_card(lang):
        check_card(card)
        check_card(json.loads(card_content(card)))


def broken(change: str) -> object:
    card = approval_card(title="T", what="W", item_id="ap_1", lang="en")
    if change == "not a card":
        return [card]
    if change == "v2":
        return {"schema": "2.0", "body": {"elements": []}}
    if change == "not shared":
        del card["config"]["update_multi"]
    elif change == "no title":
        del card["header"]["title"]
    elif change == "empty title":
        card["header"]["title"]["content"] = " "
    elif change == "no elements":
        card["elements"] = []
    elif change == "unknown tag":
        card["elements"][0]["tag"] = "iframe"
    elif change == "button without label":
        del card["elements"][1]["actions"][0]["text"]
    elif change == "button without value":
        del card["elements"][1]["actions"][1]["value"]
    elif change == "forged value":
        card["elements"][1]["actions"][1]["value"] = {"a": "delete", "item": "ap_1"}
    elif change == "odd button type":
        card["elements"][1]["actions"][0]["type"] = "laser"
    elif change == "body not text":
        card["elements"][0]["text"] = "W"
    return card


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("not a card", "card: must be an object, got list"),
        ("v2", "card: is a JSON 2.0 card"),
        ("not shared", "config.update_multi: must be true"),
        ("no title", "header.title: must be an object"),
        ("empty title", "header.title.content: is empty"),
        ("no elements", "elements: must be a non-empty list"),
        ("unknown tag", "elements[0].tag: 'iframe' is not one of"),
        ("button without label", "elements[1].actions[0].text: must be an object"),
        ("button without value", "elements[1].actions[1].value: is missing"),
        ("forged value", "elements[1].actions[1].value: a: must be one of"),
        ("odd button type", "elements[1].actions[0].type: 'laser'"),
        ("body not text", "elements[0].text: must be an object, got str"),
    ],
)
def test_the_shape_rule_refuses_a_broken_card_and_says_where(change: str, says: str) -> None:
    with pytest.raises(ValueError) as refused:
        check_card(broken(change))
    assert str(refused.value).startswith(says)
    with pytest.raises(ValueError):
        card_content(broken(change))  # type: ignore[arg-type]


# --- what is sent -----------------------------------------------------------------------------------------


def test_the_content_is_the_card_as_json() -> None:
    card = result_card(title="GPU 价格调研", summary="X 云最便宜", task_id="t_1", lang="zh")
    content = card_content(card)
    assert json.loads(content) == card
    assert "X 云最便宜" in content  # sent as characters, not \u escapes that would triple its size


def request_body_bytes(content: str) -> int:
    """The size of a send request carrying `content`, as the SDK writes it."""
    body = {"receive_id": "oc_" + "0" * 32, "msg_type": "interactive", "content": content, "uuid": "u" * 50}
    return len(json.dumps(body, ensure_ascii=False).encode("utf-8"))


@pytest.mark.parametrize("unit", ["字", "a", '"', "行\n"])
def test_a_card_too_big_to_send_has_its_longest_text_cut_to_fit(unit: str) -> None:
    summary = unit * 40_000
    card = result_card(title="GPU 价格调研", summary=summary, task_id="t_1", lang="zh")
    before = copy.deepcopy(card)
    content = card_content(card)
    assert request_body_bytes(content) <= CARD_MAX_BYTES
    sent = json.loads(content)
    (cut,) = blocks(sent)
    assert cut.endswith("…")
    assert summary.startswith(cut[:-1].rstrip())
    assert len(cut) > 1_000  # cut to what fits, not to nothing
    # Everything else the person reads and presses is untouched.
    assert heading(sent) == "GPU 价格调研"
    assert notes(sent) == ["回复这条消息可以继续问。"]
    assert [b["value"] for b in buttons(sent)] == [b["value"] for b in buttons(card)]
    assert card == before


def test_a_card_whose_buttons_alone_are_too_big_is_refused() -> None:
    options = [f"{n} " + "选" * 480 for n in range(30)]
    card = question_card(title="T", question="Q", item_id="ap_1", options=options, default=None, lang="zh")
    with pytest.raises(ValueError, match="even with every text cut"):
        card_content(card)


def test_a_text_message_is_json_and_cut_to_fit() -> None:
    assert json.loads(text_content('你好 "quoted"\nnext')) == {"text": '你好 "quoted"\nnext'}
    long = "字" * 60_000
    content = text_content(long)
    sent = json.loads(content)["text"]
    assert sent.endswith("…")
    assert long.startswith(sent[:-1])
    assert len(json.dumps({"content": content}, ensure_ascii=False).encode("utf-8")) <= TEXT_MAX_BYTES

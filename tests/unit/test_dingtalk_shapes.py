"""How a DingTalk send is shaped (docs/channels.md#dingtalk-messages): Markdown only where there is Markdown,
a card's idempotency key stable per delivery, our words known again when quoted, and the webhook of the
person's latest message used only while it has time left."""

from __future__ import annotations

import json

import pytest

from core.channels.dingtalk import cards
from core.channels.dingtalk.messages import quote_ref
from core.channels.dingtalk.sender import WEBHOOK_MARGIN_MS, DingTalkSender, card_biz_id, robot_message
from core.clock import FakeClock
from core.store.channels import PeerRecord


@pytest.mark.parametrize(
    "words",
    [
        "# 结果\n三家里 A 最便宜",
        "要点:\n- 一\n- 二",
        "**A** 最便宜",
        "看 [报告](https://example.com/r)",
        "1. 先做",
    ],
)
def test_words_with_markdown_go_as_markdown_titled_by_their_first_line(words: str) -> None:
    key, param = robot_message(words)
    assert key == "sampleMarkdown" and param["text"] == words
    assert 0 < len(param["title"]) <= 20 and not param["title"].startswith(("#", "*", "-"))


@pytest.mark.parametrize("words", ["你好,我在。", "价格是 3*4=12 元", "a - b", "2026.12.03 到了"])
def test_plain_words_go_as_text(words: str) -> None:
    assert robot_message(words) == ("sampleText", {"content": words})


def test_a_card_key_is_the_same_for_the_same_deliveries_and_fits_dingtalk() -> None:
    assert card_biz_id("d1+d2") == card_biz_id("d1+d2") != card_biz_id("d1+d3")
    assert len(card_biz_id("x" * 500)) == 32


def test_our_words_are_known_again_whatever_the_whitespace_of_the_quote() -> None:
    assert quote_ref("Y 调研好了\n引用这条消息可以继续问。") == quote_ref(
        "Y 调研好了 引用这条消息可以继续问。"
    )
    assert quote_ref("a") != quote_ref("b")


def test_a_settled_card_keeps_its_words_loses_its_buttons_and_passes_the_shape_rule() -> None:
    asked = cards.card("GPU", "包月价还是按小时价?", [("包月价", "q:a1:0"), ("按小时价", "q:a1:1")])
    cards.check_card(cards.card_data(asked))
    done = cards.settled(asked, "已选择「按小时价」")
    cards.check_card(cards.card_data(done))
    assert "包月价还是按小时价?" in str(done) and "已选择「按小时价」" in str(done)
    assert not [c for c in done["contents"] if c.get("type") == "action"]


def _peer(until_ms: int) -> PeerRecord:
    token = json.dumps({"url": "http://127.0.0.1:9/robot/sendBySession?session=s", "until_ms": until_ms})
    return PeerRecord("ch_1", "manager4242", token, 0.0, "c_1")


def test_a_session_webhook_is_used_only_while_it_has_more_than_a_minute_left() -> None:
    clock = FakeClock()
    now_ms = int(clock.time() * 1000)
    sender = DingTalkSender(None, clock, None, pending=None)  # type: ignore[arg-type]
    assert sender.webhook_of(_peer(now_ms + WEBHOOK_MARGIN_MS + 1000)) is not None
    assert sender.webhook_of(_peer(now_ms + WEBHOOK_MARGIN_MS - 1000)) is None
    assert sender.webhook_of(PeerRecord("ch_1", "p", "not json", 0.0, "c_1")) is None

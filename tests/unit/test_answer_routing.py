"""Answer routing on chat channels (docs/push-rules.md#answer-routing): a message answers a task question only
by a quote, its code, or a bare option number or label while the question is the bot's latest message;
anything else is chat."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest

from core.attention.routing import (
    AnswerError,
    Incoming,
    OpenQuestion,
    Route,
    match_option,
    new_code,
    route,
    validate_answer,
)

PRICES = OpenQuestion(
    question_id="q_prices",
    task_id="t_gpu",
    code="4821",
    options=("包月价", "按小时价"),
    pushed_message_ref="msg-100",
    is_latest_bot_message=True,
    allows_free_text=True,
)
ACCOUNT = OpenQuestion(
    question_id="q_account",
    task_id="t_login",
    code="1357",
    options=(),
    pushed_message_ref="msg-090",
    is_latest_bot_message=False,
    allows_free_text=True,
)
FORMAT = OpenQuestion(
    question_id="q_format",
    task_id="t_report",
    code="2468",
    options=("PDF", "Word", "Markdown"),
    pushed_message_ref="msg-080",
    is_latest_bot_message=False,
    allows_free_text=False,
)


def said(text: str, quoted: str | None = None, *questions: OpenQuestion) -> Route:
    return route(Incoming(text, quoted), questions or (PRICES, ACCOUNT, FORMAT))


def answer(question: OpenQuestion, text: str) -> Route:
    return Route.to_question(question.question_id, text)


CHAT = Route.chat()


# --- quotes ---------------------------------------------------------------------------------------------


def test_a_quote_routes_to_the_quoted_question_even_when_it_is_not_the_latest() -> None:
    assert said("用我工作的那个账号", "msg-090") == answer(ACCOUNT, "用我工作的那个账号")


def test_a_quote_with_an_option_number_gives_the_option_label() -> None:
    assert said("3", "msg-080") == answer(FORMAT, "Markdown")
    assert said(" word ", "msg-080") == answer(FORMAT, "Word")


def test_a_quote_keeps_free_text_whole_and_trimmed() -> None:
    assert said("  都比较一下,包月优先  ", "msg-100") == answer(PRICES, "都比较一下,包月优先")


def test_a_quote_that_also_starts_with_the_questions_own_code_drops_the_code() -> None:
    assert said("4821 按小时价", "msg-100") == answer(PRICES, "按小时价")


def test_a_quote_with_another_questions_code_is_answered_whole_to_the_quoted_question() -> None:
    assert said("1357 工作账号", "msg-100") == answer(PRICES, "1357 工作账号")


def test_an_empty_quote_answers_nothing() -> None:
    assert said("   ", "msg-100") == CHAT


def test_a_quote_of_another_message_makes_a_bare_number_or_label_chat() -> None:
    # quoting a task's result and saying "2" is about that result, not the latest question
    assert said("2", "msg-result-7") == CHAT
    assert said("按小时价", "msg-result-7") == CHAT


def test_a_code_still_answers_under_a_quote_of_another_message() -> None:
    assert said("4821 包月", "msg-result-7") == answer(PRICES, "包月")


def test_an_unpushed_question_is_never_matched_by_an_empty_quote_ref() -> None:
    waiting = OpenQuestion("q_wait", "t_w", "5555", ("a", "b"), "", False, True)
    assert route(Incoming("a", ""), [waiting]) == CHAT


# --- codes ----------------------------------------------------------------------------------------------


def test_a_leading_code_answers_with_the_text_after_it() -> None:
    assert said("4821 包月") == answer(PRICES, "包月")


@pytest.mark.parametrize(
    "text",
    ["4821包月", "4821:包月", "4821:包月", "4821,包月", "  4821  包月  ", "４８２１ 包月", "4821\u3000包月"],
)
def test_a_code_with_any_separator_or_full_width_digits(text: str) -> None:
    assert said(text) == answer(PRICES, "包月")


def test_a_code_for_a_question_that_is_not_the_latest() -> None:
    assert said("1357 用工作账号") == answer(ACCOUNT, "用工作账号")


def test_a_code_followed_by_an_option_number_or_label_gives_the_label() -> None:
    assert said("2468 2") == answer(FORMAT, "Word")
    assert said("2468 markdown") == answer(FORMAT, "Markdown")


def test_a_code_alone_answers_nothing() -> None:
    assert said("4821") == CHAT


def test_four_digits_that_are_no_open_questions_code_are_chat() -> None:
    assert said("2024 年的报告呢?") == CHAT


def test_more_or_fewer_than_four_digits_are_not_a_code() -> None:
    assert said("48211 包月") == CHAT
    assert said("482 包月") == CHAT


def test_a_code_in_the_middle_of_a_message_is_not_a_code() -> None:
    assert said("我想要 4821 包月") == CHAT


def test_a_code_shared_by_two_questions_is_ambiguous_and_chat() -> None:
    twin = OpenQuestion("q_twin", "t_twin", "4821", ("x", "y"), "msg-200", False, True)
    assert route(Incoming("4821 x"), [PRICES, twin]) == CHAT


# --- bare numbers and labels ----------------------------------------------------------------------------


def test_a_bare_number_while_the_question_is_latest_is_that_option() -> None:
    assert said("2") == answer(PRICES, "按小时价")
    assert said("1") == answer(PRICES, "包月价")


def test_a_bare_number_while_the_question_is_not_latest_is_chat() -> None:
    not_latest = OpenQuestion("q_prices", "t_gpu", "4821", ("包月价", "按小时价"), "msg-100", False, True)
    assert route(Incoming("2"), [not_latest]) == CHAT


def test_a_label_while_the_question_is_latest_is_that_option() -> None:
    assert said("按小时价") == answer(PRICES, "按小时价")


def test_a_label_of_a_question_that_is_not_latest_is_chat() -> None:
    assert said("Markdown") == CHAT


def test_labels_match_case_insensitively_trimmed_and_full_width() -> None:
    latest = OpenQuestion("q_f", "t_f", "2468", ("PDF", "Word"), "msg-1", True, False)
    for text in ("pdf", "  PDF ", "Ｐｄｆ", "pdf。", "PDF!"):
        assert route(Incoming(text), [latest]) == Route.to_question("q_f", "PDF"), text


@pytest.mark.parametrize("text", ["２", " 2 ", "2。", "2.", "2!"])
def test_full_width_and_punctuated_numbers(text: str) -> None:
    assert said(text) == answer(PRICES, "按小时价")


@pytest.mark.parametrize("text", ["0", "3", "12", "-1", "2.5"])
def test_a_number_out_of_range_is_chat(text: str) -> None:
    assert said(text) == CHAT


def test_ordinary_text_is_chat() -> None:
    for text in ("今天天气怎么样?", "按小时价是多少来着,顺便帮我查下汇率", "好的", "", "   "):
        assert said(text) == CHAT, text


def test_no_open_questions_means_chat() -> None:
    assert route(Incoming("2"), []) == CHAT
    assert route(Incoming("4821 包月", "msg-100"), []) == CHAT


def test_two_open_questions_only_the_latest_takes_a_bare_answer() -> None:
    older = OpenQuestion("q_old", "t_old", "1111", ("是", "否"), "msg-1", False, True)
    newer = OpenQuestion("q_new", "t_new", "2222", ("红", "蓝", "绿"), "msg-2", True, True)
    questions = [older, newer]
    assert route(Incoming("2"), questions) == Route.to_question("q_new", "蓝")
    assert route(Incoming("3"), questions) == Route.to_question("q_new", "绿")
    assert route(Incoming("是"), questions) == CHAT  # the older one's label, but it is not the latest
    assert route(Incoming("1111 是"), questions) == Route.to_question("q_old", "是")
    assert route(Incoming("否", "msg-1"), questions) == Route.to_question("q_old", "否")


def test_two_questions_both_claiming_latest_are_ambiguous_for_bare_answers() -> None:
    a = OpenQuestion("q_a", "t_a", "1111", ("是", "否"), "msg-1", True, True)
    b = OpenQuestion("q_b", "t_b", "2222", ("是", "否"), "msg-2", True, True)
    assert route(Incoming("1"), [a, b]) == CHAT
    assert route(Incoming("2222 1"), [a, b]) == Route.to_question("q_b", "是")


def test_a_latest_free_text_question_takes_no_bare_text() -> None:
    free = OpenQuestion("q_free", "t_free", "3333", (), "msg-3", True, True)
    assert route(Incoming("1"), [free]) == CHAT
    assert route(Incoming("工作账号"), [free]) == CHAT


def test_an_exact_label_wins_over_a_number() -> None:
    numeric = OpenQuestion("q_n", "t_n", "4444", ("10", "2"), "msg-4", True, True)
    assert route(Incoming("2"), [numeric]) == Route.to_question("q_n", "2")  # the label "2", not option 2
    assert route(Incoming("1"), [numeric]) == Route.to_question("q_n", "10")


# --- types ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["482", "48210", "48a1", "４８２１", ""])
def test_a_question_code_must_be_four_ascii_digits(code: str) -> None:
    with pytest.raises(ValueError, match="4 ASCII digits"):
        OpenQuestion("q", "t", code, (), "m", False, True)


def test_route_helpers() -> None:
    assert Route("chat", None, "") == CHAT
    assert not CHAT.is_answer
    assert answer(PRICES, "包月价").is_answer


def test_match_option_directly() -> None:
    assert match_option("２", ("a", "b")) == "b"
    assert match_option("B", ("a", "b")) == "b"
    assert match_option("c", ("a", "b")) is None
    assert match_option("", ("a", "b")) is None
    assert match_option("1", ()) is None


# --- validate_answer ------------------------------------------------------------------------------------


def test_validate_an_option_by_label_or_number() -> None:
    options = ("包月价", "按小时价")
    assert validate_answer("按小时价", options, allows_free_text=False) == "按小时价"
    assert validate_answer(" 1 ", options, allows_free_text=False) == "包月价"
    assert validate_answer("２", options, allows_free_text=False) == "按小时价"


def test_validate_normalizes_case_to_the_option_label() -> None:
    assert validate_answer("word", ("PDF", "Word"), allows_free_text=True) == "Word"


def test_validate_refuses_an_answer_that_is_not_an_option_without_free_text() -> None:
    with pytest.raises(AnswerError) as info:
        validate_answer("都行", ("包月价", "按小时价"), allows_free_text=False)
    message = str(info.value)
    assert "'都行' is not one of the options" in message
    assert "1. 包月价" in message and "2. 按小时价" in message
    assert isinstance(info.value, ValueError)


def test_validate_refuses_a_number_out_of_range() -> None:
    with pytest.raises(AnswerError, match="not one of the options"):
        validate_answer("3", ("包月价", "按小时价"), allows_free_text=False)


def test_validate_takes_free_text_when_allowed() -> None:
    assert validate_answer("  都比较一下  ", ("包月价", "按小时价"), allows_free_text=True) == "都比较一下"


def test_validate_a_question_without_options_takes_any_text() -> None:
    assert validate_answer("工作账号", (), allows_free_text=False) == "工作账号"


@pytest.mark.parametrize("text", ["", "   ", "\n"])
def test_validate_refuses_an_empty_answer(text: str) -> None:
    with pytest.raises(AnswerError, match="empty"):
        validate_answer(text, ("a", "b"), allows_free_text=True)


def test_validate_shortens_a_long_answer_in_its_message() -> None:
    with pytest.raises(AnswerError) as info:
        validate_answer("x" * 500, ("a", "b"), allows_free_text=False)
    assert len(str(info.value)) < 200


# --- new_code -------------------------------------------------------------------------------------------


def scripted(*values: int) -> tuple[list[tuple[int, int]], Callable[[int, int], int]]:
    calls: list[tuple[int, int]] = []
    it: Iterator[int] = iter(values)

    def rand(low: int, high: int) -> int:
        calls.append((low, high))
        return next(it)

    return calls, rand


def test_new_code_is_four_digits_from_the_injected_rand() -> None:
    calls, rand = scripted(4821)
    assert new_code(set(), rand) == "4821"
    assert calls == [(1000, 9999)]


def test_new_code_skips_codes_in_use() -> None:
    _, rand = scripted(4821, 4821, 1357)
    assert new_code({"4821"}, rand) == "1357"


def test_new_code_ends_even_when_rand_keeps_colliding() -> None:
    assert new_code({"4821", "1000"}, lambda _a, _b: 4821) == "1001"


def test_new_code_refuses_a_rand_outside_the_range() -> None:
    with pytest.raises(ValueError, match="outside the range"):
        new_code(set(), lambda _a, _b: 42)


def test_new_code_when_every_code_is_taken() -> None:
    every = {str(n) for n in range(1000, 10000)}
    with pytest.raises(ValueError, match="in use"):
        new_code(every, lambda _a, _b: 1000)


def test_new_codes_are_unique_among_open_questions_with_a_real_rng() -> None:
    rng = random.Random(7)
    codes: set[str] = set()
    for _ in range(500):
        code = new_code(codes, rng.randint)
        assert len(code) == 4 and code.isdigit() and code[0] != "0"
        assert code not in codes
        codes.add(code)
    OpenQuestion("q", "t", code, (), "m", False, True)  # a code it makes is a valid question code

"""The needs-you list (docs/attention.md): items per kind, their actions, the order, and the API shape."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from core.attention.items import (
    ACTIONS,
    ACTIONS_BY_KIND,
    DISMISSABLE_KINDS,
    KINDS,
    NEVER_PUSHED,
    AttentionItem,
    action_label,
    approval_item,
    budget_item,
    can,
    channel_login_item,
    check_answer,
    failed_task_item,
    group_admission_item,
    inbound_failed_item,
    item_id,
    lang_of,
    memory_full_item,
    observe_ready_item,
    ordered,
    question_item,
    reserve_item,
    rule_failing_item,
    rule_paused_item,
    split_item_id,
    stuck_turn_item,
    undelivered_item,
    unsure_delivery_item,
)
from core.attention.routing import AnswerError

NOW = 1_800_000_000.0


def one_of_each(since: float = NOW, lang: str = "zh") -> dict[str, AttentionItem]:
    """One item of every kind, all at the same moment, keyed by kind."""
    items = [
        question_item(
            "q_1",
            "t_gpu",
            "b_tt",
            "GPU 价格调研",
            "比较包月价还是按小时价?",
            ("包月价", "按小时价"),
            "包月价",
            since,
            "c_1",
            lang=lang,
        ),
        approval_item("a_1", "b_tt", "rm -rf build/", since, "t_clean", "清理旧构建", "c_1", lang=lang),
        failed_task_item(
            "t_fail", "b_tt", "竞品周报", "X 云的价格页要登录,我进不去。", since, "c_1", lang=lang
        ),
        undelivered_item("c_wx", "b_ss", "微信", "window_closed", since, lang=lang),
        budget_item("t_budget", "b_tt", "季度报告", 1.0, 1.0, since, "c_1", lang=lang),
        rule_failing_item("r_fail", "b_dd", "每日 issue 巡检", 2, "GitHub 返回 500", since, lang=lang),
        rule_paused_item(
            "r_paused",
            "b_dd",
            "每日 issue 巡检",
            "failures",
            "GitHub 返回 401:令牌可能过期了",
            since,
            lang=lang,
        ),
        stuck_turn_item("c_stuck", "b_tt", "和天天的对话", 12, since, lang=lang),
        channel_login_item("ch_wx", "b_yy", "微信", since, lang=lang),
        observe_ready_item(
            "r_obs", "b_tt", "看 X 价格", 3, "本会发送:“X 降价了,现在 ¥199”", since, lang=lang
        ),
        reserve_item("b_or", "OpenRouter 限额 $10.00,剩余 $1.50,低于 20%", since, lang=lang),
        unsure_delivery_item("t_1:result", "c_wx", "b_yy", "微信", "报告写好了", since, lang=lang),
        inbound_failed_item(7, "b_yy", "微信", "帮我看看", since, lang=lang),
        group_admission_item("ch_dt", "cidAbC+/xyz==", "b_dd", "哒哒", "测试群", since, lang=lang),
        memory_full_item("b_tt", "天天", since, lang=lang),
    ]
    return {item.kind: item for item in items}


# --- ordering -------------------------------------------------------------------------------------------


def test_the_needs_you_order_across_all_kinds() -> None:
    items = list(one_of_each().values())
    random.Random(3).shuffle(items)
    kinds = [item.kind for item in ordered(items)]
    # questions and approvals, failures, deliveries, the system (logins, stuck turns, budget), observe
    groups = [
        {"question", "approval", "group_admission"},
        {"task_failed", "rule_paused", "rule_failing"},
        {"undelivered", "unsure_delivery", "inbound_failed"},
        {"channel_login", "stuck_turn", "task_budget", "reserve_low", "memory_full"},
        {"observe_ready"},
    ]
    position = 0
    for group in groups:
        assert set(kinds[position : position + len(group)]) == group, kinds
        position += len(group)
    assert position == len(KINDS)


def test_groups_come_before_age_an_old_failure_follows_a_new_question() -> None:
    old_failure = failed_task_item("t_old", "b", "旧任务", "坏了", NOW - 86_400)
    new_question = question_item("q_new", "t_new", "b", "新任务", "选哪个?", ("A", "B"), None, NOW)
    old_observe = observe_ready_item("r_obs", "b", "规则", 3, "本会保持安静", NOW - 7 * 86_400)
    new_login = channel_login_item("ch", "b", "飞书", NOW)
    assert ordered([old_observe, new_login, old_failure, new_question]) == [
        new_question,
        old_failure,
        new_login,
        old_observe,
    ]


def test_observe_ready_is_last_even_when_oldest() -> None:
    items = list(one_of_each().values())
    items = [
        replace(i, since=NOW + 100) if i.kind != "observe_ready" else replace(i, since=0.0) for i in items
    ]
    assert ordered(items)[-1].kind == "observe_ready"


def test_within_a_group_oldest_first_then_by_id() -> None:
    q_late = question_item("q_b", "t1", "b", "T1", "?", (), None, NOW + 60)
    a_early = approval_item("a_z", "b", "rm -rf x", NOW)
    q_tie = question_item("q_a", "t2", "b", "T2", "?", (), None, NOW)
    assert [i.id for i in ordered([q_late, a_early, q_tie])] == [
        "approval:a_z",
        "question:q_a",
        "question:q_b",
    ]
    # the same list whatever order it was gathered in
    assert ordered([q_tie, a_early, q_late]) == ordered([a_early, q_late, q_tie])


def test_an_empty_list_stays_empty() -> None:
    assert ordered([]) == []
    assert ordered(iter(())) == []


def test_ordered_returns_a_new_list_and_leaves_the_input_alone() -> None:
    items = list(one_of_each().values())
    before = list(items)
    result = ordered(items)
    assert items == before and result is not items


# --- actions --------------------------------------------------------------------------------------------


def test_every_kind_has_actions_from_the_p3_list() -> None:
    assert set(ACTIONS_BY_KIND) == set(KINDS)
    for kind, actions in ACTIONS_BY_KIND.items():
        assert actions and set(actions) <= set(ACTIONS), kind
        assert ("dismiss" in actions) == (kind in DISMISSABLE_KINDS), kind


def test_what_still_asks_is_not_dismissable() -> None:
    # docs/attention.md#what-appears: questions, approvals, budget, failed task, paused rule, expired login,
    # undelivered
    for kind in (
        "question",
        "approval",
        "task_budget",
        "task_failed",
        "rule_paused",
        "channel_login",
        "undelivered",
        "observe_ready",
    ):
        assert kind not in DISMISSABLE_KINDS


def test_builders_give_each_kind_its_actions() -> None:
    items = one_of_each()
    assert items["question"].actions == ("answer",)
    assert items["approval"].actions == ("approve", "deny")
    assert items["task_failed"].actions == ("retry", "open")
    assert items["undelivered"].actions == ("open",)
    assert items["task_budget"].actions == ("answer",)
    assert items["rule_paused"].actions == ("retry", "open")
    assert items["rule_failing"].actions == ("open", "dismiss")
    assert items["observe_ready"].actions == ("answer",)
    assert items["stuck_turn"].actions == ("open", "dismiss")
    assert items["channel_login"].actions == ("open",)
    for item in items.values():
        assert item.actions == ACTIONS_BY_KIND[item.kind]
        assert item.dismissable == (item.kind in DISMISSABLE_KINDS)


def test_can_allows_the_kinds_own_actions() -> None:
    items = one_of_each()
    assert can(items["question"], "answer")
    assert can(items["approval"], "approve") and can(items["approval"], "deny")
    assert can(items["task_failed"], "retry") and can(items["task_failed"], "open")
    assert can(items["rule_failing"], "dismiss")
    assert can(items["stuck_turn"], "dismiss")


def test_can_refuses_dismiss_on_kinds_that_still_ask() -> None:
    for kind, item in one_of_each().items():
        if kind not in DISMISSABLE_KINDS:
            assert not can(item, "dismiss"), kind


def test_can_refuses_actions_a_kind_does_not_offer() -> None:
    items = one_of_each()
    assert not can(items["question"], "approve")
    assert not can(items["approval"], "answer")
    assert not can(items["approval"], "retry")
    assert not can(items["task_failed"], "answer")
    assert not can(items["undelivered"], "retry")
    assert not can(items["observe_ready"], "open")
    assert not can(items["channel_login"], "deny")
    assert not can(items["question"], "delete")  # not an action at all
    assert not can(items["question"], "")


def test_can_refuses_an_action_the_item_itself_left_out() -> None:
    quiet = replace(one_of_each()["task_failed"], actions=("open",))
    assert can(quiet, "open") and not can(quiet, "retry")
    undismissable = replace(one_of_each()["stuck_turn"], actions=("open",), dismissable=False)
    assert not can(undismissable, "dismiss")


def test_an_item_rejects_actions_its_kind_does_not_offer() -> None:
    question = one_of_each()["question"]
    with pytest.raises(ValueError, match="offers only answer"):
        replace(question, actions=("answer", "approve"))


def test_an_item_rejects_dismiss_on_a_kind_that_still_asks() -> None:
    failed = one_of_each()["task_failed"]
    with pytest.raises(ValueError, match="can't be dismissed"):
        replace(failed, dismissable=True)
    with pytest.raises(ValueError, match="dismiss"):
        replace(failed, actions=("retry", "open", "dismiss"))


def test_an_item_rejects_unknown_kinds_severities_and_a_default_outside_its_options() -> None:
    question = one_of_each()["question"]
    with pytest.raises(ValueError, match="unknown attention kind"):
        replace(question, kind="cleanup")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="severity"):
        replace(question, severity="fatal")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not one of the options"):
        replace(question, default="按年价")
    with pytest.raises(ValueError, match="not one of the options"):
        question_item("q", "t", "b", "T", "?", ("A", "B"), "C", NOW)
    with pytest.raises(ValueError, match="answer"):
        replace(one_of_each()["approval"], options=("yes", "no"))


# --- push, severity -------------------------------------------------------------------------------------


def test_observe_ready_is_never_pushed_and_info() -> None:
    observe = one_of_each()["observe_ready"]
    assert observe.pushed is False
    assert observe.severity == "info"
    # not even when a caller asks for it
    assert (
        AttentionItem(
            id="observe_ready:r",
            kind="observe_ready",
            bot_id="b",
            subject="s",
            line="l",
            actions=("answer",),
            since=NOW,
            severity="info",
            pushed=True,
        ).pushed
        is False
    )


def test_what_needs_the_person_may_be_pushed() -> None:
    for kind, item in one_of_each().items():
        assert item.pushed == (kind not in NEVER_PUSHED), kind
    assert one_of_each()["question"].pushed
    assert one_of_each()["rule_paused"].pushed
    assert not one_of_each()["rule_failing"].pushed  # two failures, still running: shown, not pushed


def test_severities_follow_the_mock_up_dots() -> None:
    items = one_of_each()
    assert items["task_failed"].severity == "error"
    assert items["rule_paused"].severity == "error"
    assert items["channel_login"].severity == "error"
    assert items["question"].severity == "warn"
    assert items["approval"].severity == "warn"
    assert items["undelivered"].severity == "warn"


# --- to_json --------------------------------------------------------------------------------------------


def test_to_json_has_the_p3_shape() -> None:
    data = one_of_each()["approval"].to_json()
    assert data == {
        "id": "approval:a_1",
        "kind": "approval",
        "botId": "b_tt",
        "subject": "清理旧构建 · 等你批准",
        "line": "rm -rf build/",
        "actions": ["approve", "deny"],
        "since": NOW,
        "severity": "warn",
        "taskId": "t_clean",
        "conversationId": "c_1",
    }
    json.dumps(data)  # JSON-ready as is


def test_to_json_carries_options_and_default_for_a_question() -> None:
    data = one_of_each()["question"].to_json()
    assert data["options"] == ["包月价", "按小时价"]
    assert data["default"] == "包月价"
    assert data["taskId"] == "t_gpu"
    assert "ruleId" not in data


def test_to_json_leaves_unset_optional_keys_out() -> None:
    data = one_of_each()["channel_login"].to_json()
    assert set(data) == {"id", "kind", "botId", "subject", "line", "actions", "since", "severity"}
    rule = one_of_each()["rule_paused"].to_json()
    assert rule["ruleId"] == "r_paused" and "taskId" not in rule and "options" not in rule


def test_every_kind_serializes() -> None:
    for lang in ("zh", "en"):
        for item in one_of_each(lang=lang).values():
            data = item.to_json()
            assert data["kind"] == item.kind and data["id"] == item.id
            assert data["subject"]
            json.dumps(data, ensure_ascii=False)


# --- words ----------------------------------------------------------------------------------------------


def test_a_question_with_a_default_shows_the_default_line_in_chinese() -> None:
    item = question_item(
        "q_1", "t_gpu", "b", "GPU 价格调研", "比较包月价还是按小时价?", ("包月价", "按小时价"), "包月价", NOW
    )
    assert item.subject == "GPU 价格调研 · 等你回答"
    assert item.line == "比较包月价还是按小时价?\n不回复就按包月价做"
    assert item.default == "包月价"


def test_a_question_with_a_default_shows_the_default_line_in_english() -> None:
    item = question_item(
        "q_1",
        "t_gpu",
        "b",
        "GPU prices",
        "Monthly or hourly prices?",
        ("monthly", "hourly"),
        "monthly",
        NOW,
        lang="en",
    )
    assert item.subject == "GPU prices · waiting for your answer"
    assert item.line == "Monthly or hourly prices?\nIf you don't answer: monthly"


def test_a_question_without_a_default_is_just_the_question() -> None:
    item = question_item("q_2", "t", "b", "季度报告", " 用哪个账号登录? ", (), None, NOW)
    assert item.line == "用哪个账号登录?"
    assert item.default is None and item.options == ()
    assert "default" not in item.to_json() and "options" not in item.to_json()


def test_a_free_text_question_may_have_a_default() -> None:
    item = question_item("q_3", "t", "b", "T", "报告用什么标题?", (), "季度总结", NOW, lang="en")
    assert item.line.endswith("If you don't answer: 季度总结")


def test_locales_read_as_their_language() -> None:
    assert lang_of("zh_CN") == "zh" and lang_of("zh-Hans") == "zh" and lang_of("ZH") == "zh"
    assert lang_of("en_US") == "en" and lang_of("fr") == "en"
    item = question_item("q", "t", "b", "T", "?", (), None, NOW, lang="zh_CN")
    assert item.subject == "T · 等你回答"


def test_subjects_and_lines_per_kind_in_chinese() -> None:
    items = one_of_each()
    assert items["task_failed"].subject == "竞品周报 · 失败"
    assert items["task_failed"].line == "X 云的价格页要登录,我进不去。"
    assert items["undelivered"].subject == "1 条结果等你在微信里发条消息才能送达"
    assert "24 小时内没在微信里发消息" in items["undelivered"].line
    assert items["task_budget"].subject == "季度报告 · 预算用完"
    assert items["task_budget"].line == "已用 约 $1.00 / $1.00。继续还是停止?"
    assert items["task_budget"].options == ("继续", "停止")
    assert items["rule_paused"].subject == "规则「每日 issue 巡检」连续失败 3 次,已暂停"
    assert items["rule_paused"].line == "GitHub 返回 401:令牌可能过期了"
    assert items["rule_failing"].subject == "规则「每日 issue 巡检」连续失败 2 次"
    assert items["observe_ready"].subject == "规则「看 X 价格」已观察 3 次,需要你来决定是否执行"
    assert items["observe_ready"].options == ("改为执行", "继续观察")
    assert items["stuck_turn"].line == "已经 12 分钟没有进展"
    assert items["channel_login"].subject == "微信登录已过期"


def test_subjects_and_lines_per_kind_in_english() -> None:
    items = one_of_each(lang="en")
    assert items["approval"].subject == "清理旧构建 · waiting for your approval"
    assert items["task_budget"].options == ("Continue", "Stop")
    assert items["task_budget"].line == "Spent about $1.00 of $1.00. Continue or stop?"
    assert items["observe_ready"].options == ("Act from now on", "Keep observing")
    assert items["channel_login"].subject == "微信 login expired"
    assert items["undelivered"].subject == "1 result(s) wait for you to message it on 微信"


def test_an_approval_without_a_task_is_titled_by_its_label() -> None:
    assert approval_item("a", "b", "rm -rf ~/tmp", NOW).subject == "等你批准"
    assert approval_item("a", "b", "rm -rf ~/tmp", NOW, lang="en").subject == "Waiting for your approval"


def test_a_failed_task_without_a_reason_still_says_something() -> None:
    assert failed_task_item("t", "b", "T", "  ", NOW).line == "没有给出原因"


def test_undelivered_lines_per_reason() -> None:
    quota = undelivered_item("c", "b", "微信", "quota", NOW, count=2)
    assert quota.subject == "2 条结果等你在微信里发条消息才能送达"
    assert "用完了" in quota.line
    failed = undelivered_item("c", "b", "Feishu", "failed", NOW, error="HTTP 503", lang="en")
    assert failed.line == "Sending failed 3 times: HTTP 503"
    assert undelivered_item("c", "b", "飞书", "failed", NOW).line == "发送失败了 3 次"
    with pytest.raises(ValueError, match="at least one"):
        undelivered_item("c", "b", "微信", "quota", NOW, count=0)


def test_a_rule_paused_at_its_budget() -> None:
    item = rule_paused_item("r", "b", "看 X 价格", "budget", "本月已用 约 $3.00 / $3.00", NOW)
    assert item.subject == "规则「看 X 价格」本月预算用完,已暂停"
    assert item.actions == ("retry", "open") and item.severity == "error"


def test_action_labels_in_both_languages() -> None:
    items = one_of_each()
    assert action_label(items["approval"], "approve") == "批准一次"
    assert action_label(items["approval"], "deny", "en") == "Deny"
    assert action_label(items["undelivered"], "open") == "在这里查看"
    assert action_label(items["rule_paused"], "open") == "打开规则"
    assert action_label(items["rule_paused"], "retry", "en") == "Retry"
    assert action_label(items["channel_login"], "open", "en") == "Sign in again"
    assert action_label(items["question"], "answer") == "回复…"
    assert action_label(items["stuck_turn"], "dismiss") == "知道了"
    for lang in ("zh", "en"):
        for item in items.values():
            for action in item.actions:
                assert action_label(item, action, lang)


# --- ids and answers ------------------------------------------------------------------------------------


def test_item_ids_are_stable_and_split_back() -> None:
    first = one_of_each()
    again = one_of_each(since=NOW + 3600, lang="en")
    for kind in KINDS:
        assert first[kind].id == again[kind].id  # the same cause keeps its id across derivations
        assert split_item_id(first[kind].id)[0] == kind
    assert item_id("question", "q_1") == "question:q_1"
    assert split_item_id("undelivered:c:wx") == ("undelivered", "c:wx")


@pytest.mark.parametrize("value", ["", "question", "question:", "cleanup:t_1", ":x"])
def test_split_item_id_refuses_what_it_did_not_make(value: str) -> None:
    with pytest.raises(ValueError, match="not an attention item id"):
        split_item_id(value)


def test_item_id_needs_a_key() -> None:
    with pytest.raises(ValueError):
        item_id("question", "")


def test_ids_are_unique_across_kinds_for_the_same_cause() -> None:
    failed = failed_task_item("t_1", "b", "T", "坏了", NOW)
    budget = budget_item("t_1", "b", "T", 1.0, 1.0, NOW)
    assert failed.id != budget.id


def test_check_answer_takes_an_option_number_or_label_or_free_text_for_a_question() -> None:
    question = one_of_each()["question"]
    assert check_answer(question, "2") == "按小时价"
    assert check_answer(question, "包月价") == "包月价"
    assert check_answer(question, "都比较一下") == "都比较一下"  # the mock-up's [回复…]


def test_check_answer_takes_options_or_words_for_budget_and_only_options_for_observe() -> None:
    items = one_of_each()
    assert check_answer(items["task_budget"], "1") == "继续"
    # an amount (docs/cost.md#the-budget-question)
    assert check_answer(items["task_budget"], "再给 3 美元") == "再给 3 美元"
    assert check_answer(items["observe_ready"], "继续观察") == "继续观察"
    with pytest.raises(AnswerError, match="not one of the options"):
        check_answer(items["observe_ready"], "3")


def test_check_answer_refuses_kinds_that_take_no_answer() -> None:
    with pytest.raises(AnswerError, match="takes no answer"):
        check_answer(one_of_each()["approval"], "y")

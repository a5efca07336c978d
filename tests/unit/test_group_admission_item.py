"""The needs-you row that asks whether a bot may work in a group chat it was added to (docs/attention.md,
docs/channels.md#groups): its words in both languages, its [允许] [不允许] buttons, and an id that stays the
same and fits in a URL whatever the platform's group id holds."""

from __future__ import annotations

import re

from core.attention.items import (
    KINDS,
    AttentionItem,
    action_label,
    approval_item,
    can,
    channel_login_item,
    failed_task_item,
    group_admission_item,
    group_key,
    ordered,
    split_item_id,
)

NOW = 1_800_000_000.0
GROUP = "cidAbC+/xyz=="  # a DingTalk openConversationId: may hold + / =


def asked(title: str = "测试群", lang: str = "zh", group: str = GROUP, since: float = NOW) -> AttentionItem:
    return group_admission_item("ch_dt", group, "b_dd", "哒哒", title, since, lang=lang)


def test_the_row_asks_in_chinese_whether_the_bot_works_in_the_group() -> None:
    item = asked()
    assert item.subject == "哒哒 被拉进了群「测试群」,要在这个群里工作吗?"
    assert "允许" in item.line and "不允许" in item.line
    assert item.kind == "group_admission" and item.bot_id == "b_dd"
    assert item.actions == ("approve", "deny")
    assert item.severity == "warn"
    assert item.pushed  # it asks the person
    assert not item.dismissable and not can(item, "dismiss")


def test_the_row_asks_in_english() -> None:
    item = asked(lang="en")
    assert item.subject == "哒哒 was added to the group “测试群”: work in this group?"
    assert item.line.startswith("If you allow it")


def test_a_group_without_a_title_is_a_group() -> None:
    assert asked(title="").subject == "哒哒 被拉进了一个群,要在这个群里工作吗?"
    assert asked(title="  ", lang="en").subject == "哒哒 was added to a group: work in this group?"


def test_a_bot_without_a_name_is_named_by_its_id() -> None:
    item = group_admission_item("ch_dt", GROUP, "b_dd", "", "测试群", NOW, lang="en")
    assert item.subject == "b_dd was added to the group “测试群”: work in this group?"


def test_its_buttons_read_allow_and_dont_allow() -> None:
    zh, en = asked(), asked(lang="en")
    assert [action_label(zh, a, "zh") for a in zh.actions] == ["允许", "不允许"]
    assert [action_label(en, a, "en") for a in en.actions] == ["Allow", "Don't allow"]


def test_other_kinds_keep_their_labels() -> None:
    approval = approval_item("a_1", "b", "rm -rf build/", NOW)
    assert [action_label(approval, a) for a in approval.actions] == ["批准一次", "拒绝"]
    assert [action_label(approval, a, "en") for a in approval.actions] == ["Approve once", "Deny"]
    failed = failed_task_item("t_1", "b", "T", "坏了", NOW)
    assert [action_label(failed, a) for a in failed.actions] == ["重试", "打开任务"]
    assert action_label(channel_login_item("ch", "b", "微信", NOW), "open", "en") == "Sign in again"


def test_the_id_is_stable_and_url_safe_with_plus_slash_and_equals_in_the_group() -> None:
    item = asked()
    again = asked(title="改了名的群", lang="en", since=NOW + 3600)
    assert item.id == again.id  # the same group keeps its row across derivations, languages and renames
    assert split_item_id(item.id) == ("group_admission", group_key("ch_dt", GROUP))
    assert re.fullmatch(r"group_admission:ch_dt\.[0-9a-f]{16}", item.id)
    assert GROUP not in item.id and not set("+/=") & set(item.id)


def test_each_group_and_channel_has_its_own_row() -> None:
    ids = {
        asked(group="cidAbC+/xyz==").id,
        asked(group="cidAbC+/xyz=").id,
        asked(group="cidAbC/+xyz==").id,
        group_admission_item("ch_other", GROUP, "b_dd", "哒哒", "测试群", NOW).id,
    }
    assert len(ids) == 4


def test_it_is_a_known_kind_asked_with_the_questions_and_approvals() -> None:
    assert "group_admission" in KINDS
    failure = failed_task_item("t_old", "b", "旧任务", "坏了", NOW - 86_400)
    login = channel_login_item("ch", "b", "钉钉", NOW - 86_400)
    group = asked()
    approval = approval_item("a_1", "b", "rm -rf build/", NOW + 60)
    assert ordered([login, approval, failure, group]) == [group, approval, failure, login]

"""UI text: both catalogues say the same things, and the language follows ERRAND_LANG or the locale."""

from __future__ import annotations

import string

import pytest

from ui import formatting, i18n
from ui.i18n import catalogue, t


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_both_languages_have_the_same_keys_and_placeholders() -> None:
    zh, en = catalogue("zh"), catalogue("en")
    assert zh and en
    assert set(zh) == set(en)
    for key in en:
        assert placeholders(zh[key]) == placeholders(en[key]), key


def test_chinese_text_uses_full_width_punctuation() -> None:
    for key, text in catalogue("zh").items():
        if any("\u4e00" <= ch <= "\u9fff" for ch in text):
            assert not any(ch in text for ch in ",:;()"), key


@pytest.mark.parametrize(
    ("value", "expected"), [("zh_CN", "zh"), ("zh", "zh"), ("en_US", "en"), ("en", "en")]
)
def test_errand_lang_overrides_the_locale(monkeypatch: pytest.MonkeyPatch, value: str, expected: str) -> None:
    monkeypatch.setenv("ERRAND_LANG", value)
    assert i18n.system_language() == expected


def test_text_in_each_language() -> None:
    i18n.use_language("zh")
    assert t("composer.send") == "发送"
    took = formatting.duration(3200)
    assert t("activity.summary", duration=took, steps=formatting.step_count(4)) == "用时 3.2 秒 · 4 步"
    i18n.use_language("en")
    assert t("composer.send") == "Send"
    took = formatting.duration(3200)
    assert t("activity.summary", duration=took, steps=formatting.step_count(1)) == "Took 3.2s · 1 step"


def test_an_unknown_key_shows_itself() -> None:
    assert t("no.such.key") == "no.such.key"


@pytest.mark.parametrize(
    ("ms", "expected"), [(40, "<0.1s"), (3210, "3.2s"), (12_600, "12s"), (125_000, "2m 5s")]
)
def test_durations_read_naturally(ms: int, expected: str) -> None:
    assert formatting.duration(ms) == expected


def test_token_counts_are_short() -> None:
    assert [formatting.token_count(n) for n in (856, 1240, 123_456)] == ["856", "1.2k", "123k"]

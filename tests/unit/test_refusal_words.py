"""A refused cron expression and a model that is not set up word themselves in a person's language; the
English message stays what the API, the model and scripts read (issue 17: English left in the Chinese UI)."""

from __future__ import annotations

import pytest

from core.agent.model_config import ModelConfig
from core.errors import InvalidInputError
from core.rules.cron import FIELD, parse_cron


def has_chinese(words: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in words)


REFUSED = [
    "",
    "61 * * *",
    "61 * * * *",
    "x * * * *",
    "* * * * mon-xx",
    "1,,2 * * * *",
    "*/0 * * * *",
    "5-1 * * * *",
    "5/15 * * * *",
    "@reboot",
]


def refusal(text: str) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as caught:
        parse_cron(text)
    return caught.value


@pytest.mark.parametrize("text", REFUSED)
def test_every_cron_refusal_keeps_its_english_message_and_has_chinese_words(text: str) -> None:
    refused = refusal(text)
    assert refused.field == FIELD
    assert refused.message.startswith(f"{FIELD}: ")
    # The person's English is the API's message without the field it names.
    assert refused.words("en") == refused.message.removeprefix(f"{FIELD}: ")
    assert has_chinese(refused.words("zh"))
    assert "{" not in refused.words("zh")


def test_a_cron_refusal_names_the_part_in_the_persons_language() -> None:
    refused = refusal("61 * * * *")
    assert refused.message == "schedule.cron: cron field 1 (minute) must be 0-59, got 61"
    assert refused.words("zh") == "第 1 段（分钟）要在 0-59 之间，现在是 61"


@pytest.mark.parametrize(
    ("config", "key"),
    [
        (ModelConfig(base_url="", model="deepseek-chat"), "error.model_config.no_base_url"),
        (ModelConfig(base_url="ftp://example", model="deepseek-chat"), "error.model_config.bad_base_url"),
        (ModelConfig(base_url="https://api.deepseek.com/v1", model=""), "error.model_config.no_model"),
    ],
)
def test_a_model_that_is_not_set_up_says_so_in_both_languages(config: ModelConfig, key: str) -> None:
    trouble = config.trouble()
    assert trouble is not None
    assert trouble.key == key
    assert config.problem() == trouble.message == trouble.words("en")
    assert has_chinese(trouble.words("zh"))


def test_a_bad_base_url_is_named_in_chinese_too() -> None:
    trouble = ModelConfig(base_url="ftp://example", model="m").trouble()
    assert trouble is not None
    assert "'ftp://example'" in trouble.words("zh")


def test_a_usable_model_has_no_trouble() -> None:
    config = ModelConfig(base_url="https://api.deepseek.com/v1", model="deepseek-chat")
    assert config.trouble() is None
    assert config.problem() is None

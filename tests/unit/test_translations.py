"""The one catalogue: every book says the same things in both languages, and a gap shows as text."""

from __future__ import annotations

import string

import pytest

from core import translations
from core.errors import ConflictError, InvalidInputError, NotFoundError
from core.translations import BOOKS, Book, catalogue, text


def placeholders(words: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(words) if name}


@pytest.mark.parametrize("book", BOOKS)
def test_both_languages_have_the_same_keys_and_placeholders(book: Book) -> None:
    zh, en = catalogue("zh", book), catalogue("en", book)
    assert zh and en
    assert set(zh) == set(en)
    for key in en:
        assert placeholders(zh[key]) == placeholders(en[key]), key


def test_the_books_are_found_where_the_package_keeps_its_resources() -> None:
    for book in BOOKS:
        assert translations.translation_path("zh_CN", book).parent.is_dir()
    assert translations.translation_path("en", "ui").is_file()


def test_text_fills_its_fields_in_each_language() -> None:
    assert text("zh", "push.options", options="A / B") == "可选:A / B"
    assert text("en", "push.options", options="A / B") == "Options: A / B"


def test_an_unknown_key_shows_itself_and_a_misfit_shows_unfilled() -> None:
    assert text("zh", "no.such.key") == "no.such.key"
    assert text("en", "push.options") == "Options: {options}"
    assert text("en", "push.options", wrong="x") == "Options: {options}"


def test_a_core_error_keeps_its_english_message_and_words_itself_for_a_person() -> None:
    gone = NotFoundError("task", "t_1")
    assert gone.message == "No task with id 't_1'."
    assert gone.words("en") == gone.message
    assert gone.words("zh") == "找不到任务 't_1',它可能已被删除。"
    assert NotFoundError("gadget", "g").words("en") == "No gadget with id 'g'."


def test_an_error_without_words_says_its_message() -> None:
    assert ConflictError("busy").words("zh") == "busy"
    refused = InvalidInputError("title", "is empty")
    assert refused.words("zh") == "title: is empty"
    worded = ConflictError(
        "x does not offer 'retry'",
        key="error.attention.not_offered",
        fields={"item": "x", "action": "retry", "offered": "open"},
    )
    assert worded.words("en") == "x does not offer 'retry'; it offers: open."

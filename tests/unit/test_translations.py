"""The one catalogue: every book says the same things in both languages, and a gap shows as text."""

from __future__ import annotations

import string

import pytest

from core import translations
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

"""What the bot writes in Markdown reads cleanly in WeChat, which shows no Markdown: marks go, words stay."""

from __future__ import annotations

import pytest

from core.channels.wechat.plain_text import plain_text


@pytest.mark.parametrize(
    ("markdown", "shown"),
    [
        ("**GPU prices** are *down* ~~a lot~~ today", "GPU prices are down a lot today"),
        ("## Result\n\nX is **199**", "Result\n\nX is 199"),
        (
            "See [the page](https://x.example/p) or <https://y.example>",
            "See the page (https://x.example/p) or https://y.example",
        ),
        ("[https://x.example](https://x.example)", "https://x.example"),
        ("![chart](https://x.example/c.png)", "chart"),
        ("* one\n+ two\n- three\n1. four", "- one\n- two\n- three\n1. four"),
        ("> quoted\n> > twice", "quoted\ntwice"),
        ("| model | price |\n|---|---:|\n| a | 1 |", "model | price\na | 1"),
        ("before\n\n---\n\nafter", "before\n\nafter"),
        ("run `rm -rf *_old` now", "run rm -rf *_old now"),
        ("snake_case_name and 2*3*4", "snake_case_name and 2*3*4"),
        ("a\n\n\n\n\nb", "a\n\nb"),
        ("价格 **降到 199** 了", "价格 降到 199 了"),
    ],
)
def test_markdown_marks_go_and_every_word_stays(markdown: str, shown: str) -> None:
    assert plain_text(markdown) == shown


def test_code_blocks_keep_their_lines_without_fences() -> None:
    assert plain_text("Run:\n```bash\nls -la\n  echo *hi*\n```\ndone") == "Run:\nls -la\n  echo *hi*\ndone"

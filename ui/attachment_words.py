"""How a message's attachment lines read in the window: `[image: inbox/c_1/photo.png]` as 「图片 · photo.png」
and `[file: …/report.pdf]` as 「文件 · report.pdf」 (docs/desktop.md#chat-view). The stored text keeps the
paths: the bot needs them, a person needs the names."""

from __future__ import annotations

import re

from ui.i18n import t

_MARKER = re.compile(r"\[(image|file|voice|video): ([^\]\n]+)\]")


def shown(text: str) -> str:
    if "[" not in text:
        return text
    return _MARKER.sub(
        lambda m: t(f"message.attachment.{m.group(1)}", name=m.group(2).rsplit("/", 1)[-1]), text
    )

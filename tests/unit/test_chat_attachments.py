"""What an attachment leaves in a message and a task brief (docs/chat.md#attachments)."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.api.multipart import form_parts
from core.chat.attachment import Attachment
from core.chat.attachments import absolute_markers, save_all, with_markers
from core.errors import InvalidInputError
from core.tasks.prompts import task_brief


async def test_a_name_cannot_end_its_marker_early_or_leave_its_folder(tmp_path: Path) -> None:
    markers = await save_all(
        [Attachment("../../a]b[c.txt", "text/plain", b"x"), Attachment("", "", b"\xff\xd8\xff\xe0jpeg")],
        tmp_path,
        "c_1",
    )
    assert markers[0] == "[file: inbox/c_1/a)b(c.txt]"
    assert markers[1].startswith("[image: inbox/c_1/pasted-") and markers[1].endswith(".jpg]")
    assert (
        sorted(p.parent for p in (tmp_path / "inbox").rglob("*") if p.is_file())
        == [tmp_path / "inbox" / "c_1"] * 2
    )


def test_words_come_first_then_one_line_per_file() -> None:
    assert with_markers("  look  ", ["[file: inbox/c/a.txt]"]) == "look\n[file: inbox/c/a.txt]"
    assert with_markers("", ["[image: inbox/c/p.png]"]) == "[image: inbox/c/p.png]"


def test_a_task_brief_names_each_file_once_by_its_absolute_path() -> None:
    texts = [
        "[image: inbox/c/p.png]\nhere",
        "again [image: inbox/c/p.png]",
        "[file: inbox/c/r.pdf]",
        "[file: /etc/x]",
    ]
    found = absolute_markers(texts, Path("/w"))
    assert found == ["[image: /w/inbox/c/p.png]", "[file: /w/inbox/c/r.pdf]"]  # only the inbox's, once each
    brief = task_brief(words="summarise", brief="", recent=[], attachments=found)
    assert brief.endswith(
        "Files the user sent in the conversation (open them by these paths):\n" + "\n".join(found)
    )
    assert "Files the user sent" not in task_brief(words="summarise", brief="", recent=[])


def test_a_multipart_body_without_a_boundary_or_names_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="without a boundary"):
        form_parts("multipart/form-data", b"")
    body = b"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--\r\n"
    with pytest.raises(InvalidInputError, match="part 1 has no name"):
        form_parts("multipart/form-data; boundary=b", body)

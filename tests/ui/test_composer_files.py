"""Files in the composer as a person meets them (docs/desktop.md#chat-view): a pasted picture and a dropped
file wait as chips and go with the message, a file alone can be sent, × takes one off, a file over the
limit is refused with its size and the limit, and a failed send gives the files back."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QUrl
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QLabel

from core.chat.attachment import MAX_FILE_BYTES
from tests.fakes.fake_chat import FakeChatFacade
from tests.ui.conftest import wait_until
from ui.attachment_words import shown
from ui.composer import Composer, FileChip
from ui.i18n import t
from ui.main_window import MainWindow


async def open_chat(window: MainWindow, facade: FakeChatFacade) -> tuple[str, Composer]:
    conversation = facade.add_conversation("Chat")
    await window.refresh()
    composer = window.findChild(Composer, "composer")
    assert isinstance(composer, Composer)
    return conversation.id, composer


def dropped(*paths: Path) -> QMimeData:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    return mime


def pasted_picture() -> QMimeData:
    image = QImage(24, 16, QImage.Format.Format_RGB32)
    image.fill(QColor("#2f6bd8"))
    mime = QMimeData()
    mime.setImageData(image)
    return mime


def sparse_file(path: Path, size: int) -> None:
    """A file of `size` bytes with none of them written."""
    with open(path, "wb") as out:
        out.truncate(size)


def chips(composer: Composer) -> list[str]:
    return [chip.name.text() for chip in composer.chips.findChildren(FileChip) if not chip.isHidden()]


async def test_a_pasted_picture_and_a_dropped_file_go_with_the_message(
    window: MainWindow, facade: FakeChatFacade, tmp_path: Path
) -> None:
    cid, composer = await open_chat(window, facade)
    notes = tmp_path / "notes.txt"
    notes.write_text("第一行\n")
    composer.input.insertFromMimeData(pasted_picture())  # what Ctrl+V does
    composer.input.insertFromMimeData(dropped(notes))
    await wait_until(lambda: chips(composer) == [t("composer.pasted_image"), "notes.txt"])
    assert composer.input.toPlainText() == ""  # a file never lands in the text as its path
    composer.input.setPlainText("看看这个")
    composer.send_button.click()

    await wait_until(lambda: len(facade.attached) == 1)
    assert facade.said == [(cid, "看看这个")]
    picture, text_file = facade.attached[0]
    assert picture.media_type == "image/png" and picture.data.startswith(b"\x89PNG\r\n\x1a\n")
    assert (text_file.name, text_file.data) == ("notes.txt", "第一行\n".encode())
    assert chips(composer) == [] and composer.files == []


async def test_a_file_alone_can_be_sent_and_x_takes_one_off(
    window: MainWindow, facade: FakeChatFacade, tmp_path: Path
) -> None:
    _cid, composer = await open_chat(window, facade)
    assert not composer.send_button.isEnabled()
    a, b = tmp_path / "a.pdf", tmp_path / "b.pdf"
    a.write_bytes(b"%PDF a")
    b.write_bytes(b"%PDF b")
    composer.input.insertFromMimeData(dropped(a, b))
    assert composer.send_button.isEnabled()
    first = next(c for c in composer.chips.findChildren(FileChip) if c.item.name == "a.pdf")
    first.remove_button.click()
    await wait_until(lambda: chips(composer) == ["b.pdf"])
    composer.send_button.click()
    await wait_until(lambda: len(facade.attached) == 1)
    assert [f.name for f in facade.attached[0]] == ["b.pdf"] and facade.said[0][1] == ""


async def test_a_file_over_the_limit_is_refused_with_its_size_and_the_limit(
    window: MainWindow, facade: FakeChatFacade, tmp_path: Path
) -> None:
    _cid, composer = await open_chat(window, facade)
    huge = tmp_path / "video.mp4"
    sparse_file(huge, MAX_FILE_BYTES + 1024 * 1024)
    composer.input.insertFromMimeData(dropped(huge))
    error = window.findChild(QLabel, "composerError")
    assert isinstance(error, QLabel) and error.isVisible()
    assert "video.mp4" in error.text() and "21 MB" in error.text() and "20 MB" in error.text()
    assert chips(composer) == [] and not composer.send_button.isEnabled()


async def test_a_failed_send_gives_the_files_back(
    window: MainWindow, facade: FakeChatFacade, tmp_path: Path
) -> None:
    _cid, composer = await open_chat(window, facade)
    report = tmp_path / "report.pdf"
    report.write_bytes(b"%PDF")
    facade.say_error = RuntimeError("the host is not running")
    composer.input.insertFromMimeData(dropped(report))
    composer.send_button.click()
    error = window.findChild(QLabel, "composerError")
    assert isinstance(error, QLabel)
    await wait_until(error.isVisible)
    assert error.text() == t("composer.send_failed", reason="the host is not running")
    await wait_until(lambda: chips(composer) == ["report.pdf"])


def test_an_attachment_line_reads_as_its_kind_and_name() -> None:
    text = "看看\n[image: inbox/c_1/pasted-9f86.png]\n[file: /w/inbox/c_1/季度报告.pdf]\n[not a marker]"
    assert shown(text) == "\n".join(
        [
            "看看",
            t("message.attachment.image", name="pasted-9f86.png"),
            t("message.attachment.file", name="季度报告.pdf"),
            "[not a marker]",
        ]
    )
    assert shown("no files here") == "no files here"

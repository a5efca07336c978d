"""What a downloaded WeChat attachment is called in its folder: the sender's file name made safe (it can
never leave the folder, hide itself or break a file system), else a stem with the extension its kind, or
for an image its first bytes, imply."""

from __future__ import annotations

import pytest

from core.channels.wechat.frames import MediaRef
from core.channels.wechat.media import (
    MAX_NAME_BYTES,
    MAX_NAME_CHARS,
    ext_for,
    file_name_for,
    numbered,
    safe_name,
)

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
GIF = b"GIF89a\x01\x00\x01\x00"
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 "
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF"


def ref(file_name: str = "") -> MediaRef:
    return MediaRef(encrypted_query_param="q", aes_key="k", file_name=file_name)


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("report.pdf", "report.pdf"),
        ("季度报告 2026.xlsx", "季度报告 2026.xlsx"),
        ("../../etc/passwd", "passwd"),
        ("..\\..\\Windows\\win.ini", "win.ini"),
        ("/abs/path/notes.txt", "notes.txt"),
        (".bashrc", "bashrc"),
        ("...hidden.txt", "hidden.txt"),
        ('a<b>c:d"e|f?g*h.txt', "a_b_c_d_e_f_g_h.txt"),
        ("tab\there\x00.txt", "tab_here_.txt"),
        ("trailing. . ", "trailing"),
        ("CON.txt", "_CON.txt"),
        ("nul", "_nul"),
        ("console.txt", "console.txt"),
    ],
)
def test_a_senders_file_name_keeps_its_last_part_without_anything_unsafe(given: str, kept: str) -> None:
    assert safe_name(given) == kept


@pytest.mark.parametrize("given", ["", "   ", "..", "../", "/", "....", "dir/"])
def test_a_name_with_nothing_usable_left_is_empty(given: str) -> None:
    assert safe_name(given) == ""


def test_a_long_name_is_cut_to_120_characters_and_keeps_its_extension() -> None:
    name = safe_name("x" * 300 + ".docx")
    assert len(name) == MAX_NAME_CHARS and name.endswith(".docx")
    assert name == "x" * (MAX_NAME_CHARS - 5) + ".docx"


def test_a_long_chinese_name_also_fits_a_file_systems_bytes() -> None:
    name = safe_name("报" * 119 + ".pdf")
    assert name.endswith(".pdf") and len(name.encode()) <= MAX_NAME_BYTES
    assert name == "报" * ((MAX_NAME_BYTES - 4) // 3) + ".pdf"


@pytest.mark.parametrize(
    ("head", "ext"), [(PNG, "png"), (GIF, "gif"), (b"GIF87a....", "gif"), (WEBP, "webp"), (JPEG, "jpg")]
)
def test_an_images_extension_comes_from_its_first_bytes(head: bytes, ext: str) -> None:
    assert ext_for("image", head) == ext


@pytest.mark.parametrize("head", [b"", b"garbage", b"RIFF\x00\x00\x00\x00WAVEfmt "])
def test_an_image_whose_bytes_say_nothing_known_is_a_jpeg(head: bytes) -> None:
    assert ext_for("image", head) == "jpg"


@pytest.mark.parametrize(
    ("kind", "ext"), [("voice", "silk"), ("video", "mp4"), ("file", "bin"), ("other", "bin")]
)
def test_other_kinds_take_their_kinds_extension_whatever_the_bytes(kind: str, ext: str) -> None:
    assert ext_for(kind, PNG) == ext


def test_without_a_senders_name_the_stem_and_the_kinds_extension_name_it() -> None:
    assert file_name_for(ref(), "image", "m-42", PNG) == "m-42.png"
    assert file_name_for(ref(), "image", "m-42", b"") == "m-42.jpg"
    assert file_name_for(ref(), "voice", "m-42", b"#!SILK_V3") == "m-42.silk"
    assert file_name_for(ref("../"), "video", "m-42", b"") == "m-42.mp4"


def test_the_senders_name_wins_over_the_stem_and_an_unsafe_stem_is_made_safe() -> None:
    assert file_name_for(ref("../../photo.png"), "image", "m-42", JPEG) == "photo.png"
    assert file_name_for(ref(), "file", "../up/../m-7", b"") == "m-7.bin"
    assert file_name_for(ref(), "file", "..", b"") == "media.bin"


def test_a_taken_name_is_numbered_before_its_extension() -> None:
    assert numbered("report.pdf", 0) == "report.pdf"
    assert numbered("report.pdf", 1) == "report-1.pdf"
    assert numbered("README", 2) == "README-2"
    assert numbered("a.tar.gz", 3) == "a.tar-3.gz"
    long = safe_name("y" * 200 + ".txt")
    assert len(numbered(long, 12)) <= MAX_NAME_CHARS and numbered(long, 12).endswith("-12.txt")

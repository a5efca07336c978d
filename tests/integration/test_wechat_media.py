"""Fetching WeChat attachments over real HTTP from a fake iLink CDN on 127.0.0.1: both key forms, the
platform's full URL before our own, every way a download fails (each a MediaError that says why, with
nothing left in the folder), and the same attachment fetched twice kept once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.channels.wechat.frames import MediaRef
from core.channels.wechat.media import MediaError, MediaFetcher
from tests.fakes.fake_ilink_cdn import FakeILinkCdn

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x42" * 3000
KEY = bytes.fromhex("00112233445566778899aabbccddeeff")


@pytest.fixture
async def cdn() -> AsyncIterator[FakeILinkCdn]:
    async with FakeILinkCdn() as server:
        yield server


@pytest.fixture
async def fetcher(cdn: FakeILinkCdn) -> AsyncIterator[MediaFetcher]:
    made = MediaFetcher(cdn.base_url, timeout_s=5.0)
    yield made
    await made.close()


def files_in(folder: Path) -> list[str]:
    """Every entry, hidden ones included: a failed download must not leave a temporary file either."""
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


async def test_an_image_with_a_raw_key_is_decrypted_and_named_by_its_bytes(
    cdn: FakeILinkCdn, fetcher: MediaFetcher, tmp_path: Path
) -> None:
    ref = cdn.host(PNG, key=KEY, key_form="raw")
    path = await fetcher.fetch(ref, "image", tmp_path / "media", stem="m-1")
    assert path == tmp_path / "media" / "m-1.png"
    assert path.read_bytes() == PNG
    # The param holds `+`, `/` and `=`; it reached the fake intact, so it was percent-encoded.
    assert cdn.requests == [("/download", {"encrypted_query_param": ref.encrypted_query_param})]


async def test_a_file_with_a_hex_key_keeps_its_senders_name_without_the_path_in_it(
    cdn: FakeILinkCdn, fetcher: MediaFetcher, tmp_path: Path
) -> None:
    body = b"%PDF-1.7\n" + b"quarterly figures\n" * 500
    ref = cdn.host(body, key_form="hex", file_name="../../../etc/季度报告.pdf")
    path = await fetcher.fetch(ref, "file", tmp_path, stem="m-2")
    assert path == tmp_path / "季度报告.pdf"
    assert path.read_bytes() == body
    assert files_in(tmp_path) == ["季度报告.pdf"]


async def test_voice_and_video_take_their_kinds_extension(
    cdn: FakeILinkCdn, fetcher: MediaFetcher, tmp_path: Path
) -> None:
    voice = await fetcher.fetch(
        cdn.host(b"#!SILK_V3" + b"\x01" * 99, key_form="hex"), "voice", tmp_path, stem="v"
    )
    video = await fetcher.fetch(
        cdn.host(b"\x00\x00\x00\x18ftypmp42", key_form="hex"), "video", tmp_path, stem="v"
    )
    assert (voice.name, video.name) == ("v.silk", "v.mp4")


async def test_an_image_that_came_without_a_key_is_kept_as_it_was_served(
    cdn: FakeILinkCdn, fetcher: MediaFetcher, tmp_path: Path
) -> None:
    path = await fetcher.fetch(cdn.host(PNG, key_form="none"), "image", tmp_path, stem="plain")
    assert path.name == "plain.png" and path.read_bytes() == PNG
    with pytest.raises(MediaError, match="without a key"):
        await fetcher.fetch(cdn.host(b"data", key_form="none"), "file", tmp_path, stem="f")


async def test_the_platforms_full_url_is_used_before_the_cdn_route(
    cdn: FakeILinkCdn, fetcher: MediaFetcher, tmp_path: Path
) -> None:
    ref = cdn.host(JPEG, full_url=True)  # the fake serves this one only at its full URL
    path = await fetcher.fetch(ref, "image", tmp_path, stem="m-3")
    assert path.name == "m-3.jpg" and path.read_bytes() == JPEG
    assert [request[0] for request in cdn.requests] == ["/full/1"]


async def test_the_cdn_answering_500_is_a_media_error_naming_the_status(
    cdn: FakeILinkCdn, fetcher: MediaFetcher, tmp_path: Path
) -> None:
    ref = cdn.host(JPEG)
    cdn.fail_next(500)
    with pytest.raises(MediaError) as caught:
        await fetcher.fetch(ref, "image", tmp_path, stem="m-4")
    assert (
        caught.value.reason
        == "The image could not be fetched from WeChat: WeChat's file server answered HTTP 500."
    )
    assert files_in(tmp_path) == []
    # The fault was for one request: the same ref works the next time.
    assert (await fetcher.fetch(ref, "image", tmp_path, stem="m-4")).read_bytes() == JPEG


async def test_a_wrong_key_is_a_media_error_and_nothing_is_saved(
    cdn: FakeILinkCdn, fetcher: MediaFetcher, tmp_path: Path
) -> None:
    # Fixed keys, so this is not the one wrong key in 256 whose garbage happens to unpad.
    ref = cdn.host(b"secret plans" * 10, key=KEY, key_form="hex", served_key=bytes(16), file_name="plans.txt")
    with pytest.raises(MediaError, match="did not decrypt with its key"):
        await fetcher.fetch(ref, "file", tmp_path, stem="m-5")
    assert files_in(tmp_path) == []


async def test_a_key_that_is_no_aes_key_is_refused_before_downloading(
    cdn: FakeILinkCdn, fetcher: MediaFetcher, tmp_path: Path
) -> None:
    ref = MediaRef(encrypted_query_param="q", aes_key="a2V5", file_name="x.bin")
    with pytest.raises(MediaError, match="not a valid AES-128 key"):
        await fetcher.fetch(ref, "file", tmp_path, stem="m-6")
    assert cdn.downloads == 0


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_download_past_the_limit_is_refused_and_leaves_no_file(
    cdn: FakeILinkCdn, tmp_path: Path, chunked: bool
) -> None:
    fetcher = MediaFetcher(cdn.base_url, timeout_s=5.0, max_bytes=8 * 1024)
    try:
        ref = cdn.host(b"\x00" * (64 * 1024), chunked=chunked, file_name="big.bin")
        with pytest.raises(MediaError, match="larger than 8 KB"):
            await fetcher.fetch(ref, "file", tmp_path, stem="m-7")
        assert files_in(tmp_path) == []
        # A file of exactly the limit still fits, although its padding makes the download a block longer.
        exact = cdn.host(b"\x07" * (8 * 1024), chunked=chunked)
        assert (await fetcher.fetch(exact, "file", tmp_path, stem="m-8")).stat().st_size == 8 * 1024
    finally:
        await fetcher.close()


async def test_a_cdn_that_never_answers_is_a_time_out(cdn: FakeILinkCdn, tmp_path: Path) -> None:
    fetcher = MediaFetcher(cdn.base_url, timeout_s=0.2)
    try:
        ref = cdn.host(JPEG)
        cdn.hang_next()
        with pytest.raises(MediaError, match=r"did not answer within 0.2 s"):
            await fetcher.fetch(ref, "image", tmp_path, stem="m-9")
        assert files_in(tmp_path) == []
    finally:
        await fetcher.close()


async def test_a_cdn_nobody_listens_on_is_a_media_error(tmp_path: Path) -> None:
    async with FakeILinkCdn() as gone:
        ref = gone.host(JPEG)
        address = gone.base_url
    fetcher = MediaFetcher(address, timeout_s=5.0)
    try:
        with pytest.raises(MediaError, match="could not be reached"):
            await fetcher.fetch(ref, "image", tmp_path, stem="m-10")
    finally:
        await fetcher.close()


async def test_the_same_attachment_fetched_twice_is_one_file_and_a_different_one_is_numbered(
    cdn: FakeILinkCdn, fetcher: MediaFetcher, tmp_path: Path
) -> None:
    ref = cdn.host(PNG, file_name="photo.png")
    first = await fetcher.fetch(ref, "image", tmp_path, stem="m-11")
    again = await fetcher.fetch(ref, "image", tmp_path, stem="m-11")
    assert again == first and cdn.downloads == 2
    other = await fetcher.fetch(cdn.host(PNG + b"!", file_name="photo.png"), "image", tmp_path, stem="m-12")
    assert other == tmp_path / "photo-1.png"
    assert files_in(tmp_path) == ["photo-1.png", "photo.png"]
    assert first.read_bytes() == PNG  # never overwritten


async def test_two_fetches_at_once_of_different_files_under_one_name_keep_both(
    cdn: FakeILinkCdn, fetcher: MediaFetcher, tmp_path: Path
) -> None:
    refs = [cdn.host(JPEG + bytes([n]), file_name="same.jpg") for n in range(4)]
    paths = await asyncio.gather(*(fetcher.fetch(r, "image", tmp_path, stem="x") for r in refs))
    assert sorted(p.name for p in paths) == ["same-1.jpg", "same-2.jpg", "same-3.jpg", "same.jpg"]
    assert sorted(p.read_bytes() for p in paths) == sorted(JPEG + bytes([n]) for n in range(4))

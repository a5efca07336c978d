"""What a model that takes images is shown (docs/models.md#images): only real images in the workspace's inbox,
by their bytes and within the limits, the newest first; and which models start with images on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.agent.images import (
    MAX_IMAGE_BYTES,
    REQUEST_IMAGES,
    ImageCache,
    ImageRefused,
    load_images,
    media_type,
    resolve_in_inbox,
)
from core.agent.messages import ModelRequest, UserText
from core.agent.wire_format import EncodedHistory, to_wire_messages
from core.bots.model_images import images_by_default

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 16


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "inbox" / "c1").mkdir(parents=True)
    return tmp_path


def put(workspace: Path, name: str, data: bytes = PNG) -> str:
    (workspace / "inbox" / "c1" / name).write_bytes(data)
    return f"[image: inbox/c1/{name}]"


def test_the_media_type_comes_from_the_bytes_not_the_name() -> None:
    assert media_type(PNG) == "image/png"
    assert media_type(JPEG) == "image/jpeg"
    assert media_type(b"GIF89a......") == "image/gif"
    assert media_type(b"RIFF\x00\x00\x00\x00WEBP") == "image/webp"
    assert media_type(b"#!/bin/sh\n") is None


def test_only_files_inside_the_inbox_resolve(
    workspace: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    put(workspace, "a.png")
    assert resolve_in_inbox("inbox/c1/a.png", workspace) == (workspace / "inbox/c1/a.png").resolve()
    assert resolve_in_inbox(str(workspace / "inbox/c1/a.png"), workspace).name == "a.png"
    outside = tmp_path_factory.mktemp("outside") / "x.png"
    outside.write_bytes(PNG)
    (workspace / "inbox" / "c1" / "link.png").symlink_to(outside)
    for written in ("inbox/c1/link.png", "inbox/../x.png", "inbox", str(outside)):
        with pytest.raises(ImageRefused):
            resolve_in_inbox(written, workspace)


def test_images_are_shown_and_what_cannot_be_is_named_with_why(workspace: Path) -> None:
    shown = put(workspace, "a.png")
    script = put(workspace, "b.png", b"#!/bin/sh\n")
    big = put(workspace, "c.png", PNG + bytes(MAX_IMAGE_BYTES))
    text = f"look {shown} {script} {big} [image: inbox/c1/gone.png]"
    found = load_images([text], workspace)[text]
    assert len(found.urls) == 1 and found.urls[0].startswith("data:image/png;base64,")
    assert f"{shown} {script} [image not shown: it is not a PNG, JPEG, GIF or WebP image]" in found.text
    assert f"{big} [image not shown: it is larger than 5 MB]" in found.text
    assert found.text.endswith("[image: inbox/c1/gone.png] [image not shown: the file is not there]")


def test_a_request_carries_the_newest_images_up_to_the_limit(workspace: Path) -> None:
    texts = [put(workspace, f"{i}.png", PNG + bytes([i])) for i in range(REQUEST_IMAGES + 2)]
    found = load_images(texts, workspace)
    assert [len(found[t].urls) for t in texts] == [0, 0] + [1] * REQUEST_IMAGES
    assert "only the latest images are sent" in found[texts[0]].text


def test_an_image_named_twice_is_sent_once_where_it_is_named_last(workspace: Path) -> None:
    marker = put(workspace, "a.png")
    absolute = f"[image: {(workspace / 'inbox/c1/a.png').as_posix()}]"
    text = f"The user asked:\nthis {marker}\n\nFiles:\n{absolute}"
    found = load_images([text], workspace)[text]
    assert len(found.urls) == 1
    assert f"{marker} [image not shown: it is the same image" in found.text
    assert found.text.endswith(absolute)


def test_the_cache_reads_a_file_again_only_when_it_changed(workspace: Path) -> None:
    marker = put(workspace, "a.png")
    cache = ImageCache()
    load_images([marker], workspace, cache)
    load_images([marker], workspace, cache)
    assert cache.reads == 1
    path = workspace / "inbox/c1/a.png"
    path.write_bytes(JPEG)
    os.utime(path, ns=(1, 1))
    assert load_images([marker], workspace, cache)[marker].urls[0].startswith("data:image/jpeg")
    assert cache.reads == 2


def test_the_cache_stays_within_its_bounds() -> None:
    cache = ImageCache(max_entries=2, max_chars=10)
    cache.put(("a", 1, 1), "x" * 4)
    cache.put(("b", 1, 1), "y" * 4)
    cache.put(("c", 1, 1), "z" * 4)
    assert len(cache) == 2 and cache.get(("a", 1, 1)) is None
    cache.put(("d", 1, 1), "w" * 11)  # larger than the whole cache: not kept
    assert cache.get(("d", 1, 1)) is None


async def test_the_wire_sends_parts_only_with_images_on(workspace: Path) -> None:
    marker = put(workspace, "a.png")
    history = [ModelRequest((UserText(f"see {marker}"),))]
    assert to_wire_messages(history) == [{"role": "user", "content": f"see {marker}"}]
    encoded = EncodedHistory(workspace, images=True)
    await encoded.prepare(history)
    wire = encoded.messages_json(history)
    assert '"type":"image_url"' in wire.replace(" ", "") and "data:image/png;base64," in wire
    encoded.take_images(workspace, False)
    await encoded.prepare(history)
    assert "image_url" not in encoded.messages_json(history)


@pytest.mark.parametrize(
    ("base_url", "model", "expected"),
    [
        ("https://api.openai.com/v1", "gpt-4o-mini", True),
        ("https://api.openai.com/v1", "gpt-4.1", True),
        ("https://api.openai.com/v1", "o3-mini", False),
        ("https://api.openai.com/v1", "gpt-4o-mini-tts", False),
        ("https://api.openai.com/v1", "gpt-3.5-turbo", False),
        ("https://openrouter.ai/api/v1", "openai/gpt-4o-mini", True),
        ("https://openrouter.ai/api/v1", "deepseek/deepseek-chat", False),
        ("https://api.deepseek.com/v1", "deepseek-chat", False),
        ("http://127.0.0.1:11434/v1", "llava", False),
        ("https://api.openai.com/v1", "", False),
    ],
)
def test_images_start_on_only_for_models_known_to_see(base_url: str, model: str, expected: bool) -> None:
    assert images_by_default(base_url, model) is expected


def test_each_preset_says_what_its_model_does() -> None:
    from core.bots.presets import _CLOUD

    assert {p.key: p.images for p in _CLOUD} == {
        p.key: images_by_default(p.base_url, p.model) for p in _CLOUD
    }

"""Images a person sent, shown to a model that takes images (docs/models.md#images).

What came in is saved in the bot's workspace under `inbox/<conversation>/` and the person's words name each
attachment with a marker: `[image: inbox/c_…/12-1.jpg]` (relative to the workspace) or, in a task's brief,
the same path made absolute. A marker is shown to the model only when its file is really there: it resolves
(symlinks followed) inside the workspace's `inbox/` folder, starts with a PNG, JPEG, GIF or WebP signature
(the media type comes from those bytes, never the name) and is at most 5 MB. Anything else stays plain text
with a short note after the marker saying why, so the model does not guess at what it cannot see.

Reading files is blocking: `load_images` is meant for a worker thread (`EncodedHistory.prepare` runs it
with `asyncio.to_thread`), never the loop.
"""

from __future__ import annotations

import base64
import os
import re
import stat
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

INBOX = "inbox"  # core/channels/inbox.py saves attachments there; the desktop composer does the same
MAX_IMAGE_BYTES = 5 * 1024 * 1024
# What one request carries at most, newest images first: a long chat with many photos must not grow every
# later request past what the model's server accepts (tens of MB).
REQUEST_IMAGES = 10
REQUEST_IMAGE_BYTES = 20 * 1024 * 1024

_MARKER = re.compile(r"\[image: ([^\]\n]+)\]")
_HEAD_BYTES = 12  # enough for every signature below (WebP's is the longest: RIFF, 4 size bytes, WEBP)


@dataclass(frozen=True, slots=True)
class ImageText:
    """A user text as a model that takes images reads it: `text` is the words with a note after each marker
    that could not be shown, `urls` the `data:` URLs of those that could, in marker order."""

    text: str
    urls: tuple[str, ...] = ()


class ImageRefused(Exception):
    """Why a marker's file is not shown; `note` is what the model reads after the marker."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.note = f"[image not shown: {why}]"


def has_image_marker(text: str) -> bool:
    """Cheap enough for the loop: only texts that name an image are worth a trip to a worker thread."""
    return "[image: " in text and _MARKER.search(text) is not None


def media_type(head: bytes) -> str | None:
    """The image type the first bytes say, or None when they are not a PNG, JPEG, GIF or WebP."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


class ImageCache:
    """Data URLs of images read recently, keyed by real path, size and modification time (a file changed in
    place is read again). Bounded both ways: a few entries and a few MB of text, least recently used first
    out, so a session that saw photos does not keep them all while it waits."""

    def __init__(self, max_entries: int = 16, max_chars: int = 8 * 1024 * 1024) -> None:
        self._max_entries = max_entries
        self._max_chars = max_chars
        self._urls: OrderedDict[tuple[str, int, int], str] = OrderedDict()
        self._chars = 0
        self.reads = 0  # files actually read (what the cache saved is visible to tests and benchmarks)

    def get(self, key: tuple[str, int, int]) -> str | None:
        url = self._urls.get(key)
        if url is not None:
            self._urls.move_to_end(key)
        return url

    def put(self, key: tuple[str, int, int], url: str) -> None:
        if len(url) > self._max_chars:
            return
        old = self._urls.pop(key, None)
        if old is not None:
            self._chars -= len(old)
        self._urls[key] = url
        self._chars += len(url)
        while len(self._urls) > self._max_entries or self._chars > self._max_chars:
            _, dropped = self._urls.popitem(last=False)
            self._chars -= len(dropped)

    def __len__(self) -> int:
        return len(self._urls)


def resolve_in_inbox(written: str, workspace: Path) -> Path:
    """The real path of a marker's file, which must lie inside the workspace's `inbox/` folder. A relative
    path is the workspace's; an absolute one must name the same folder. Symlinks are followed first, so one
    pointing out of the inbox is refused like a path that is outside it."""
    inbox = Path(os.path.realpath(workspace / INBOX))
    path = Path(written)
    real = Path(os.path.realpath(path if path.is_absolute() else workspace / path))
    if real == inbox or not real.is_relative_to(inbox):
        raise ImageRefused("only files in the inbox folder of the bot's workspace are shown")
    return real


def read_image(real: Path, cache: ImageCache | None = None) -> tuple[str, int]:
    """The file as a `data:` URL, and its size. Opened without blocking (a FIFO must not hang the thread)
    and checked on the open file: a regular file, at most 5 MB, with an image signature."""
    try:
        fd = os.open(
            real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
        )
    except FileNotFoundError:
        raise ImageRefused("the file is not there") from None
    except OSError:
        raise ImageRefused("the file could not be opened") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ImageRefused("it is not a file")
        if info.st_size > MAX_IMAGE_BYTES:
            raise ImageRefused(f"it is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
        key = (str(real), info.st_size, info.st_mtime_ns)
        if cache is not None and (url := cache.get(key)) is not None:
            return url, info.st_size
        try:
            data = file.read(MAX_IMAGE_BYTES + 1)
        except OSError:
            raise ImageRefused("the file could not be read") from None
    if len(data) > MAX_IMAGE_BYTES:  # it grew after the check
        raise ImageRefused(f"it is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
    kind = media_type(data[:_HEAD_BYTES])
    if kind is None:
        raise ImageRefused("it is not a PNG, JPEG, GIF or WebP image")
    url = f"data:{kind};base64,{base64.b64encode(data).decode('ascii')}"
    if cache is not None:
        cache.reads += 1
        cache.put(key, url)
    return url, len(data)


def load_images(
    texts: Sequence[str], workspace: Path, cache: ImageCache | None = None
) -> dict[str, ImageText]:
    """Each text with image markers as the model reads it. `texts` are oldest first; the newest images are
    shown first, up to REQUEST_IMAGES and REQUEST_IMAGE_BYTES in all, and older ones beyond that are named
    with a note, as is an image named again before its last mention. Blocking: run it in a worker thread."""
    shown = 0
    total = 0
    # A file named twice (a task's brief names the person's images again by their absolute paths) is sent
    # once, where it is named last.
    seen: set[Path] = set()
    # (text index, marker index) -> data URL or the note to put after the marker
    outcome: dict[tuple[int, int], str | ImageRefused] = {}
    for t in range(len(texts) - 1, -1, -1):
        markers = list(_MARKER.finditer(texts[t]))
        for m in range(len(markers) - 1, -1, -1):
            try:
                if shown >= REQUEST_IMAGES:
                    raise ImageRefused("only the latest images are sent with a request")
                real = resolve_in_inbox(markers[m].group(1).strip(), workspace)
                if real in seen:
                    raise ImageRefused("it is the same image as one named further on")
                url, size = read_image(real, cache)
                if total + size > REQUEST_IMAGE_BYTES:
                    raise ImageRefused("only the latest images are sent with a request")
            except ImageRefused as refused:
                outcome[(t, m)] = refused
                continue
            shown += 1
            total += size
            seen.add(real)
            outcome[(t, m)] = url
    found: dict[str, ImageText] = {}
    for t, text in enumerate(texts):
        pieces: list[str] = []
        urls: list[str] = []
        end = 0
        for m, marker in enumerate(_MARKER.finditer(text)):
            result = outcome[(t, m)]
            pieces.append(text[end : marker.end()])
            end = marker.end()
            if isinstance(result, ImageRefused):
                pieces.append(f" {result.note}")
            else:
                urls.append(result)
        pieces.append(text[end:])
        found[text] = ImageText("".join(pieces), tuple(urls))
    return found

"""Download a WeChat attachment (image, voice, file, video) from iLink's CDN, decrypt it and keep it in a
folder under a safe name.

The CDN holds every attachment encrypted with AES-128-ECB and PKCS#7 padding under a per-attachment key that
comes with the message (docs/channels.md#media). Everything that can go wrong is one `MediaError`
whose reason is a sentence a person can read: the chat shows it in place of the attachment.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import os
import re
import secrets
import threading
import unicodedata
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import httpx

from core.agent.http_warmup import shared_ssl_context
from core.channels.wechat.frames import MediaRef

MAX_MEDIA_BYTES = 50 * 1024 * 1024
DOWNLOAD_TIMEOUT_S = 30.0
AES_BLOCK = 16
MAX_NAME_CHARS = 120
# ext4 and most file systems take 255 bytes per name; a CJK name of 120 characters is 360 bytes in UTF-8,
# and the `-<n>` that keeps names apart needs room too.
MAX_NAME_BYTES = 200
MAX_SAME_NAME = 1000
_CHUNK = 64 * 1024
# What JavaScript's encodeURIComponent keeps besides what `quote` always keeps (letters, digits, _.-~).
_URI_COMPONENT_SAFE = "!*'()"

_KIND_EXT = {"image": "jpg", "voice": "silk", "video": "mp4", "file": "bin"}
_KIND_WORD = {"image": "image", "voice": "voice message", "video": "video", "file": "file"}
_HEX_KEY = re.compile(r"[0-9a-fA-F]{32}")
# Characters Windows refuses in a name, and control characters everywhere.
_UNSAFE_CHARS = re.compile(r'[<>:"|?*\x00-\x1f\x7f]')
_WINDOWS_DEVICES = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{n}" for n in range(1, 10)), *(f"lpt{n}" for n in range(1, 10))}
)
# Placing a file (check the name, compare, replace) must not interleave with another placement in the same
# process, or two fetches could both take the same free name.
_PLACING = threading.Lock()


class MediaError(Exception):
    """An attachment that could not be fetched; `reason` says why in words a person reads."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# ---- keys, URLs and names (pure; the unit tests read them directly) -----------------------------------


def parse_aes_key(encoded: str) -> bytes:
    """The 16-byte key from a `MediaRef.aes_key`. Clients send base64 of the raw 16 bytes (images) or base64
    of the key's 32 hex digits (files, voice, video); an image's `aeskey` field is the bare 32 hex digits."""
    text = "".join(encoded.split())
    if not text:
        raise MediaError("it came without a key to decrypt it")
    if _HEX_KEY.fullmatch(text):
        return bytes.fromhex(text)
    try:
        decoded = base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=False)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) == AES_BLOCK:
        return decoded
    if len(decoded) == 2 * AES_BLOCK and _HEX_KEY.fullmatch(decoded.decode("ascii", "replace")):
        return bytes.fromhex(decoded.decode("ascii"))
    raise MediaError("its key is not a valid AES-128 key (16 bytes, or 32 hex digits, in base64)")


def download_url(ref: MediaRef, cdn_url: str) -> str:
    """`ref.full_url` when the platform gave one, else the CDN's download route. The item field is named
    `encrypt_query_param` but the query parameter is `encrypted_query_param`; the value is base64-like
    (`+`, `/`, `=`), so it is percent-encoded the way the plugin's encodeURIComponent does, or `+` would
    arrive as a space."""
    if ref.full_url:
        return ref.full_url
    if not ref.encrypted_query_param:
        raise MediaError("it came without a download address")
    param = quote(ref.encrypted_query_param, safe=_URI_COMPONENT_SAFE)
    return f"{cdn_url.rstrip('/')}/download?encrypted_query_param={param}"


def ext_for(kind: str, head: bytes) -> str:
    """The extension for an attachment without a name: for an image what its first bytes say it is (JPEG
    when unsure), else what the kind implies."""
    if kind == "image":
        if head.startswith(b"\x89PNG\r\n\x1a\n"):
            return "png"
        if head.startswith((b"GIF87a", b"GIF89a")):
            return "gif"
        if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
            return "webp"
        return "jpg"
    return _KIND_EXT.get(kind, "bin")


def _truncate(name: str, tag: str = "") -> str:
    """`name` with `tag` before its extension, in at most MAX_NAME_CHARS characters and MAX_NAME_BYTES UTF-8
    bytes: the stem is cut, never a short extension or the tag."""
    dot = name.rfind(".")
    ext = name[dot:] if dot > 0 and len(name) - dot <= 16 else ""
    stem = name[: len(name) - len(ext)]

    def fits(candidate: str) -> bool:
        return len(candidate) <= MAX_NAME_CHARS and len(candidate.encode()) <= MAX_NAME_BYTES

    while stem and not fits(stem + tag + ext):
        stem = stem[:-1]
    stem = stem.rstrip(" .")
    return stem + tag + ext if stem else (tag.lstrip("-") + ext if tag else ext.lstrip("."))


def safe_name(name: str) -> str:
    """A file name that stays in its folder on every system, or '' when nothing usable is left: only the
    last path part, no control or Windows-reserved characters, no leading dots (hidden files, `..`), no
    trailing dots or spaces, no device names such as `CON`, at most 120 characters."""
    name = unicodedata.normalize("NFC", name)
    name = re.split(r"[/\\]", name)[-1]
    name = _UNSAFE_CHARS.sub("_", name).strip()
    name = name.lstrip(".").rstrip(" .")
    if not name:
        return ""
    if name.split(".", 1)[0].strip().lower() in _WINDOWS_DEVICES:
        name = f"_{name}"
    return _truncate(name)


def file_name_for(ref: MediaRef, kind: str, stem: str, head: bytes) -> str:
    """What the attachment is called in its folder: the sender's file name made safe, else `<stem>.<ext>`."""
    named = safe_name(ref.file_name)
    if named:
        return named
    return _truncate(f"{safe_name(stem) or 'media'}.{ext_for(kind, head)}")


def numbered(name: str, n: int) -> str:
    """`report.pdf` -> `report-<n>.pdf`."""
    return _truncate(name, f"-{n}") if n else name


def decrypt(ciphertext: bytes, key: bytes) -> bytes:
    """AES-128-ECB with PKCS#7 padding, as the CDN stores attachments (the protocol's `encrypt_type` 1)."""
    # Loaded here rather than at import: the cryptography bindings take ~60 ms, which start-up should not pay.
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    if len(key) != AES_BLOCK:
        raise MediaError("its key is not a valid AES-128 key (16 bytes, or 32 hex digits, in base64)")
    if not ciphertext or len(ciphertext) % AES_BLOCK:
        raise MediaError("the download is not whole encrypted blocks (damaged, or not encrypted)")
    decryptor = Cipher(algorithms.AES(key), modes.ECB()).decryptor()
    padded = decryptor.update(ciphertext) + decryptor.finalize()
    unpadder = padding.PKCS7(AES_BLOCK * 8).unpadder()
    try:
        return unpadder.update(padded) + unpadder.finalize()
    except ValueError:
        raise MediaError("it did not decrypt with its key (a wrong key, or a damaged download)") from None


# ---- the folder ---------------------------------------------------------------------------------------


def _same_file(path: Path, data: bytes) -> bool:
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size != len(data):
            return False
        return path.read_bytes() == data
    except OSError:
        return False


def place(data: bytes, dest_dir: Path, name: str) -> Path:
    """Write `data` as `name` in `dest_dir`, or as `name-1`, `name-2`, ... when another file has the name.
    A file with the same name and the same bytes is the same attachment fetched again: it is returned
    as it is. The bytes land under a temporary name first and are renamed in one step, so the folder never
    holds half a file under the real name."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    temp = dest_dir / f".errand-{secrets.token_hex(8)}.part"
    try:
        with open(temp, "xb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        with _PLACING:
            for n in range(MAX_SAME_NAME):
                target = dest_dir / numbered(name, n)
                if _same_file(target, data):
                    return target
                if not os.path.lexists(target):
                    os.replace(temp, target)
                    return target
        raise MediaError(f"{dest_dir} already holds {MAX_SAME_NAME} different files named like {name}")
    finally:
        temp.unlink(missing_ok=True)


def _decrypt_and_place(
    ciphertext: bytes, key: bytes | None, ref: MediaRef, kind: str, dest_dir: Path, stem: str
) -> Path:
    data = ciphertext if key is None else decrypt(ciphertext, key)
    return save(data, dest_dir, kind=kind, stem=stem, file_name=ref.file_name)


def save(data: bytes, dest_dir: Path, *, kind: str, stem: str, file_name: str = "") -> Path:
    """An attachment's bytes in `dest_dir` under its safe, stable name (the sender's, else `<stem>.<ext>`);
    for every platform that downloads attachments (Feishu's and Telegram's too). Blocking: call it in a
    worker thread."""
    ref = MediaRef(encrypted_query_param="", aes_key="", full_url="", file_name=file_name)
    try:
        return place(data, dest_dir, file_name_for(ref, kind, stem, data[:16]))
    except OSError as exc:
        raise MediaError(f"it could not be saved in {dest_dir}: {exc.strerror or exc}") from exc


# ---- the download -------------------------------------------------------------------------------------


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):g} MB" if n >= 1024 * 1024 else f"{n / 1024:g} KB"


class MediaFetcher:
    """Fetches attachments from one CDN. `transport` lets tests and benchmarks use an in-process transport;
    `timeout_s` bounds each wait on the network (connecting, and each gap between received chunks)."""

    def __init__(
        self,
        cdn_url: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout_s: float = DOWNLOAD_TIMEOUT_S,
        max_bytes: int = MAX_MEDIA_BYTES,
    ) -> None:
        self.cdn_url = cdn_url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self._transport = transport
        self._client: httpx.AsyncClient | None = None  # made at the first download, not at start-up

    @property
    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                transport=self._transport,
                timeout=self.timeout_s,
                follow_redirects=True,
                verify=shared_ssl_context(),
            )
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def fetch(self, ref: MediaRef, kind: str, dest_dir: Path, *, stem: str) -> Path:
        """Download the attachment `ref` of `kind` ("image", "voice", "video", "file"), decrypt it and keep
        it in `dest_dir`; its path. `stem` names it when the sender gave no file name (e.g. the message
        id). Fetching the same attachment again into the same folder gives the same path."""
        word = _KIND_WORD.get(kind, "attachment")
        try:
            # An image sent without any key is stored plain on the CDN (the plugin downloads it as is);
            # every other kind is always encrypted.
            key = None if kind == "image" and not ref.aes_key.strip() else parse_aes_key(ref.aes_key)
            url = download_url(ref, self.cdn_url)
            ciphertext = await self._download(url, encrypted=key is not None)
            return await asyncio.to_thread(_decrypt_and_place, ciphertext, key, ref, kind, dest_dir, stem)
        except MediaError as exc:
            raise MediaError(f"The {word} could not be fetched from WeChat: {exc.reason}.") from exc

    async def _download(self, url: str, *, encrypted: bool) -> bytes:
        if urlsplit(url).scheme not in ("http", "https"):
            raise MediaError("its download address is not a web address")
        # PKCS#7 adds up to one block, so a file of exactly the limit still fits.
        limit = self.max_bytes + (AES_BLOCK if encrypted else 0)
        too_large = f"it is larger than {_size(self.max_bytes)}, the most we download"
        try:
            async with self._http.stream("GET", url) as response:
                if response.status_code != 200:
                    raise MediaError(f"WeChat's file server answered HTTP {response.status_code}")
                declared = response.headers.get("Content-Length", "")
                if declared.isdigit() and int(declared) > limit:
                    raise MediaError(too_large)
                return await _read_at_most(response.aiter_bytes(_CHUNK), limit, too_large)
        except httpx.TimeoutException:
            raise MediaError(f"WeChat's file server did not answer within {self.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise MediaError(f"WeChat's file server could not be reached ({type(exc).__name__})") from None


async def _read_at_most(chunks: AsyncIterator[bytes], limit: int, too_large: str) -> bytes:
    received: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            # Leaving the stream here closes the connection: the rest is never read.
            raise MediaError(too_large)
        received.append(chunk)
    return b"".join(received)

"""A fake of iLink's media CDN on 127.0.0.1 (aiohttp), for tests and benchmarks.

`host(plain)` encrypts a blob the way WeChat's CDN stores it (AES-128-ECB, PKCS#7) and gives the `MediaRef`
a message would carry. It serves each blob at `/download?encrypted_query_param=<param>` (the param looks
like base64, `+`, `/` and `=` included, so a client that does not percent-encode it misses) and, for refs
made with `full_url=True`, at `/full/<n>` only.

- `fail_next(status)`: the next download answers that HTTP status.
- `hang_next()`: the next download sends nothing until the fake shuts down (the client's time-out ends it).
- `downloads` counts download requests, `requests` keeps each one's path and query.

The encryption here is written out with `cryptography` on purpose rather than taken from
`core.channels.wechat.media`, so a mistake there cannot hide in a matching mistake here.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
from dataclasses import dataclass
from types import TracebackType
from typing import Literal, Self
from urllib.parse import quote

from aiohttp import web
from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from core.channels.wechat.frames import MediaRef

KeyForm = Literal["raw", "hex", "none"]


@dataclass
class _Blob:
    ciphertext: bytes
    chunked: bool
    full_only: bool


def encrypt(plain: bytes, key: bytes) -> bytes:
    padder = padding.PKCS7(128).padder()
    padded = padder.update(plain) + padder.finalize()
    encryptor = Cipher(algorithms.AES(key), modes.ECB()).encryptor()
    return encryptor.update(padded) + encryptor.finalize()


def encode_key(key: bytes, key_form: KeyForm) -> str:
    """`aes_key` as clients send it: base64 of the raw bytes, or base64 of the key's hex digits ('' for a
    plain blob)."""
    if key_form == "none":
        return ""
    return base64.b64encode(key if key_form == "raw" else key.hex().encode()).decode()


class FakeILinkCdn:
    def __init__(self) -> None:
        self.downloads = 0
        self.requests: list[tuple[str, dict[str, str]]] = []
        self._blobs: dict[str, _Blob] = {}
        self._faults: list[int | Literal["hang"]] = []
        self._ids = itertools.count(1)
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    # ---- what a test does ---------------------------------------------------------------------------

    def host(
        self,
        plain: bytes,
        *,
        key: bytes | None = None,
        key_form: KeyForm = "raw",
        file_name: str = "",
        full_url: bool = False,
        chunked: bool = False,
        served_key: bytes | None = None,
    ) -> MediaRef:
        """Store `plain` encrypted with `key` (random when None) and give the ref that fetches it.
        `key_form="none"` stores it unencrypted with no key in the ref, as some images come; `served_key`
        encrypts with a different key than the ref names (a wrong key); `chunked` sends the body without a
        Content-Length."""
        key = key if key is not None else os.urandom(16)
        n = next(self._ids)
        # The real param is opaque base64-like text; `+`, `/` and `=` must survive the query string.
        param = f"Zm9v+blob/{n}=="
        stored = plain if key_form == "none" else encrypt(plain, served_key or key)
        self._blobs[param] = _Blob(stored, chunked, full_only=full_url)
        return MediaRef(
            encrypted_query_param=param,
            aes_key=encode_key(key, key_form),
            full_url=f"{self.base_url}/full/{n}?p={quote(param, safe='')}" if full_url else "",
            file_name=file_name,
        )

    def fail_next(self, status: int) -> None:
        self._faults.append(status)

    def hang_next(self) -> None:
        self._faults.append("hang")

    # ---- server -------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/download", self._download)
        app.router.add_get("/full/{n}", self._full)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _download(self, request: web.Request) -> web.StreamResponse:
        param = request.query.get("encrypted_query_param", "")
        blob = self._blobs.get(param)
        return await self._serve(request, None if blob is None or blob.full_only else blob)

    async def _full(self, request: web.Request) -> web.StreamResponse:
        blob = self._blobs.get(request.query.get("p", ""))
        return await self._serve(request, blob if blob is not None and blob.full_only else None)

    async def _serve(self, request: web.Request, blob: _Blob | None) -> web.StreamResponse:
        self.downloads += 1
        self.requests.append((request.path, dict(request.query)))
        if self._faults:
            fault = self._faults.pop(0)
            if fault == "hang":
                await self._closing.wait()
                return web.Response(status=503, text="shutting down")
            return web.Response(status=fault, text="fault")
        if blob is None:
            return web.Response(status=404, text="no such media")
        if not blob.chunked:
            return web.Response(body=blob.ciphertext, content_type="application/octet-stream")
        response = web.StreamResponse(headers={"Content-Type": "application/octet-stream"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            for start in range(0, len(blob.ciphertext), 4096):
                await response.write(blob.ciphertext[start : start + 4096])
            await response.write_eof()
        except ConnectionError:
            pass  # a client that stops reading past its limit hangs up mid-body
        return response

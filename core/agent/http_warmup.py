"""Getting the HTTP stack ready before the first model call, off the event loop.

One TLS context serves every model endpoint: building one loads the CA bundle (about 70 ms), and done per
client it stalled the loop each time a bot first talked to its model. `warm_up` builds it while the host
starts."""

from __future__ import annotations

import importlib
import ssl
from functools import cache

import httpx


@cache
def shared_ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


# What httpcore imports on its first request under asyncio (the anyio backend its locks and sockets use):
# about 40 ms, paid on the loop inside the first model request unless imported here first.
FIRST_REQUEST_MODULES = ("anyio._backends._asyncio", "anyio.streams.tls", "httpcore._backends.anyio")


def warm_up() -> None:
    """Build the shared context and the first transport (its first use imports httpcore's connection
    pool, another ~30 ms), and import what the first request would. Call it from a worker thread."""
    httpx.AsyncHTTPTransport(verify=shared_ssl_context())
    for module in FIRST_REQUEST_MODULES:
        importlib.import_module(module)

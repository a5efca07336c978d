"""One TLS context for every model endpoint. Building one loads the CA bundle (about 70 ms): done per
client it stalled the event loop each time a bot first talked to its model, so it is built once, off the
loop, while the host starts (`warm_up`), and shared."""

from __future__ import annotations

import ssl
from functools import cache

import httpx


@cache
def shared_ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def warm_up() -> None:
    """Build the shared context now, and the first transport (its first use imports httpcore's connection
    pool, another ~30 ms); call it from a worker thread."""
    httpx.AsyncHTTPTransport(verify=shared_ssl_context())

"""Getting the HTTP stack ready before the first model call, off the event loop.

One TLS context serves every model endpoint: building one loads the CA bundle (about 70 ms), and done per
client it stalled the loop each time a bot first talked to its model. `warm_up` builds it while the host
starts."""

from __future__ import annotations

import ssl
from functools import cache

import httpx


@cache
def shared_ssl_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def warm_up() -> None:
    """Build the shared context and the first transport (its first use imports httpcore's connection
    pool, another ~30 ms). Call it from a worker thread."""
    httpx.AsyncHTTPTransport(verify=shared_ssl_context())

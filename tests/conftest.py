"""Fixtures for every test directory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aiohttp import web_app


@pytest.fixture(autouse=True)
def _forget_aiohttp_handlers() -> Iterator[None]:
    """aiohttp caches each route handler with its middlewares in a module-level LRU of 1,024 entries; the
    handlers are bound methods of an ApiServer, so every test's server, and its whole Host, stayed alive
    for the rest of the run. Hundreds of live hosts made each later garbage collection (pytest runs one
    after every test) take seconds. One process has one server, so only tests need this."""
    yield
    web_app._cached_build_middleware.cache_clear()

"""A fake of the three search services on 127.0.0.1, for web search's tests (docs/web-search.md).

One server answers each service's search in that service's own shape, with the hits a test sets:

- SearXNG: `GET /search?q=…&format=json` -> `{"results": [{"title", "url", "content"}]}`; 403 unless
  `format=json` (as a server without JSON turned on answers);
- Brave Search: `GET /res/v1/web/search?q=…&count=N` with `X-Subscription-Token` ->
  `{"web": {"results": [{"title", "url", "description"}]}}` (matched words in `<strong>`);
- Tavily: `POST /search` with `Authorization: Bearer <key>` and `{"query", "max_results"}` ->
  `{"results": [{"title", "url", "content"}]}`.

A wrong key gets 401; `status` answers every search with that status instead; `body` sends that text.
Each request is kept in `requests` as (service, query, count).

    async with FakeSearch(key="tvly-test") as server:
        server.hits = [("Errand", "https://example.com/errand", "A desktop assistant")]
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Self

from aiohttp import web

__all__ = ["FakeSearch"]


class FakeSearch:
    def __init__(self, *, key: str = "") -> None:
        self.key = key
        self.hits: list[tuple[str, str, str]] = []
        self.status = 200
        self.body: str | None = None
        self.requests: list[tuple[str, str, int]] = []
        self._runner: web.AppRunner | None = None
        self._port: int | None = None

    @property
    def url(self) -> str:
        if self._port is None:
            raise RuntimeError("FakeSearch is not running")
        return f"http://127.0.0.1:{self._port}"

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/search", self._searxng)
        app.router.add_post("/search", self._tavily)
        app.router.add_get("/res/v1/web/search", self._brave)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self._port = int(runner.addresses[0][1])
        self._runner = runner
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # -- the services ------------------------------------------------------------------------------------

    async def _searxng(self, request: web.Request) -> web.Response:
        self.requests.append(("searxng", request.query.get("q", ""), 0))
        if request.query.get("format") != "json":
            return web.Response(status=403, text="Forbidden")
        results = [{"title": t, "url": u, "content": s, "engine": "fake"} for t, u, s in self.hits]
        return self._answer({"query": request.query.get("q", ""), "results": results})

    async def _brave(self, request: web.Request) -> web.Response:
        self.requests.append(("brave", request.query.get("q", ""), int(request.query.get("count", "20"))))
        if request.headers.get("X-Subscription-Token") != self.key:
            return web.json_response(
                {"type": "ErrorResponse", "error": {"code": "SUBSCRIPTION_TOKEN_INVALID"}}, status=401
            )
        results = [
            {
                "title": t,
                "url": u,
                "description": s.replace(
                    request.query.get("q", "\0"), f"<strong>{request.query.get('q')}</strong>"
                ),
            }
            for t, u, s in self.hits
        ]
        return self._answer({"type": "search", "web": {"type": "search", "results": results}})

    async def _tavily(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(("tavily", str(body.get("query", "")), int(body.get("max_results", 5))))
        if request.headers.get("Authorization") != f"Bearer {self.key}":
            return web.json_response(
                {"detail": {"error": "Unauthorized: missing or invalid API key."}}, status=401
            )
        results = [{"title": t, "url": u, "content": s, "score": 0.9} for t, u, s in self.hits]
        return self._answer(
            {"query": body.get("query"), "results": results[: int(body.get("max_results", 5))]}
        )

    def _answer(self, payload: dict[str, object]) -> web.Response:
        if self.status != 200:
            return web.Response(status=self.status, text=self.body or "error")
        if self.body is not None:
            return web.Response(text=self.body, content_type="application/json")
        return web.Response(text=json.dumps(payload), content_type="application/json")

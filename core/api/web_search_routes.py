"""The web search routes of the local API (docs/web-search.md#the-api).

GET /api/web-search -> the setup: which service, its address, whether a key is kept, what searches use
PUT /api/web-search -> the same, after saving {provider, url?, key?} whole (provider null: no web search)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.api import web
from core.api.validation import json_object
from core.web_search.settings import KEPT_KEY
from core.web_search.views import WebSearchView

if TYPE_CHECKING:
    from core.host import Host


def web_search_json(view: WebSearchView) -> dict[str, Any]:
    active = (
        None
        if view.active_provider is None or view.problem
        else {
            "provider": view.active_provider,
            "url": view.active_url,
        }
    )
    return {
        "provider": view.provider,
        "url": view.url,
        "key": KEPT_KEY if view.has_key else "",
        "active": active,
        "fromEnvironment": view.from_environment,
        "problem": view.problem,
    }


def add_web_search_routes(router: web.Router, host: Host) -> None:
    async def get_setup(request: web.Request) -> web.Response:
        return web.json_response(web_search_json(await host.web_search.view()))

    async def put_setup(request: web.Request) -> web.Response:
        body = await json_object(request)
        # What GET adds is read-only: sending a GET's answer back as it is must work.
        for shown in ("active", "fromEnvironment", "problem"):
            body.pop(shown, None)
        return web.json_response(web_search_json(await host.web_search.update(body)))

    router.add_get("/api/web-search", get_setup)
    router.add_put("/api/web-search", put_setup)

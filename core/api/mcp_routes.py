"""The MCP routes of the local API (docs/outside-tools.md#the-api): a bot's `mcpServers` config with the
state of each server, and saving it whole."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.api import web
from core.api.validation import json_object
from core.mcp.views import McpView

if TYPE_CHECKING:
    from core.host import Host


def mcp_json(view: McpView) -> dict[str, Any]:
    return {
        **view.config,
        "servers": [
            {
                "name": s.name,
                "state": s.state,
                "reason": s.reason,
                "stderr": list(s.stderr_tail),
                "tools": list(s.tools),
                "attempts": s.attempts,
            }
            for s in view.servers
        ],
    }


def add_mcp_routes(router: web.Router, host: Host) -> None:
    async def get_mcp(request: web.Request) -> web.Response:
        return web.json_response(mcp_json(await host.mcp.view(request.match_info["id"])))

    async def put_mcp(request: web.Request) -> web.Response:
        body = await json_object(request)
        # The state list GET adds is read-only: sending a GET's answer back as it is must work.
        body.pop("servers", None)
        return web.json_response(mcp_json(await host.mcp.replace(request.match_info["id"], body)))

    router.add_get("/api/bots/{id}/mcp", get_mcp)
    router.add_put("/api/bots/{id}/mcp", put_mcp)

"""A real MCP server for tests, written with the `mcp` SDK's own server API (FastMCP).

Run as a program: `python -m tests.fakes.mcp_server [options]`, over stdio (the default) or over streamable
HTTP on 127.0.0.1 (`--http`: the first line on stdout is its URL). Its faults are chosen on the command line:

  --garbage             print a line that is not an MCP message on stdout first
  --exit-at-once        write a reason to stderr and exit with status 2
  --hang                read stdin and never answer anything
  --wait-for FILE       start serving only once FILE exists (a test decides when it is "ready")
  --calls FILE          append every tool call to FILE as a JSON line (did a call reach the server?)
  --require-env N=V     refuse to start unless the environment has N set to V
  --require-header N=V  (HTTP) answer 401 to requests without header N: V

Tools: echo {text}, add {a, b} (read-only hint), slow {seconds}, grow {} (adds the tool `extra` and sends
tools/list_changed), fail {} (a tool error), picture {} (an image), die {} (the process exits at once).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from mcp.server.fastmcp import Context, FastMCP, Image
from mcp.types import ToolAnnotations

# A 1x1 PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def build(calls: Path | None) -> FastMCP:
    server = FastMCP("fake")

    def record(tool: str, arguments: dict[str, Any]) -> None:
        if calls is not None:
            with calls.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")

    @server.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        record("echo", {"text": text})
        return text

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def add(a: int, b: int) -> str:
        """Add two whole numbers."""
        record("add", {"a": a, "b": b})
        return str(a + b)

    @server.tool()
    async def slow(seconds: float) -> str:
        """Answer after a while."""
        record("slow", {"seconds": seconds})
        await asyncio.sleep(seconds)
        return "finally"

    @server.tool()
    async def grow(ctx: Context) -> str:  # type: ignore[type-arg]
        """Add the tool `extra`."""
        record("grow", {})

        @server.tool()
        def extra() -> str:
            """A tool that came later."""
            return "extra here"

        await ctx.session.send_tool_list_changed()
        return "grown"

    @server.tool()
    def fail() -> str:
        """Always fails."""
        record("fail", {})
        raise ValueError("the fake failed on purpose")

    @server.tool()
    def picture() -> Image:
        """A tiny picture."""
        return Image(data=PIXEL, format="png")

    @server.tool()
    def die() -> str:
        """Exit the server process at once."""
        record("die", {})
        os._exit(3)

    return server


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("--exit-at-once", action="store_true")
    parser.add_argument("--hang", action="store_true")
    parser.add_argument("--wait-for", type=Path)
    parser.add_argument("--calls", type=Path)
    parser.add_argument("--require-env", default="")
    parser.add_argument("--require-header", default="")
    args = parser.parse_args(argv)
    print("fake MCP server starting", file=sys.stderr, flush=True)
    if args.exit_at_once:
        print("fatal: no configuration found", file=sys.stderr, flush=True)
        sys.exit(2)
    if args.require_env:
        name, _, value = args.require_env.partition("=")
        if os.environ.get(name) != value:
            print(f"fatal: {name} is not set right", file=sys.stderr, flush=True)
            sys.exit(2)
    if args.hang:
        for _ in sys.stdin:
            pass
        time.sleep(3600)
    if args.wait_for is not None:
        while not args.wait_for.exists():
            time.sleep(0.02)  # a real slow start (npx downloading), ended by the test creating the file
    if args.garbage:
        print("Welcome to the fake server v1.0!", flush=True)
    server = build(args.calls)
    if not args.http:
        server.run("stdio")
        return
    serve_http(server, args.require_header)


def serve_http(server: FastMCP, require_header: str) -> None:
    import anyio
    import uvicorn
    from starlette.responses import PlainTextResponse

    app: Any = server.streamable_http_app()
    if require_header:
        name, _, value = require_header.partition("=")
        inner = app

        async def guarded(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
                if headers.get(name.lower()) != value:
                    await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
                    return
            await inner(scope, receive, send)

        app = guarded
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(uvicorn.Server(config).serve, [sock])


if __name__ == "__main__":
    main(sys.argv[1:])

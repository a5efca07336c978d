"""One MCP server of one bot, kept running while it is used (docs/outside-tools.md#a-servers-life).

It starts on first use, not with the app. An owner task holds the SDK's transport and session open; tool
calls come from the sessions' own tasks. When the server exits or its connection drops, the owner starts
it again after a pause that doubles (1 s up to 60 s); after `MAX_ATTEMPTS` failures in a row it stays
failed, with the reason and the last lines it wrote to stderr, until its settings are saved again.

A tool call that takes longer than the server's `timeout` fails alone: the server keeps running.

The `mcp` SDK takes about half a second to import: it is imported in a worker thread, and only once a
bot that has servers opens a session."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from core.mcp.config import McpServerConfig
from core.mcp.views import ServerState, ServerStatus
from core.version import __version__

if TYPE_CHECKING:
    from mcp import ClientSession, types

    from core.clock import Clock

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 6  # 1 + 2 + 4 + 8 + 16 s of pauses: a server that cannot start is given up on within a minute
_MAX_PAUSE_S = 60.0
_STEADY_S = 60.0  # a server that ran this long before it stopped starts again at the shortest pause
_STDERR_LINES = 20
_MAX_LOG_BYTES = 1_000_000
# The codes of the SDK's own errors: a request it stopped waiting for (HTTP's 408, as the SDK says it), and
# a connection that ended with requests still open (mcp.types.CONNECTION_CLOSED).
_TIMED_OUT = 408
_CLOSED = -32000


class McpCallError(Exception):
    """A call that did not get an answer (timeout, server gone, not running): the message says which."""


@dataclass(frozen=True, slots=True)
class McpTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    read_only_hint: bool = False


@dataclass(frozen=True, slots=True)
class CallOutcome:
    content: list[Any]  # the SDK's content blocks
    structured: Any
    is_error: bool


class McpConnection:
    def __init__(
        self,
        config: McpServerConfig,
        *,
        secrets: Callable[[], Any],
        cwd: Path,
        log_path: Path,
        clock: Clock,
        on_change: Callable[[], None],
    ) -> None:
        self.config = config
        self._secrets = secrets  # async () -> dict of env/header name -> value, read at every start
        self._cwd = cwd
        self._log_path = log_path
        self._clock = clock
        self._on_change = on_change
        self._state: ServerState = "stopped"
        self._reason = ""
        self._attempts = 0
        self._tools: tuple[McpTool, ...] = ()
        self.tools_version = 0  # bumped whenever the list of tools changes (a start, `list_changed`)
        self._session: ClientSession | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()  # set while running, and when a start attempt ended either way
        self._started_at = 0.0  # monotonic time of the current start attempt
        self._garbage: deque[str] = deque(maxlen=3)
        self._refreshing: asyncio.Future[None] | None = None

    # ---- what others read ---------------------------------------------------------------------------

    @property
    def state(self) -> ServerState:
        return self._state

    @property
    def tools(self) -> tuple[McpTool, ...]:
        return self._tools if self._state == "running" else ()

    def status(self) -> ServerStatus:
        return ServerStatus(
            self.config.name,
            self._state,
            self._reason,
            tuple(_tail(self._log_path, _STDERR_LINES)),
            tuple(t.name for t in self.tools),
            self._attempts,
        )

    def starting_since(self) -> float | None:
        """Monotonic time the current start attempt began, while it is starting."""
        return self._started_at if self._state == "starting" else None

    async def wait_ready(self, timeout_s: float) -> None:
        """Until it runs, or its start attempt ended, or `timeout_s` passed."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), timeout_s)

    # ---- life ---------------------------------------------------------------------------------------

    def ensure_started(self) -> None:
        """Start it unless it runs, is starting, or was given up on."""
        if self._owner is None and not self._stop.is_set() and not self.config.disabled:
            self._owner = asyncio.get_running_loop().create_task(self._run(), name=f"mcp {self.config.name}")

    def update_config(self, config: McpServerConfig) -> None:
        """Settings that do not change how the server is started (permission, time-outs). A server that was
        given up on is tried again: saving its settings is how a person says so."""
        self.config = config
        if self._owner is not None and self._owner.done() and not self._stop.is_set():
            self._owner, self._attempts = None, 0
            self.ensure_started()
        self._on_change()

    async def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        owner, self._owner = self._owner, None
        if owner is None:
            return
        if self._state != "running":
            owner.cancel()  # starting or pausing: nothing to finish
        try:
            await asyncio.wait_for(asyncio.shield(owner), timeout_s)
        except TimeoutError:
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
        except BaseException:
            pass
        self._set("stopped", "")

    async def _run(self) -> None:
        try:
            await self._keep_running()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug of ours: said in its state, never a silent "starting" forever
            log.exception("MCP server %s: its connection's owner failed", self.config.name)
            self._set("failed", f"Errand failed to run it: {type(exc).__name__}: {exc}")
        finally:
            self._ready.set()

    async def _keep_running(self) -> None:
        while not self._stop.is_set():
            self._started_at = self._clock.monotonic()
            self._ready.clear()
            self._set("starting", self._reason)
            try:
                await self._serve_once()
                reason = "the server stopped" + self._garbage_note()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                reason = _describe(exc, self.config) + self._garbage_note()
            finally:
                self._session = None
                self._ready.set()
            if self._stop.is_set():
                return
            ran_for = self._clock.monotonic() - self._started_at
            self._attempts = 1 if ran_for >= _STEADY_S else self._attempts + 1
            if self._attempts >= MAX_ATTEMPTS:
                self._set("failed", f"{reason}; gave up after {self._attempts} attempts")
                log.warning("MCP server %s gave up: %s", self.config.name, reason)
                return
            pause = min(_MAX_PAUSE_S, 2.0 ** (self._attempts - 1))
            self._set("failed", f"{reason}; starting again in {pause:g} s")
            log.info("MCP server %s stopped (%s); again in %g s", self.config.name, reason, pause)
            stop = asyncio.ensure_future(self._stop.wait())
            try:
                await asyncio.wait(
                    {stop, asyncio.ensure_future(self._clock.sleep(pause))}, return_when="FIRST_COMPLETED"
                )
            finally:
                stop.cancel()

    async def _serve_once(self) -> None:
        mcp = await _sdk()
        import anyio

        self._garbage.clear()
        async with contextlib.AsyncExitStack() as stack:
            read, write = await self._open_transport(stack, mcp)
            # The SDK does not say when a connection ends; its read stream ending does. The session reads
            # a stream this task fills from the transport's, so the end is seen here.
            closed = asyncio.Event()
            sink, session_read = anyio.create_memory_object_stream[Any](0)
            forwarder = asyncio.ensure_future(_forward(read, sink, closed))
            stack.callback(forwarder.cancel)
            session = await stack.enter_async_context(
                mcp.ClientSession(
                    session_read,
                    write,
                    read_timeout_seconds=timedelta(seconds=self.config.start_timeout_s),
                    message_handler=self._on_message,
                    client_info=mcp.types.Implementation(name="errand", version=__version__),
                )
            )
            await session.initialize()
            self._session = session
            await self._refresh_tools(session)
            self._attempts = 0
            self._set("running", "")
            self._ready.set()
            stop = asyncio.ensure_future(self._stop.wait())
            ended = asyncio.ensure_future(closed.wait())
            try:
                await asyncio.wait({stop, ended}, return_when="FIRST_COMPLETED")
            finally:
                stop.cancel()
                ended.cancel()

    async def _open_transport(self, stack: contextlib.AsyncExitStack, mcp: Any) -> tuple[Any, Any]:
        secrets: dict[str, str] = await self._secrets()
        config = self.config
        if config.transport == "stdio":
            errlog, cwd = await asyncio.to_thread(self._prepare_launch)
            stack.callback(errlog.close)
            params = mcp.StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env={name: secrets.get(name, "") for name in config.env_names} or None,
                cwd=str(cwd),
            )
            read, write = await stack.enter_async_context(mcp.stdio_client(params, errlog=errlog))
            return read, write
        import httpx

        http = await stack.enter_async_context(
            httpx.AsyncClient(
                headers={name: secrets.get(name, "") for name in config.header_names},
                timeout=httpx.Timeout(30.0, read=300.0),
                follow_redirects=False,
            )
        )
        streamable = importlib.import_module("mcp.client.streamable_http")
        read, write, _ = await stack.enter_async_context(
            streamable.streamable_http_client(config.url, http_client=http)
        )
        return read, write

    def _prepare_launch(self) -> tuple[TextIO, Path]:
        """The stderr log to append to, and the folder to start in (in a worker thread: both touch disk)."""
        cwd = Path(self.config.cwd).expanduser() if self.config.cwd else self._cwd
        return _open_log(self._log_path), cwd

    async def _on_message(self, message: Any) -> None:
        mcp = await _sdk()
        if isinstance(message, Exception):
            # A line on stdout that is not an MCP message (a server that prints its banner there).
            text = str(message).splitlines()
            self._garbage.append(_short(_input_value(str(message)) or (text[0] if text else repr(message))))
            return
        if isinstance(message, mcp.types.ServerNotification) and isinstance(
            message.root, mcp.types.ToolListChangedNotification
        ):
            session = self._session
            if session is not None and (self._refreshing is None or self._refreshing.done()):
                self._refreshing = asyncio.ensure_future(self._refresh_quietly(session))

    async def _refresh_quietly(self, session: ClientSession) -> None:
        try:
            await self._refresh_tools(session)
        except Exception:
            log.warning("MCP server %s: listing its tools again failed", self.config.name, exc_info=True)

    async def _refresh_tools(self, session: ClientSession) -> None:
        listed: list[types.Tool] = []
        cursor: str | None = None
        while True:
            page = await session.list_tools(cursor) if cursor else await session.list_tools()
            listed.extend(page.tools)
            cursor = page.nextCursor
            if not cursor or len(listed) > 500:
                break
        tools = tuple(
            McpTool(
                t.name,
                t.description or "",
                dict(t.inputSchema or {}),
                bool(t.annotations and t.annotations.readOnlyHint),
            )
            for t in listed
        )
        if tools != self._tools:
            self._tools = tools
            self.tools_version += 1
            self._on_change()

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> CallOutcome:
        session = self._session
        if session is None or self._state != "running":
            raise McpCallError(self._not_running())
        mcp = await _sdk()
        try:
            result = await session.call_tool(
                tool, dict(arguments), read_timeout_seconds=timedelta(seconds=self.config.call_timeout_s)
            )
        except mcp.McpError as exc:
            if exc.error.code == _TIMED_OUT:
                raise McpCallError(
                    f"{tool} did not answer within {self.config.call_timeout_s:g} s; the call was given up "
                    "(the server keeps running)"
                ) from exc
            if exc.error.code == _CLOSED:
                raise McpCallError(f"the server {self.config.name} stopped during the call") from exc
            raise McpCallError(f"the server refused the call: {exc.error.message}") from exc
        except (OSError, _closed_errors()) as exc:
            raise McpCallError(
                f"the server {self.config.name} is not reachable: {exc or type(exc).__name__}"
            ) from exc
        return CallOutcome(list(result.content), result.structuredContent, bool(result.isError))

    def _not_running(self) -> str:
        if self._state == "starting":
            return f"the server {self.config.name} is still starting; try again shortly"
        if self._state == "failed":
            return f"the server {self.config.name} is not running: {self._reason}"
        return f"the server {self.config.name} is not running"

    def _set(self, state: ServerState, reason: str) -> None:
        if (state, reason) == (self._state, self._reason):
            return
        had_tools = bool(self.tools)
        self._state, self._reason = state, reason
        if had_tools != bool(self.tools):
            self.tools_version += 1
        self._on_change()

    def _garbage_note(self) -> str:
        if not self._garbage:
            return ""
        return f" (it printed lines on stdout that are not MCP messages, e.g. {self._garbage[-1]!r})"


async def _sdk() -> Any:
    """The `mcp` package with its client parts, imported once in a worker thread."""
    loaded = _LOADED.get("mcp")
    if loaded is None:
        loaded = _LOADED["mcp"] = await asyncio.to_thread(_import_sdk)
    return loaded


_LOADED: dict[str, Any] = {}


def _import_sdk() -> Any:
    mcp = importlib.import_module("mcp")
    importlib.import_module("mcp.client.stdio")
    importlib.import_module("mcp.client.streamable_http")
    return mcp


async def _forward(source: Any, sink: Any, closed: asyncio.Event) -> None:
    import anyio

    try:
        async with sink:
            async for item in source:
                await sink.send(item)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
        pass
    finally:
        closed.set()


def _closed_errors() -> type[Exception]:
    import anyio

    return anyio.ClosedResourceError


def _describe(exc: BaseException, config: McpServerConfig) -> str:
    mcp = _LOADED.get("mcp")
    if mcp is not None and isinstance(exc, mcp.McpError):
        message = exc.error.message
        if exc.error.code == _TIMED_OUT:
            return f"it did not answer within {config.start_timeout_s:g} s of starting"
        if exc.error.code == _CLOSED:
            return (
                "it exited while starting"
                if config.transport == "stdio"
                else "the server closed the connection"
            )
        return f"it answered with an error: {message}"
    if isinstance(exc, FileNotFoundError) or (isinstance(exc, OSError) and exc.errno == 2):
        return f"the command {config.command!r} was not found; install it or give its full path"
    if isinstance(exc, PermissionError):
        return f"the command {config.command!r} cannot be run: {exc.strerror}"
    if isinstance(exc, BaseExceptionGroup):
        inner = exc.exceptions[0] if exc.exceptions else exc
        return _describe(inner, config)
    name = type(exc).__name__
    if name in ("ConnectError", "ConnectTimeout"):
        return f"could not connect to {config.url}"
    if name == "HTTPStatusError":
        return f"the server answered {exc}"  # httpx says the status and the URL
    return f"{name}: {exc}" if str(exc) else name


def _open_log(path: Path) -> TextIO:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.stat().st_size > _MAX_LOG_BYTES:
        path.write_text("")
    return path.open("a", encoding="utf-8", errors="replace")


def _tail(path: Path, lines: int) -> list[str]:
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 8192))
            data = f.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in data.splitlines() if line.strip()][-lines:]


def _input_value(message: str) -> str:
    marker = "input_value="
    at = message.find(marker)
    if at < 0:
        return ""
    value = message[at + len(marker) :].partition(", input_type=")[0]
    return value.strip("'\"")


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

"""The contract between the agent runtime and its tools.

A tool is a `ToolSpec`: a fixed model-facing name, a description, a pydantic model for its arguments and an
async handler. The runtime validates arguments itself, so bad arguments go back to the model as a tool
error (never an exception that ends the turn). A handler signals a failure the model should see by
raising `ToolError`.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

# A schema's defaults need pydantic's type adapter and its dataclass support: imported here, with the
# runtime, off the loop, and not inside the first turn.
from pydantic import BaseModel
from pydantic import type_adapter as _type_adapter  # noqa: F401
from pydantic._internal import _dataclasses as _pydantic_dataclasses  # noqa: F401

if TYPE_CHECKING:
    from core.agent.jobs import JobManager
    from core.agent.sandbox import PathGuard, ShellSandbox
    from core.agent.session_spec import SessionSpec
    from core.clock import Clock

SessionKind = Literal["chat", "task", "rule"]


class ToolError(Exception):
    """A failure the model should read and act on (bad path, refused write, timeout, ...)."""


class ApprovalGate(Protocol):
    """Where a call that needs a person waits (docs/permissions.md#approvals): a recursive delete, a write
    outside the workspace."""

    async def request(self, session_id: str, action: str, detail: str) -> bool:
        """True when a person approved; False when they refused or nobody answered in time."""
        ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    session_id: str
    session_kind: SessionKind
    cwd: Path
    guard: PathGuard
    shell: ShellSandbox
    jobs: JobManager
    clock: Clock
    approvals: ApprovalGate | None = None  # None: what needs a person is refused outright


Handler = Callable[[ToolContext, Any], Awaitable[str]]


@dataclass(frozen=True, slots=True)
class ToolEffects:
    """What one call of a tool would touch, as its arguments say (the guard judges it before the call runs:
    docs/guard.md). Paths as the model wrote them, relative to the session's folder or absolute."""

    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    command: str | None = None  # a shell command line
    network: bool = False  # it reaches another machine
    sends: bool = False  # what it sends there may change something (an MCP tool not marked read-only)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    description: str
    args_model: type[BaseModel]
    handler: Handler
    kinds: frozenset[SessionKind] = frozenset({"chat", "task", "rule"})
    # The schema itself, for a tool whose arguments another program defines (an MCP server's tool): then
    # `args_model` accepts any object and the handler checks it against this.
    parameters: dict[str, Any] | None = None
    # What a call would touch, from its validated arguments; None: nothing the guard judges (docs/guard.md).
    effects: Callable[[Any], ToolEffects] | None = None

    def json_schema(self) -> dict[str, Any]:
        """The arguments' JSON schema, built once per model (~1 ms each, 13 tools at every session open).
        Shared: read it, never change it."""
        if self.parameters is not None:
            return self.parameters
        return _schema_of(self.args_model)


class OutsideTools(Protocol):
    """Tools that come from outside the runtime and change while a session lives (a bot's MCP servers:
    docs/outside-tools.md; its skills: docs/skills.md). The session reads them again whenever `version`
    changes."""

    def version(self) -> Hashable: ...

    def tools(self) -> Sequence[ToolSpec]: ...

    def prompt_sections(self) -> Sequence[str]:
        """What the system prompt says of them (read at every request: keep it cheap)."""
        ...

    async def settle(self, now: float) -> None:
        """Before a turn's first request: wait a little for tools that are about to come (monotonic `now`)."""
        ...


class OutsideToolSource(Protocol):
    async def for_session(self, spec: SessionSpec) -> OutsideTools: ...


@functools.cache
def _schema_of(args_model: type[BaseModel]) -> dict[str, Any]:
    return args_model.model_json_schema()

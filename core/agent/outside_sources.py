"""Several sources of tools from outside as one (a bot's MCP servers and its skills): what the runtime
takes as its `outside_tools` (core.agent.tool_api)."""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING

from core.agent.tool_api import OutsideTools, OutsideToolSource, ToolSpec

if TYPE_CHECKING:
    from core.agent.session_spec import SessionSpec


class CombinedSource:
    def __init__(self, sources: Sequence[OutsideToolSource]) -> None:
        self._sources = tuple(sources)

    async def for_session(self, spec: SessionSpec) -> OutsideTools:
        parts = await asyncio.gather(*(source.for_session(spec) for source in self._sources))
        return CombinedTools(parts)


class CombinedTools:
    """One session's tools from every source; a name two sources give goes to the first."""

    def __init__(self, parts: Sequence[OutsideTools]) -> None:
        self._parts = tuple(parts)

    def version(self) -> Hashable:
        return tuple(part.version() for part in self._parts)

    def tools(self) -> list[ToolSpec]:
        return [tool for part in self._parts for tool in part.tools()]

    def prompt_sections(self) -> list[str]:
        return [section for part in self._parts for section in part.prompt_sections()]

    async def settle(self, now: float) -> None:
        await asyncio.gather(*(part.settle(now) for part in self._parts))

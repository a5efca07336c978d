"""What a session is: identity, kind, folder, model, permission, tools and prompt sections."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.agent.model_config import DEFAULT_RETRY, ModelConfig, RetryPolicy
from core.agent.tool_api import SessionKind, ToolSpec

if TYPE_CHECKING:
    from core.agent.sandbox import Permission


@dataclass(frozen=True, slots=True)
class SessionSpec:
    session_id: str
    kind: SessionKind
    bot_id: str
    cwd: Path
    model: ModelConfig
    permission: Permission
    prompt_sections: tuple[str, ...] = ()
    # None means every tool this session kind may have; otherwise the names the model is offered.
    allowed_tools: frozenset[str] | None = None
    extra_tools: tuple[ToolSpec, ...] = ()
    # A rule run that only looks (observe mode): tools from outside that could change something are left out.
    observing: bool = False
    retry: RetryPolicy = DEFAULT_RETRY

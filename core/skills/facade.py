"""The reads and commands the desktop UI uses for a bot's skills (docs/skills.md). `SkillsService`
implements it."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from core.skills.catalog import Scope, Skill
from core.skills.views import SkillsView


class SkillsFacade(Protocol):
    def root(self, bot_id: str, scope: Scope) -> Path:
        """The folder that holds the skills of `scope`, for a person to open."""
        ...

    async def view(self, bot_id: str) -> SkillsView: ...

    async def add_path(
        self, bot_id: str, path: Path, *, scope: Scope = "bot", replace: bool = False
    ) -> Skill:
        """Add the skill folder or .zip at `path`. InvalidInputError with the reason (nothing written);
        ConflictError when the name is taken and `replace` is false."""
        ...

    async def remove(self, bot_id: str, name: str, *, scope: Scope = "bot") -> None: ...

"""What the settings page and the API show of a bot's skills (docs/skills.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.skills.catalog import Scope, SkillProblem


@dataclass(frozen=True, slots=True)
class SkillInfo:
    name: str
    description: str
    scope: Scope
    folder: Path
    files: tuple[str, ...]  # beside SKILL.md, relative
    more_files: bool  # the list was cut


@dataclass(frozen=True, slots=True)
class SkillsView:
    bot_id: str
    skills: tuple[SkillInfo, ...]
    problems: tuple[SkillProblem, ...]
    prompt_chars: int  # what the list adds to every system prompt of the bot's sessions

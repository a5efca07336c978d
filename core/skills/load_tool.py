"""What the model sees of skills: their list in the system prompt, and `load_skill {name}` to read one
(docs/skills.md#what-the-model-sees)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from core.agent.tool_api import ToolContext, ToolError, ToolSpec
from core.skills.catalog import SkillCatalog, skill_files
from core.skills.skill_file import SKILL_FILE, SkillFileError, read_skill_file

LOAD_SKILL = "load_skill"

_SECTION_HEAD = (
    "Skills: instructions for particular kinds of work, written by the user or shared with them. When a "
    f"request matches a skill's description, call {LOAD_SKILL} with its name before you start, then follow "
    "what it says. Load only the skills you need."
)


class LoadSkillArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="The skill's name, as in the list of skills.")


def skills_section(catalog: SkillCatalog) -> str:
    """The system prompt's list of skills; empty without any."""
    if not catalog.skills:
        return ""
    lines = [f"- {s.name}: {s.description}" for s in catalog.skills]
    return "\n".join([_SECTION_HEAD, *lines])


def load_skill_tool(current: Callable[[], SkillCatalog]) -> ToolSpec:
    async def load(ctx: ToolContext, args: LoadSkillArgs) -> str:
        catalog = current()
        skill = catalog.find(args.name.strip())
        if skill is None:
            names = ", ".join(s.name for s in catalog.skills) or "none"
            raise ToolError(f"There is no skill named {args.name!r}. The skills are: {names}.")

        def read() -> tuple[str, list[str], bool]:
            parsed = read_skill_file(skill.folder)
            files, more = skill_files(skill.folder)
            return parsed.body, files, more

        try:
            body, files, more = await asyncio.to_thread(read)
        except SkillFileError as exc:
            raise ToolError(f"The skill {skill.name!r} cannot be read now: {exc}.") from exc
        head = [f"Skill {skill.name} (its folder: {skill.folder})"]
        if files:
            listed = ", ".join(files) + (", and more" if more else "")
            head.append(
                f"Files beside its {SKILL_FILE}, to read or run from that folder when the instructions say "
                f"so: {listed}"
            )
        return "\n".join(head) + "\n\n" + (body or "(The skill has no instructions beyond its description.)")

    return ToolSpec(
        name=LOAD_SKILL,
        description=(
            "Read a skill's instructions (and the files that come with it) by its name, from the list of "
            "skills in the system prompt."
        ),
        args_model=LoadSkillArgs,
        handler=load,
    )

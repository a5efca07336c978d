"""Every bot's skills: where they live, what each session is told of them, adding and removing them
(docs/skills.md).

A bot has its own skills in `bots/<bot>/skills/` and shares those in `skills/` of the data dir. They are
read from disk: a folder a person drops there is seen at the bot's next turn, without a restart. Each
session is told the names and descriptions in its system prompt and loads a skill's instructions on demand
with `load_skill`, so twenty skills cost the prompt a few lines each, not their whole text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.agent.tool_api import ToolSpec
from core.changes import SkillsChanged
from core.errors import InvalidInputError
from core.skills import install
from core.skills.catalog import CatalogReader, Scope, Skill, SkillCatalog, Stamp, skill_files
from core.skills.load_tool import load_skill_tool, skills_section
from core.skills.views import SkillInfo, SkillsView

if TYPE_CHECKING:
    from core.agent.session_spec import SessionSpec
    from core.bus import EventBus

SCOPES: tuple[Scope, ...] = ("bot", "shared")


class SkillsService:
    def __init__(
        self,
        *,
        shared_dir: Path,
        bots_dir: Path,
        require_bot: Callable[[str], Awaitable[Any]],
        bus: EventBus,
    ) -> None:
        self._shared_dir = shared_dir
        self._bots_dir = bots_dir
        self._require_bot = require_bot  # raises NotFoundError for an unknown bot
        self._bus = bus
        self._reader = CatalogReader()
        self._reading = asyncio.Lock()  # the reader keeps a cache: one read at a time
        # One add or remove at a time: two adds of one name must not both pass the "is it taken" check.
        self._changing = asyncio.Lock()
        self._known: dict[str, tuple[tuple[Stamp, ...], SkillCatalog]] = {}

    def root(self, bot_id: str, scope: Scope) -> Path:
        return self._shared_dir if scope == "shared" else self._bots_dir / bot_id / "skills"

    def _roots(self, bot_id: str) -> list[tuple[Scope, Path]]:
        return [(scope, self.root(bot_id, scope)) for scope in SCOPES]

    # ---- reading ------------------------------------------------------------------------------------

    async def catalog(self, bot_id: str) -> SkillCatalog:
        """The bot's skills as they are on disk now (a stat per skill; only changed SKILL.md files are
        parsed again). Announces a change that came from outside the app."""
        async with self._reading:
            stamps, catalog = await asyncio.to_thread(self._reader.read, self._roots(bot_id))
        before = self._known.get(bot_id)
        self._known[bot_id] = (stamps, catalog)
        if before is not None and before[0] != stamps:
            self._bus.publish(SkillsChanged(bot_id))
        return catalog

    def known(self, bot_id: str) -> tuple[tuple[Stamp, ...], SkillCatalog]:
        """The last catalogue read, without touching the disk."""
        return self._known.get(bot_id, ((), SkillCatalog()))

    async def view(self, bot_id: str) -> SkillsView:
        await self._require_bot(bot_id)
        catalog = await self.catalog(bot_id)

        def infos() -> tuple[SkillInfo, ...]:
            found = []
            for skill in catalog.skills:
                files, more = skill_files(skill.folder)
                found.append(
                    SkillInfo(skill.name, skill.description, skill.scope, skill.folder, tuple(files), more)
                )
            return tuple(found)

        section = skills_section(catalog)
        return SkillsView(bot_id, await asyncio.to_thread(infos), catalog.problems, len(section))

    # ---- changing -----------------------------------------------------------------------------------

    async def add_zip(
        self, bot_id: str, data: bytes, *, scope: Scope = "bot", replace: bool = False
    ) -> Skill:
        await self._require_bot(bot_id)
        root = self.root(bot_id, scope)
        async with self._changing:
            installed = await asyncio.to_thread(install.install_zip, root, data, replace=replace)
        return await self._added(bot_id, scope, installed)

    async def add_folder(
        self, bot_id: str, folder: Path, *, scope: Scope = "bot", replace: bool = False
    ) -> Skill:
        await self._require_bot(bot_id)
        root = self.root(bot_id, scope)
        async with self._changing:
            installed = await asyncio.to_thread(install.install_folder, root, folder, replace=replace)
        return await self._added(bot_id, scope, installed)

    async def add_path(
        self, bot_id: str, path: Path, *, scope: Scope = "bot", replace: bool = False
    ) -> Skill:
        """A skill folder or a .zip a person chose or dropped (the desktop's way in)."""
        if await asyncio.to_thread(path.is_dir):
            return await self.add_folder(bot_id, path, scope=scope, replace=replace)
        try:
            data = await asyncio.to_thread(_read_zip_file, path)
        except OSError as exc:
            raise InvalidInputError("file", f"{path.name} cannot be read ({exc.strerror or exc})") from None
        return await self.add_zip(bot_id, data, scope=scope, replace=replace)

    async def remove(self, bot_id: str, name: str, *, scope: Scope = "bot") -> None:
        await self._require_bot(bot_id)
        async with self._changing:
            await asyncio.to_thread(install.remove_skill, self.root(bot_id, scope), name)
        await self.catalog(bot_id)
        self._bus.publish(SkillsChanged(None if scope == "shared" else bot_id))

    async def _added(self, bot_id: str, scope: Scope, installed: install.Installed) -> Skill:
        await self.catalog(bot_id)
        self._bus.publish(SkillsChanged(None if scope == "shared" else bot_id))
        # From what was installed, not the catalogue: a shared skill may be hidden there by the bot's own.
        added = installed.skill
        return Skill(name=added.name, description=added.description, scope=scope, folder=installed.folder)

    async def clean_leftovers(self) -> None:
        """At start-up: what an add cut off by a crash left behind (hidden from the catalogue meanwhile)."""

        def clean() -> None:
            install.clean_leftovers(self._shared_dir)
            for root in self._bots_dir.glob("*/skills"):
                install.clean_leftovers(root)

        await asyncio.to_thread(clean)

    # ---- sessions -----------------------------------------------------------------------------------

    async def for_session(self, spec: SessionSpec) -> SessionSkills:
        await self.catalog(spec.bot_id)
        return SessionSkills(self, spec.bot_id)


def _read_zip_file(path: Path) -> bytes:
    size = path.stat().st_size
    if size > install.MAX_UNPACKED:
        raise InvalidInputError(
            "file",
            f"{path.name} is larger than {install.MAX_UNPACKED // (1024 * 1024)} MB; a skill is smaller",
        )
    return path.read_bytes()


class SessionSkills:
    """The `OutsideTools` of one session (core.agent.tool_api): `load_skill` while the bot has skills, and
    the list of them in the system prompt. Read again from disk before each turn's first request."""

    def __init__(self, service: SkillsService, bot_id: str) -> None:
        self._service = service
        self._bot_id = bot_id
        self._tool = load_skill_tool(lambda: service.known(bot_id)[1])
        self._section: tuple[tuple[Stamp, ...], tuple[str, ...]] | None = None

    def version(self) -> Hashable:
        return self._service.known(self._bot_id)[0]

    def tools(self) -> Sequence[ToolSpec]:
        return [self._tool] if self._service.known(self._bot_id)[1].skills else []

    def prompt_sections(self) -> Sequence[str]:
        stamps, catalog = self._service.known(self._bot_id)
        if self._section is None or self._section[0] != stamps:
            section = skills_section(catalog)
            self._section = (stamps, (section,) if section else ())
        return self._section[1]

    async def settle(self, now: float) -> None:
        await self._service.catalog(self._bot_id)

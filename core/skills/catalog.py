"""What skills a bot has: its own folder's and the shared folder's, read from disk (docs/skills.md).

A skill is a folder with a `SKILL.md`. A bot's own skill hides a shared one of the same name. A folder
whose `SKILL.md` is broken is listed as a problem with the reason, never dropped in silence.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from core.skills.skill_file import SKILL_FILE, SkillFileError, read_skill_file

Scope = Literal["bot", "shared"]
MAX_LISTED_FILES = 50


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    scope: Scope
    folder: Path


@dataclass(frozen=True, slots=True)
class SkillProblem:
    folder: Path
    message: str


@dataclass(frozen=True, slots=True)
class SkillCatalog:
    skills: tuple[Skill, ...] = ()
    problems: tuple[SkillProblem, ...] = ()

    def find(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)


# A SKILL.md as last read: (path, mtime_ns, size) says whether it must be read again.
Stamp = tuple[str, int, int]


class CatalogReader:
    """Reads catalogues, parsing again only the SKILL.md files that changed since the last read. Blocking:
    call it in a worker thread. One reader per library; not for two threads at once."""

    def __init__(self) -> None:
        self._parsed: dict[str, tuple[Stamp, Skill | SkillProblem]] = {}

    def stamps(self, roots: list[tuple[Scope, Path]]) -> tuple[Stamp, ...]:
        """A cheap fingerprint of the roots: one stat per skill folder."""
        return tuple(stamp for _, _, stamp in _entries(roots))

    def read(self, roots: list[tuple[Scope, Path]]) -> tuple[tuple[Stamp, ...], SkillCatalog]:
        skills: dict[str, Skill] = {}
        problems: list[SkillProblem] = []
        stamps: list[Stamp] = []
        seen: set[str] = set()
        for scope, folder, stamp in _entries(roots):
            stamps.append(stamp)
            seen.add(stamp[0])
            kept = self._parsed.get(stamp[0])
            if kept is not None and kept[0] == stamp:
                found = kept[1]
            else:
                found = _read_one(scope, folder)
                self._parsed[stamp[0]] = (stamp, found)
            if isinstance(found, SkillProblem):
                problems.append(found)
            elif found.name in skills:
                if skills[found.name].scope == found.scope:
                    taken = f"another folder already holds the skill {found.name!r}; rename one"
                    problems.append(SkillProblem(folder, taken))
                # else: the bot's own skill hides the shared one, as intended
            else:
                skills[found.name] = found
        for gone in set(self._parsed) - seen:
            del self._parsed[gone]
        ordered = sorted(skills.values(), key=lambda s: s.name)
        return tuple(stamps), SkillCatalog(tuple(ordered), tuple(problems))


def skill_files(folder: Path) -> tuple[list[str], bool]:
    """Blocking: the files beside SKILL.md (relative, sorted, hidden ones left out), and whether the list
    was cut at MAX_LISTED_FILES."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith(".") or (dirpath == str(folder) and name == SKILL_FILE):
                continue
            if len(found) == MAX_LISTED_FILES:
                return found, True
            found.append(os.path.relpath(os.path.join(dirpath, name), folder))
    return found, False


def _entries(roots: list[tuple[Scope, Path]]) -> Iterator[tuple[Scope, Path, Stamp]]:
    for scope, root in roots:
        try:
            with os.scandir(root) as listing:
                names = sorted(e.name for e in listing if not e.name.startswith(".") and e.is_dir())
        except OSError:
            continue  # no such folder yet: no skills there
        for name in names:
            path = os.path.join(root, name, SKILL_FILE)
            try:
                st = os.stat(path)
                stamp = (path, st.st_mtime_ns, st.st_size)
            except OSError:
                stamp = (path, 0, -1)
            yield scope, Path(root, name), stamp


def _read_one(scope: Scope, folder: Path) -> Skill | SkillProblem:
    try:
        parsed = read_skill_file(folder)
    except SkillFileError as exc:
        return SkillProblem(folder, str(exc))
    except Exception as exc:  # one folder must never keep the others from being listed
        return SkillProblem(folder, f"{SKILL_FILE} cannot be read ({type(exc).__name__}: {exc})")
    return Skill(name=parsed.name, description=parsed.description, scope=scope, folder=folder)

"""One skill's `SKILL.md`: YAML front matter with its `name` and `description`, then the instructions
(docs/skills.md#the-format).

The format is the one other agents use: a folder named after the skill, `SKILL.md` in it, and any files the
instructions refer to beside it. Reading one never raises on bad content: a problem is a `SkillFileError`
whose message says what is wrong and how to fix it, so a folder with one broken skill still lists the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import yaml

SKILL_FILE = "SKILL.md"
MAX_NAME = 64
MAX_DESCRIPTION = 1_024
MAX_SKILL_FILE = 256 * 1024  # bytes: instructions, not data; a bigger file belongs beside SKILL.md
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FRONT = re.compile(
    r"\A---[ \t]*\r?\n(?P<yaml>.*?)(?:\r?\n)?^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE
)


class SkillFileError(ValueError):
    """What is wrong with a SKILL.md, worded for the person who wrote it."""


@dataclass(frozen=True, slots=True)
class SkillFile:
    name: str
    description: str
    body: str


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a skill's name, or None."""
    if not name:
        return "is empty"
    if len(name) > MAX_NAME:
        return f"is longer than {MAX_NAME} characters"
    if not _NAME.fullmatch(name):
        return "may hold only lowercase letters, digits and single hyphens between them (like pdf-forms)"
    return None


def parse_skill_file(text: str) -> SkillFile:
    import yaml  # ~20 ms, and only a bot with skills needs it: not at start-up

    found = _FRONT.match(text.lstrip("\ufeff"))
    if found is None:
        raise SkillFileError(
            f"{SKILL_FILE} must start with front matter: a line '---', then 'name:' and 'description:', "
            "then another '---'"
        )
    try:
        front = yaml.safe_load(found["yaml"]) if found["yaml"].strip() else {}
    except yaml.YAMLError as exc:
        raise SkillFileError(f"the front matter is not valid YAML ({_first_line(exc)})") from None
    except (ValueError, RecursionError) as exc:  # a date that is no date, nesting past the parser's depth
        raise SkillFileError(f"the front matter cannot be read ({type(exc).__name__}: {exc})") from None
    if not isinstance(front, dict):
        raise SkillFileError("the front matter must be 'key: value' lines, with name and description")
    name = front.get("name")
    if not isinstance(name, str):
        raise SkillFileError("the front matter has no 'name:' (a short id like pdf-forms)")
    problem = name_problem(name.strip())
    if problem:
        raise SkillFileError(f"the name {name.strip()!r} {problem}")
    description = front.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillFileError(
            "the front matter has no 'description:' (what the skill does and when to use it: the bot reads "
            "it to decide)"
        )
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        raise SkillFileError(f"the description is longer than {MAX_DESCRIPTION} characters; shorten it")
    return SkillFile(name=name.strip(), description=description, body=text[found.end() :].strip())


def read_skill_file(folder: Path) -> SkillFile:
    """Blocking: the folder's SKILL.md, parsed."""
    path = folder / SKILL_FILE
    try:
        size = path.stat().st_size
        if size > MAX_SKILL_FILE:
            raise SkillFileError(
                f"{SKILL_FILE} is {size // 1024} KB, more than {MAX_SKILL_FILE // 1024} KB; move the "
                "long parts into files beside it"
            )
        data = path.read_bytes()
    except FileNotFoundError:
        raise SkillFileError(f"the folder has no {SKILL_FILE}") from None
    except OSError as exc:
        raise SkillFileError(f"{SKILL_FILE} cannot be read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SkillFileError(f"{SKILL_FILE} is not UTF-8 text") from None
    return parse_skill_file(text)


def _first_line(exc: yaml.YAMLError) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__

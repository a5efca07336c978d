"""Skill folders and zips for tests: what a person would write or download."""

from __future__ import annotations

import io
import stat
import zipfile
from collections.abc import Mapping
from pathlib import Path


def skill_md(name: str, description: str = "", body: str = "") -> str:
    description = description or f"Does {name} things. Use it when the user asks for {name}."
    body = body or f"# {name}\n\n1. Do the {name} thing.\n2. Say what you did."
    return f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n"


def write_skill(
    root: Path, name: str, *, folder: str | None = None, files: dict[str, str] | None = None, **fields: str
) -> Path:
    path = root / (folder or name)
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(skill_md(name, **fields), encoding="utf-8")
    for relative, text in (files or {}).items():
        (path / relative).parent.mkdir(parents=True, exist_ok=True)
        (path / relative).write_text(text, encoding="utf-8")
    return path


def zipped(entries: Mapping[str, str | bytes], *, links: Mapping[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, target)
    return buffer.getvalue()


def skill_zip(
    name: str, *, top: str | None = "", files: dict[str, str] | None = None, **fields: str
) -> bytes:
    """A zip of a skill folder; `top` None puts SKILL.md at the archive's top."""
    prefix = "" if top is None else f"{top or name}/"
    entries: dict[str, str | bytes] = {f"{prefix}SKILL.md": skill_md(name, **fields)}
    entries |= {f"{prefix}{k}": v for k, v in (files or {}).items()}
    return zipped(entries)

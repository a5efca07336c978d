"""Adding a skill from a zip or a folder, and removing one (docs/skills.md#adding-a-skill).

Nothing is written until the whole archive has been checked: a path outside the skill's folder (`../`,
an absolute path, a drive), a link, too many files or too many bytes, or a SKILL.md that does not parse
refuses the archive with the reason. The skill is unpacked beside its final place and moved there in one
rename, so a crash leaves either the old skill or the new one, never half of either.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import uuid
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from core.errors import ConflictError, InvalidInputError, NotFoundError
from core.skills.skill_file import SKILL_FILE, SkillFileError, name_problem, parse_skill_file

MAX_FILES = 1_000
MAX_UNPACKED = 50 * 1024 * 1024  # bytes, all files together: a skill is instructions and a few scripts
_JUNK = ("__MACOSX/",)
_JUNK_NAMES = frozenset({".DS_Store", "Thumbs.db"})
_WORK_PREFIX = ".installing-"


@dataclass(frozen=True, slots=True)
class _Member:
    info: zipfile.ZipInfo
    relative: str  # inside the skill's folder


def install_zip(root: Path, data: bytes, *, replace: bool) -> str:
    """Blocking: unpack the skill in `data` into `root/<name>/`; its name. InvalidInputError (field
    `body`) for an archive that is refused, ConflictError when the name is taken and `replace` is false."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError):
        raise InvalidInputError("body", "is not a zip archive; send the skill's folder zipped") from None
    with archive:
        members = _members(archive)
        skill_md = next((m for m in members if m.relative == SKILL_FILE), None)
        if skill_md is None:
            raise InvalidInputError(
                "body", f"has no {SKILL_FILE} at its top or in its one top folder; zip the skill's folder"
            )
        name = _skill_name(archive.read(skill_md.info))
        target = _target(root, name, replace=replace)
        work = _work_dir(root)
        try:
            for member in members:
                dest = work.joinpath(*PurePosixPath(member.relative).parts)
                if member.info.is_dir():
                    dest.mkdir(parents=True, exist_ok=True)
                    continue
                dest.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(member.info) as src, open(dest, "wb") as out:
                    _copy_capped(src, out, member.info.file_size)
            _move_into_place(work, target)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return name


def install_folder(root: Path, source: Path, *, replace: bool) -> str:
    """Blocking: copy the skill folder `source` into `root/<name>/`; its name. The same checks as a zip."""
    if not (source / SKILL_FILE).is_file():
        raise InvalidInputError("folder", f"{source} has no {SKILL_FILE}; drop the skill's own folder")
    files: list[Path] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(source):
        for entry in (*dirnames, *filenames):
            path = Path(dirpath, entry)
            if path.is_symlink():
                raise InvalidInputError(
                    "folder", f"holds a link ({path.relative_to(source)}); a skill may hold only files"
                )
        files.extend(Path(dirpath, f) for f in filenames if f not in _JUNK_NAMES)
        total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in filenames)
        _check_size(len(files), total, "folder")
    name = _skill_name((source / SKILL_FILE).read_bytes(), field="folder")
    target = _target(root, name, replace=replace)
    work = _work_dir(root)
    try:
        for path in files:
            dest = work / path.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
        _move_into_place(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return name


def remove_skill(root: Path, name: str) -> None:
    """Blocking: delete `root/<name>/`. NotFoundError when there is no such skill."""
    if name_problem(name) is not None or not (root / name).is_dir():
        raise NotFoundError("skill", name)
    gone = root / f"{_WORK_PREFIX}{uuid.uuid4().hex}"
    os.replace(root / name, gone)  # one rename: the skill is gone for every reader at once
    shutil.rmtree(gone, ignore_errors=True)


def clean_leftovers(root: Path) -> None:
    """Blocking: remove what an install cut off by a crash left behind."""
    try:
        with os.scandir(root) as listing:
            leftovers = [e.path for e in listing if e.name.startswith(_WORK_PREFIX)]
    except OSError:
        return
    for path in leftovers:
        shutil.rmtree(path, ignore_errors=True)


def _members(archive: zipfile.ZipFile) -> list[_Member]:
    infos = [i for i in archive.infolist() if not _is_junk(i.filename)]
    for info in infos:
        problem = _path_problem(info)
        if problem:
            raise InvalidInputError("body", f"holds {info.filename!r}, {problem}; nothing was installed")
    _check_size(len(infos), sum(i.file_size for i in infos), "body")
    names = [PurePosixPath(i.filename) for i in infos]
    tops = {n.parts[0] for n in names}
    # Either SKILL.md at the top, or every entry inside one folder (what zipping a folder makes).
    prefix = ""
    if SKILL_FILE not in {str(n) for n in names} and len(tops) == 1:
        prefix = tops.pop() + "/"
    members = []
    for info in infos:
        relative = info.filename[len(prefix) :] if info.filename.startswith(prefix) else info.filename
        if relative.rstrip("/"):
            members.append(_Member(info, relative.rstrip("/") if info.is_dir() else relative))
    return members


def _path_problem(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    if "\\" in name:
        return "a path with backslashes"
    path = PurePosixPath(name)
    if path.is_absolute() or (path.parts and ":" in path.parts[0]):
        return "an absolute path"
    if ".." in path.parts:
        return "a path that leads outside the skill's folder (..)"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "a link; a skill may hold only files"
    return None


def _is_junk(name: str) -> bool:
    return name.startswith(_JUNK) or PurePosixPath(name).name in _JUNK_NAMES


def _check_size(files: int, total: int, field: str) -> None:
    if files > MAX_FILES:
        raise InvalidInputError(field, f"holds more than {MAX_FILES} files; a skill should be much smaller")
    if total > MAX_UNPACKED:
        raise InvalidInputError(
            field, f"unpacks to more than {MAX_UNPACKED // (1024 * 1024)} MB; a skill should be much smaller"
        )


def _skill_name(data: bytes, field: str = "body") -> str:
    try:
        return parse_skill_file(data.decode("utf-8")).name
    except UnicodeDecodeError:
        raise InvalidInputError(field, f"{SKILL_FILE} is not UTF-8 text") from None
    except SkillFileError as exc:
        raise InvalidInputError(field, f"{SKILL_FILE}: {exc}") from None


def _target(root: Path, name: str, *, replace: bool) -> Path:
    target = root / name
    if target.exists() and not replace:
        raise ConflictError(
            f"There is already a skill named {name!r}; remove it first or replace it (replace=true).",
            key="error.skill.exists",
            fields={"name": name},
        )
    return target


def _work_dir(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    work = root / f"{_WORK_PREFIX}{uuid.uuid4().hex}"
    work.mkdir()
    return work


def _copy_capped(src: IO[bytes], out: IO[bytes], declared: int) -> None:
    # A header can under-state what a member unpacks to: stop at what it declared.
    left = declared
    while chunk := src.read(min(1 << 20, left + 1)):
        left -= len(chunk)
        if left < 0:
            raise InvalidInputError("body", "holds a file larger than its header says; nothing was installed")
        out.write(chunk)


def _move_into_place(work: Path, target: Path) -> None:
    if target.exists():
        old = target.with_name(f"{_WORK_PREFIX}{uuid.uuid4().hex}")
        os.replace(target, old)
        os.replace(work, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(work, target)

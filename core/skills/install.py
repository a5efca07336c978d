"""Adding a skill from a zip or a folder, and removing one (docs/skills.md#adding-a-skill).

Nothing is written until the whole archive has been checked: a path outside the skill's folder (`../`,
an absolute path, a drive), a link, too many files or too many bytes, or a SKILL.md that does not parse
refuses the archive with the reason. The skill is unpacked beside its final place and moved there in one
rename, so a crash leaves either the old skill or the new one, never half of either: a replaced skill is
kept under `.replaced-<name>-…` until the new one is in place, and put back at the next start if a crash
came between the two renames.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import uuid
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from core.errors import ConflictError, InvalidInputError, NotFoundError
from core.skills.skill_file import (
    MAX_SKILL_FILE,
    SKILL_FILE,
    SkillFile,
    SkillFileError,
    name_problem,
    parse_skill_file,
    read_skill_file,
)

MAX_FILES = 1_000
MAX_UNPACKED = 50 * 1024 * 1024  # bytes, all files together: a skill is instructions and a few scripts
_JUNK = ("__MACOSX/",)
_JUNK_NAMES = frozenset({".DS_Store", "Thumbs.db"})
_WORK_PREFIX = ".installing-"
_REPLACED_PREFIX = ".replaced-"
# What a damaged or unusual archive raises while it is read: each refuses it, none escapes as a crash.
_ARCHIVE_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    RuntimeError,
    NotImplementedError,
    zlib.error,
    EOFError,
)


@dataclass(frozen=True, slots=True)
class Installed:
    skill: SkillFile
    folder: Path  # where it now lives: `root/<name>/`, or the folder it replaced


@dataclass(frozen=True, slots=True)
class _Member:
    info: zipfile.ZipInfo
    relative: str  # inside the skill's folder


def install_zip(root: Path, data: bytes, *, replace: bool) -> Installed:
    """Blocking: unpack the skill in `data` into `root/<name>/`. InvalidInputError (field
    `body`) for an archive that is refused, ConflictError when the name is taken and `replace` is false."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError):
        raise InvalidInputError("body", "is not a zip archive; send the skill's folder zipped") from None
    with archive:
        try:
            return _unpack(root, archive, replace=replace)
        except _ARCHIVE_ERRORS as exc:
            raise InvalidInputError(
                "body", f"cannot be unpacked ({type(exc).__name__}: {exc}); nothing was installed"
            ) from None


def _unpack(root: Path, archive: zipfile.ZipFile, *, replace: bool) -> Installed:
    members = _members(archive)
    skill_md = next((m for m in members if m.relative == SKILL_FILE and not m.info.is_dir()), None)
    if skill_md is None:
        raise InvalidInputError(
            "body", f"has no {SKILL_FILE} at its top or in its one top folder; zip the skill's folder"
        )
    _check_skill_file_size(skill_md.info.file_size, "body")
    skill = _parse(archive.read(skill_md.info))
    target = _target(root, skill.name, replace=replace)
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
    return Installed(skill, target)


def install_folder(root: Path, source: Path, *, replace: bool) -> Installed:
    """Blocking: copy the skill folder `source` into `root/<name>/`. The same checks as a zip."""
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
    _check_skill_file_size((source / SKILL_FILE).stat().st_size, "folder")
    skill = _parse((source / SKILL_FILE).read_bytes(), field="folder")
    target = _target(root, skill.name, replace=replace)
    work = _work_dir(root)
    try:
        for path in files:
            dest = work / path.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
        _move_into_place(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Installed(skill, target)


def remove_skill(root: Path, name: str) -> None:
    """Blocking: delete the folder holding the skill `name` (`root/<name>/`, or a folder a person named
    otherwise). NotFoundError when there is no such skill."""
    folder = skill_folder(root, name) if name_problem(name) is None else None
    if folder is None:
        raise NotFoundError("skill", name)
    gone = root / f"{_WORK_PREFIX}{uuid.uuid4().hex}"
    os.replace(folder, gone)  # one rename: the skill is gone for every reader at once
    shutil.rmtree(gone, ignore_errors=True)


def skill_folder(root: Path, name: str) -> Path | None:
    """Blocking: the folder in `root` that holds the skill `name`. Usually `root/<name>/`; a folder dropped
    in by hand may be named otherwise, and is found by its SKILL.md."""
    own = root / name
    if own.is_dir() and _holds(own) in (name, None):
        return own
    try:
        with os.scandir(root) as listing:
            folders = sorted(e.name for e in listing if not e.name.startswith(".") and e.is_dir())
    except OSError:
        return None
    return next(
        (root / folder for folder in folders if folder != name and _holds(root / folder) == name), None
    )


def _holds(folder: Path) -> str | None:
    """The name of the skill in `folder`, or None when its SKILL.md does not read."""
    try:
        return read_skill_file(folder).name
    except Exception:  # a broken folder holds no skill by name
        return None


def clean_leftovers(root: Path) -> None:
    """Blocking: tidy what an add or a remove cut off by a crash left behind. A skill swapped out for its
    replacement is put back under its folder's name when the replacement never arrived, and deleted when it
    did."""
    try:
        with os.scandir(root) as listing:
            names = [e.name for e in listing if e.name.startswith((_WORK_PREFIX, _REPLACED_PREFIX))]
    except OSError:
        return
    for entry in sorted(names):
        path = root / entry
        if entry.startswith(_REPLACED_PREFIX):
            folder = entry[len(_REPLACED_PREFIX) :].rpartition("-")[0]
            if folder and not folder.startswith(".") and not (root / folder).exists():
                os.replace(path, root / folder)
                continue
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
    files: set[tuple[str, ...]] = set()
    folders: set[tuple[str, ...]] = set()
    for info in infos:
        relative = info.filename[len(prefix) :] if info.filename.startswith(prefix) else info.filename
        parts = PurePosixPath(relative).parts
        if not parts:
            continue  # the top folder itself
        if info.is_dir():
            folders.add(parts)
        elif parts in files:
            raise InvalidInputError("body", f"holds {info.filename!r} twice; nothing was installed")
        else:
            files.add(parts)
        folders.update(parts[:i] for i in range(1, len(parts)))
        members.append(_Member(info, "/".join(parts)))
    both = files & folders
    if both:
        clash = "/".join(sorted(both)[0])
        raise InvalidInputError(
            "body", f"holds {clash!r} both as a file and as a folder; nothing was installed"
        )
    return members


def _path_problem(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    if "\\" in name:
        return "a path with backslashes"
    path = PurePosixPath(name)
    if not path.parts or path.parts == (".",):
        return "an entry with no name"
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


def _check_skill_file_size(size: int, field: str) -> None:
    if size > MAX_SKILL_FILE:
        raise InvalidInputError(
            field,
            f"{SKILL_FILE} is {size // 1024} KB, more than {MAX_SKILL_FILE // 1024} KB; move the long parts "
            "into files beside it",
        )


def _parse(data: bytes, field: str = "body") -> SkillFile:
    try:
        return parse_skill_file(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidInputError(field, f"{SKILL_FILE} is not UTF-8 text") from None
    except SkillFileError as exc:
        raise InvalidInputError(field, f"{SKILL_FILE}: {exc}") from None


def _target(root: Path, name: str, *, replace: bool) -> Path:
    target = skill_folder(root, name)
    if target is None:
        target = root / name
        if target.exists():  # a folder named so holds another skill: replacing would lose that one
            raise ConflictError(
                f"The folder {name!r} holds another skill; rename that folder, then add this one again.",
                key="error.skill.folder_taken",
                fields={"name": name},
            )
        return target
    if not replace:
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
        # Named after the folder, so that clean_leftovers can put it back if a crash comes before the next
        # rename; a .installing- folder is only ever deleted.
        old = target.with_name(f"{_REPLACED_PREFIX}{target.name}-{uuid.uuid4().hex}")
        os.replace(target, old)
        os.replace(work, target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(work, target)

"""File names in a task's result as links (docs/desktop.md#task-detail): 「已写好 report.md」 links report.md
when that file is in the task's folder, and so does a name the Report lists in `files`.

Only a file that exists under the task's folder is linked: a name the model made up, or a path that leaves
the folder (`../x`, an absolute path elsewhere), stays plain text. The names are looked up on the file
system here, a handful of `stat` calls for one line of text.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QUrl

# Something shaped like a file name: optional folders, then a name with an extension ("notes/report.md").
# Word characters include CJK, so 「生成了报告.md」 matches whole; `inside` then tries its shorter ends.
_NAME = re.compile(r"(?:[\w\-.]+/)*[\w\-.]*\w\.[A-Za-z0-9]{1,10}(?![\w/])")
_LONGEST = 160  # a longer "name" is a sentence, not a file


@dataclass(frozen=True, slots=True)
class Linked:
    html: str  # the text with its file names as <a href="file://...">; plain text escaped
    files: tuple[Path, ...]  # the files linked, in the order they appear


def inside(folder: Path, name: str) -> Path | None:
    """The file `name` (relative to `folder`, or absolute) when it exists under `folder`; None otherwise."""
    name = name.strip()
    if not name or len(name) > _LONGEST:
        return None
    try:
        root = folder.resolve()
        path = (root / name).resolve()
        if path != root and root in path.parents and path.is_file():
            return path
    except (OSError, ValueError):
        return None
    return None


def _found(folder: Path, token: str) -> tuple[int, Path] | None:
    """Where in `token` a file of the folder starts, and the file: the longest end of the token that is one
    (「生成了报告.md」 finds 报告.md)."""
    for start in range(len(token)):
        if start and token[start - 1].isascii():
            continue  # "myreport.md" is not report.md: a name is cut only where words of a script end
        path = inside(folder, token[start:])
        if path is not None:
            return start, path
    return None


def file_url(path: Path) -> str:
    return QUrl.fromLocalFile(str(path)).toString()


def anchor(path: Path, shown: str) -> str:
    return f'<a href="{html.escape(file_url(path), quote=True)}">{html.escape(shown)}</a>'


def link_files(text: str, folder: str) -> Linked:
    """`text` as HTML with every file name in it that is a file under `folder` linked."""
    if not text or not folder:
        return Linked(html.escape(text), ())
    root = Path(folder)
    parts: list[str] = []
    files: list[Path] = []
    at = 0
    for match in _NAME.finditer(text):
        found = _found(root, match.group())
        if found is None:
            continue
        start, path = found
        begin = match.start() + start
        parts.append(html.escape(text[at:begin]))
        parts.append(anchor(path, text[begin : match.end()]))
        files.append(path)
        at = match.end()
    parts.append(html.escape(text[at:]))
    return Linked("".join(parts), tuple(files))


def listed_files(folder: str, names: Iterable[object], skip: Iterable[Path] = ()) -> list[tuple[Path, str]]:
    """The Report's `files` that exist under `folder`, each with the name it gave, leaving out `skip`
    (already linked in the text) and repeats."""
    if not folder:
        return []
    seen = set(skip)
    found: list[tuple[Path, str]] = []
    for name in names:
        if not isinstance(name, str):
            continue
        path = inside(Path(folder), name)
        if path is not None and path not in seen:
            seen.add(path)
            found.append((path, name.strip()))
    return found


def linked_path(href: str, folder: str) -> Path | None:
    """The file a link points at, when it is still a file under `folder` (it may have gone since)."""
    url = QUrl(href)
    if not url.isLocalFile() or not folder:
        return None
    return inside(Path(folder), url.toLocalFile())

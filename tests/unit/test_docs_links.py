"""Our behaviour docs stay the ones the code points at: every `docs/<page>.md#<section>` a comment names
exists, no comment leans on an outside spec instead, and the architecture page names every part of core."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE_DIRS = ("app", "core", "ui", "tests", "bench", "scripts", "packaging", "resources")
CODE_SUFFIXES = {".py", ".json", ".toml", ".qss", ".spec", ".desktop", ".sh", ""}
LINK = re.compile(r"docs/([a-z0-9_-]+\.md)(?:#([a-z0-9-]+))?")
# The outside spec our docs replaced, cited by its short name and a section number.
OUTSIDE_SPEC = re.compile(r"\bP3\b")


def _code_files() -> list[Path]:
    found = []
    for top in CODE_DIRS:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and path.suffix in CODE_SUFFIXES and "__pycache__" not in path.parts:
                found.append(path)
    return found


def _anchor(heading: str) -> str:
    """The anchor a Markdown renderer gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    return {
        _anchor(line.lstrip("#"))
        for line in page.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    }


def test_every_docs_link_in_the_code_names_a_page_and_section_that_exist() -> None:
    broken = []
    anchors: dict[str, set[str]] = {}
    for path in _code_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for match in LINK.finditer(text):
            page, section = match.group(1), match.group(2)
            target = ROOT / "docs" / page
            where = f"{path.relative_to(ROOT)}: {match.group(0)}"
            if not target.is_file():
                broken.append(f"{where} (no such page)")
            elif section and section not in anchors.setdefault(page, _anchors(target)):
                broken.append(f"{where} (no such section)")
    assert broken == []


def test_no_code_cites_the_outside_spec_instead_of_our_docs() -> None:
    citing = []
    for path in _code_files():
        if path == Path(__file__).resolve():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE_SPEC.search(line):
                citing.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert citing == []


def test_the_architecture_page_names_every_part_of_core() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    parts = sorted(
        p.name
        for p in (ROOT / "core").iterdir()
        if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "__init__.py")
    )
    missing = [name for name in parts if f"core/{name}" not in page]
    assert missing == []

"""Acceptance criteria: 1 to 12, each with text of at most 2,000 characters and an optional check the
host runs (command, file, contains); each wrong input refused whole with the field named; the file checks
decided from the task folder only."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.errors import InvalidInputError
from core.goals.acceptance import (
    CommandCheck,
    ContainsCheck,
    Criterion,
    FileCheck,
    parse_acceptance,
)
from core.goals.file_checks import run_file_check


def test_criteria_with_and_without_checks_are_read() -> None:
    criteria = parse_acceptance(
        [
            {"text": "the tests pass", "check": {"type": "command", "command": "pytest -q"}},
            {"text": "a report", "check": {"type": "file", "path": "dist/report.pdf"}},
            {"text": "it names Q3", "check": {"type": "contains", "path": "summary.md", "text": "Q3"}},
            "the summary names the three risks",
        ]
    )
    assert criteria == (
        Criterion("the tests pass", CommandCheck("pytest -q", 300)),
        Criterion("a report", FileCheck("dist/report.pdf")),
        Criterion("it names Q3", ContainsCheck("summary.md", "Q3")),
        Criterion("the summary names the three risks"),
    )
    assert criteria[0].to_json() == {
        "text": "the tests pass",
        "check": {"type": "command", "command": "pytest -q", "timeoutS": 300},
    }


@pytest.mark.parametrize(
    ("raw", "field", "says"),
    [
        ([], "acceptance", "1 to 12"),
        ("pytest", "acceptance", "must be a list"),
        (["x"] * 13, "acceptance", "13 criteria; at most 12"),
        (["x" * 2001], "acceptance[0].text", "2001 characters; at most 2000"),
        ([{"text": "  "}], "acceptance[0].text", "non-empty"),
        ([{"text": "ok", "weight": 2}], "acceptance[0]", "not weight"),
        ([{"text": "ok", "check": {"type": "url"}}], "acceptance[0].check.type", "command, file, contains"),
        (
            [{"text": "ok", "check": {"type": "file", "path": "/etc/passwd"}}],
            "acceptance[0].check.path",
            "absolute",
        ),
        (
            [{"text": "ok", "check": {"type": "file", "path": "C:\\x.txt"}}],
            "acceptance[0].check.path",
            "absolute",
        ),
        (
            [{"text": "ok", "check": {"type": "file", "path": "a/../../x"}}],
            "acceptance[0].check.path",
            "leaves",
        ),
        (
            [{"text": "ok", "check": {"type": "contains", "path": "a.md"}}],
            "acceptance[0].check.text",
            "non-empty",
        ),
        (
            [{"text": "ok", "check": {"type": "command", "command": "true", "timeoutS": 0}}],
            "acceptance[0].check.timeoutS",
            "1 to 1800",
        ),
        (
            [{"text": "ok", "check": {"type": "file", "path": "a", "text": "b"}}],
            "acceptance[0].check",
            "no text",
        ),
    ],
)
def test_wrong_criteria_are_refused_with_the_field(raw: object, field: str, says: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        parse_acceptance(raw)
    assert refused.value.field == field
    assert says in str(refused.value)


def test_file_checks_see_only_the_task_folder(tmp_path: Path) -> None:
    folder = tmp_path / "task"
    (folder / "dist").mkdir(parents=True)
    (folder / "dist" / "report.pdf").write_bytes(b"%PDF-1.7")
    (folder / "empty.txt").write_bytes(b"")
    (folder / "summary.md").write_text("Risks: Q3 supply", encoding="utf-8")
    (tmp_path / "outside.txt").write_text("Q3", encoding="utf-8")
    os.symlink(tmp_path / "outside.txt", folder / "link.txt")

    def verdict(check: FileCheck | ContainsCheck) -> tuple[bool, str]:
        v = run_file_check(folder, check)
        assert v.source == "file"
        return v.passed, v.detail

    assert verdict(FileCheck("dist/report.pdf")) == (True, "dist/report.pdf exists (8 bytes)")
    assert verdict(FileCheck("missing.pdf")) == (False, "missing.pdf does not exist")
    assert verdict(FileCheck("empty.txt")) == (False, "empty.txt is empty")
    assert verdict(FileCheck("dist")) == (False, "dist is not a file")
    assert verdict(ContainsCheck("summary.md", "Q3")) == (True, "summary.md contains 'Q3'")
    assert verdict(ContainsCheck("summary.md", "Q4")) == (False, "summary.md does not contain 'Q4'")
    # A link out of the folder meets nothing, even when the file it points at would.
    assert verdict(ContainsCheck("link.txt", "Q3")) == (False, "link.txt leads outside the task folder")

"""The judge of criteria without a host check (docs/goals.md#the-judge): its answer is read strictly, and a
pass counts only with a quote that is really in the evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.goals.judge import Evidence, JudgementError, gather_evidence, parse_judgement
from core.tasks.report import Report

EVIDENCE = Evidence("Report summary:\nThe capital of  France is Paris.\n\nFile notes.md:\nQ3 revenue rose.")


def answer(*items: dict[str, object]) -> str:
    return json.dumps({"verdicts": list(items)})


def test_a_pass_with_a_real_quote_counts_spacing_and_case_aside() -> None:
    text = answer({"criterion": 1, "passed": True, "evidence": "the capital of france is paris"})
    [verdict] = parse_judgement(text, 1, EVIDENCE)
    assert verdict.passed and verdict.source == "model"


def test_a_pass_on_words_not_in_the_evidence_or_without_a_quote_fails() -> None:
    text = answer(
        {"criterion": 1, "passed": True, "evidence": "Paris is the capital"},
        {"criterion": 2, "passed": True},
        {"criterion": 3, "passed": False, "reason": "no Q4 figure"},
    )
    made_up, unquoted, failed = parse_judgement(text, 3, EVIDENCE)
    assert not made_up.passed and "its quote is not in the evidence" in made_up.detail
    assert unquoted.detail == "judged met but quoted no evidence"
    assert failed.detail == "not met: no Q4 figure"


def test_a_fenced_answer_is_read() -> None:
    fenced = "```json\n" + answer({"criterion": 1, "passed": False, "reason": "x"}) + "\n```"
    assert parse_judgement(fenced, 1, EVIDENCE)[0].detail == "not met: x"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("Yes, it does.", "the answer is not JSON"),
        ('{"verdict": []}', 'the answer needs a "verdicts" list'),
        (answer({"criterion": 2, "passed": True}), "criterion must be a number from 1 to 1 (got 2)"),
        (answer({"criterion": 1, "passed": "yes"}), "criterion 1: passed must be true or false"),
        (answer(), "no verdict for criterion 1"),
    ],
)
def test_an_answer_that_cannot_be_read_says_why(text: str, error: str) -> None:
    with pytest.raises(JudgementError) as raised:
        parse_judgement(text, 1, EVIDENCE)
    assert str(raised.value).startswith(error)


def test_the_evidence_holds_the_report_and_the_files_it_names_inside_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "notes.md").write_text("Q3 revenue rose.")
    (tmp_path / "secret.txt").write_text("outside")
    report = Report("done", "wrote notes", message="Notes ready.", files=("notes.md", "../secret.txt"))
    text = gather_evidence(report, folder).text
    assert "Report summary:\nwrote notes" in text and "Message to the user:\nNotes ready." in text
    assert "File notes.md:\nQ3 revenue rose." in text
    assert "File ../secret.txt: (not found in the task folder)" in text and "outside" not in text

"""Answers to the budget question: 继续, 停止, an amount, or other words."""

from __future__ import annotations

import pytest

from core.cost.budget_answer import BudgetAnswer, parse_budget_answer
from core.errors import InvalidInputError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("继续", BudgetAnswer("add", 1.0)),
        ("1", BudgetAnswer("add", 1.0)),
        ("Continue", BudgetAnswer("add", 1.0)),
        ("停止", BudgetAnswer("stop")),
        ("2", BudgetAnswer("stop")),
        ("stop.", BudgetAnswer("stop")),
        ("再给 3 美元", BudgetAnswer("add", 3.0)),
        ("add $2.50", BudgetAnswer("add", 2.5)),
        ("$5", BudgetAnswer("add", 5.0)),
        ("10刀", BudgetAnswer("add", 10.0)),
        ("再给 3 美元,先把表格做完", BudgetAnswer("add", 3.0, "再给 3 美元,先把表格做完")),
        ("先把表格做完就行", BudgetAnswer("add", 1.0, "先把表格做完就行")),
    ],
)
def test_answers_mean_what_a_person_means(text: str, expected: BudgetAnswer) -> None:
    assert parse_budget_answer(text) == expected


@pytest.mark.parametrize("text", ["", "  ", "$0", "再给 5000 美元"])
def test_empty_answers_and_amounts_out_of_range_are_refused(text: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_budget_answer(text)
    assert caught.value.field == "answer"

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
        # Declining in other words stops: an answer that says no must never spend more.
        ("不用了,谢谢", BudgetAnswer("stop")),
        ("取消", BudgetAnswer("stop")),
        ("别继续了", BudgetAnswer("stop")),
        ("不要继续", BudgetAnswer("stop")),
        ("Cancel it", BudgetAnswer("stop")),
        ("no thanks", BudgetAnswer("stop")),
        ("don't continue", BudgetAnswer("stop")),
        # ...but declining to stop goes on.
        ("别停", BudgetAnswer("add", 1.0, "别停")),
        ("don't stop", BudgetAnswer("add", 1.0, "don't stop")),
        ("不错,继续吧", BudgetAnswer("add", 1.0, "不错,继续吧")),
        # A total sets the budget.
        ("加到 5 美元", BudgetAnswer("set", budget_usd=5.0)),
        ("raise it to $5", BudgetAnswer("set", budget_usd=5.0)),
    ],
)
def test_answers_mean_what_a_person_means(text: str, expected: BudgetAnswer) -> None:
    assert parse_budget_answer(text) == expected


@pytest.mark.parametrize("text", ["", "  ", "$0", "再给 5000 美元"])
def test_empty_answers_and_amounts_out_of_range_are_refused(text: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_budget_answer(text)
    assert caught.value.field == "answer"

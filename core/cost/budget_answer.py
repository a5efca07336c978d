"""What a person's answer to 「已用约 $1.00,再给 $1 继续?」 means (docs/cost.md#the-budget-question): 继续
adds $1, a written amount (「再给 3 美元」, "add $2.50") adds that much, a total (「加到 5 美元」, "raise it
to $5") sets the budget, 停止 stops, and other words go to the task with the extra $1. Saying no in other ways
(不用, 取消, 别继续了, "cancel", "no thanks") stops too: an answer that declines must never spend more.
Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from core.errors import InvalidInputError

CONTINUE_USD = 1.0
MAX_ADD_USD = 1000.0
CONTINUE_WORDS = frozenset({"继续", "continue", "go on", "yes", "好", "好的", "可以", "1"})
STOP_WORDS = frozenset({"停止", "停", "stop", "no", "不用了", "算了", "2"})
# Said as the start of an answer, these decline (「不用了,谢谢」, "no thanks", "cancel it")...
_DECLINE = re.compile(
    r"^(?:停|不|别|取消|算了|够了|放弃|stop\b|no\b|nope\b|cancel|quit\b|abort\b|enough\b|don'?t\b|do not\b)",
    re.IGNORECASE,
)
# ...unless what is declined is stopping (「别停」, 「不要停止」, "don't stop") or it says to go on after all.
_GO_ON = re.compile(
    r"^(?:别|不要|不用|不)停|^(?:don'?t|do not) stop|(?<![别不要])继续"
    r"|(?<!don't )(?<!dont )(?<!not )(?:continue|go on|keep going)",
    re.IGNORECASE,
)
# 「加到 5 美元」, "raise it to $5": the amount is the new total, not an addition.
_TOTAL = re.compile(
    r"(?:加到|提到|提高到|调到|改到|改成|设为|设成|\bto\s*(?:\$|US\$|USD)?\s*\d)", re.IGNORECASE
)
# A number with an optional $ before it, or 美元/刀/块/usd/dollars after it.
_AMOUNT = re.compile(
    r"(?:\$|US\$|USD\s*)\s*(\d+(?:\.\d+)?)|(\d+(?:\.\d+)?)\s*(?:美元|美金|刀|块|usd\b|dollars?\b|\$)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class BudgetAnswer:
    action: Literal["add", "set", "stop"]
    add_usd: float = 0.0
    words: str = ""  # other words, passed on to the task with the extra budget
    budget_usd: float = 0.0  # "set": the new total


def parse_budget_answer(text: str) -> BudgetAnswer:
    """Raises InvalidInputError (field `answer`) for an empty answer or an amount out of range."""
    said = text.strip()
    if not said:
        raise InvalidInputError("answer", "must not be empty: 继续, 停止, or an amount such as $3")
    plain = re.sub(r"[。.!!\s]+$", "", said.lower())
    if plain in STOP_WORDS or (_DECLINE.search(plain) and not _GO_ON.search(plain)):
        return BudgetAnswer("stop")
    if plain in CONTINUE_WORDS:
        return BudgetAnswer("add", CONTINUE_USD)
    found = _AMOUNT.search(said)
    if found is None:
        return BudgetAnswer("add", CONTINUE_USD, said)
    amount = float(found.group(1) or found.group(2))
    if not 0 < amount <= MAX_ADD_USD:
        raise InvalidInputError("answer", f"the amount must be more than $0 and at most ${MAX_ADD_USD:,.0f}")
    if _TOTAL.search(said):
        return BudgetAnswer("set", budget_usd=amount)
    rest = re.sub(r"^[\s,,。.]+|[\s,,。.]+$", "", said[: found.start()] + said[found.end() :])
    meaningful = rest and not re.fullmatch(r"(再给|再加|加|给|add|another|more|please|\s)*", rest, re.I)
    return BudgetAnswer("add", amount, said if meaningful else "")

"""How money reads in the desktop UI (docs/cost.md): 「约 $0.08 / $1.00」, 「不到 $0.01」, 「未定价」.

Amounts are estimates, so they say 约 / "about" (`core.cost.prices.format_cost`). Costs priced in another
currency (a user's own price for a model) are said after the USD amount, never added to it; calls with no
known price are 「未定价」 when nothing was priced at all. A budget is a limit the person set, not an
estimate, so it is said plainly: $1.00.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from core.cost.prices import Cost, format_cost
from core.rules.views import RuleView
from core.tasks.views import RunView, TaskView
from ui.i18n import language, t


def amount(value: float, currency: str = "USD") -> str:
    """One estimated amount: 「约 $0.08」, 「不到 $0.01」."""
    return format_cost(Cost(Decimal(str(value)), currency), language())


def unpriced() -> str:
    return format_cost(None, language())


def limit(usd: float) -> str:
    """A budget: $1.00, $1,000.00 (no 约: the person set it)."""
    return f"${usd:,.2f}"


def spent(usd: float, other: Mapping[str, float], unpriced_calls: int) -> str:
    """What was spent: 「约 $0.08」, then other currencies (「约 $0.08 · 约 ¥0.50」); 「未定价」 when only
    unpriced calls were made; '' when nothing was spent at all."""
    others = [amount(value, currency) for currency, value in sorted(other.items()) if value > 0]
    parts = ([amount(usd)] if usd > 0 else []) + others
    if not parts:
        return unpriced() if unpriced_calls > 0 else ""
    return " · ".join(parts)


def model_priced(task: TaskView) -> bool | None:
    """Whether the task's model has a price (None: not known, no run works now): a task on an unpriced
    model reads 「未定价」 before its first call is counted."""
    return task.model_priced


def task_money(task: TaskView, priced: bool | None = None) -> str:
    """「约 $0.08 / $1.00」: the budget is always worth saying, the spend even when nothing is spent; another
    currency follows the USD budget (「约 $0.08 / $1.00 · 约 ¥0.50」), 「未定价 / $1.00」 when no call had a
    price, or from the start when the model is known to have none (`priced` False), so a running task
    never says 「约 $0.00」 first and 「未定价」 once it is done."""
    nothing_priced = task.spent_usd <= 0 and not any(v > 0 for v in task.spent_other.values())
    no_price = bool(task.unpriced_calls) or priced is False
    usd = unpriced() if nothing_priced and no_price else amount(task.spent_usd)
    line = t("cost.of_budget", spent=usd, budget=limit(task.budget_usd))
    others = [amount(value, currency) for currency, value in sorted(task.spent_other.items()) if value > 0]
    return " · ".join([line, *others])


def task_budget_line(task: TaskView) -> str:
    """The 预算 section's line: the money, and how many calls had no price when some did."""
    line = task_money(task, model_priced(task))
    priced = task.spent_usd > 0 or any(value > 0 for value in task.spent_other.values())
    if task.unpriced_calls and priced:
        n = task.unpriced_calls
        line = f"{line} · {t('cost.unpriced_calls_one') if n == 1 else t('cost.unpriced_calls', n=n)}"
    return line


def run_cost(run: RunView) -> str:
    """A task run's cost for its folded line: 「约 $0.03」, 「未定价」, or '' when it cost nothing."""
    return spent(run.cost_usd, run.cost_other, run.unpriced_calls)


def rule_month(rule: RuleView) -> str:
    """「本月 约 $0.40 / $3.00」."""
    return t(
        "cost.rule_month",
        spent=amount(rule.month_cost_usd),
        budget=limit(rule.month_budget_usd),
    )


def rule_costs(rule: RuleView) -> str:
    """The rule detail's 花费: 「本月 约 $0.40 / $3.00 · 每次最多 $0.10」."""
    return " · ".join([rule_month(rule), t("cost.rule_per_run", budget=limit(rule.run_budget_usd))])


def usd_cost(value: object) -> str:
    """A rule run's cost from whatever the log row carries: '' when it is not a positive number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return ""
    return amount(float(value))


__all__ = [
    "amount",
    "limit",
    "model_priced",
    "rule_costs",
    "rule_month",
    "run_cost",
    "spent",
    "task_budget_line",
    "task_money",
    "unpriced",
    "usd_cost",
]

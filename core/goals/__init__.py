"""Goal mode: a task's acceptance criteria and the checks the host runs itself (docs/goals.md)."""

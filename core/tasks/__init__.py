"""Background tasks (docs/domain.md#tasks): TaskService and TaskRunner, with pure helpers (stage function,
slots, Report validation, restart recovery planner) that take facts and the time from their callers."""

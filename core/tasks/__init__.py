"""Background tasks (P3 §1-§3): TaskService and TaskRunner, with pure helpers (stage function, slots,
Report validation, restart recovery planner) that take facts and the time from their callers."""

"""Planned tasks: one goal split by a planner turn into subtasks run in dependency order (docs/plans.md)."""

"""The guard: tool calls of task and rule sessions judged before they run (docs/guard.md)."""

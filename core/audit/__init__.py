"""The audit trail: every outside effect of a run, append-only and hash-chained (docs/audit.md)."""

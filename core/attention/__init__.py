"""Needs-you (docs/attention.md): what waits for a person, in one ordered list, and how a person's
message on a chat channel answers a task question. The modules here are pure: callers pass the facts
and the time in."""

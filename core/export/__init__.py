"""Markdown export of a task's runs and a rule's run log (docs/retention.md#markdown-export): pure renderers
over view objects, and the redaction every exported document goes through before it leaves the host."""

"""Markdown export of a task's runs and a rule's run log (P3 §6, §10): pure renderers over view objects, and
the redaction every exported document goes through before it leaves the host."""

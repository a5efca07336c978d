"""Feishu and Lark through `lark-oapi`: the long connection, the REST calls, cards and catch-up
(docs/channels.md#feishu)."""

"""JSON shapes of the API (camelCase; docs/architecture.md#the-local-api)."""

from __future__ import annotations

from typing import Any

from core.chat.views import ConversationView, LiveReply, MessageView


def conversation_json(c: ConversationView) -> dict[str, Any]:
    return {
        "id": c.id,
        "botId": c.bot_id,
        "botName": c.bot_name,
        "title": c.title,
        "updatedAt": c.updated_at,
        "lastLine": c.last_line,
        "busy": c.busy,
        "channel": c.channel,
    }


def message_json(m: MessageView) -> dict[str, Any]:
    return {
        "id": m.id,
        "conversationId": m.conversation_id,
        "role": m.role,
        "text": m.text,
        "state": m.state,
        "createdAt": m.created_at,
        "model": m.model,
        "tokensIn": m.tokens_in,
        "tokensOut": m.tokens_out,
        "durationMs": m.duration_ms,
        "steps": [s.to_json() for s in m.steps],
        "taskId": m.task_id,
        "tasks": [c.to_json() for c in m.task_chips],
        "question": m.question.to_json() if m.question else None,
        "onPlatform": m.on_platform,
        "retryable": m.retryable,
        "ruleId": m.rule_id,
        "ruleTitle": m.rule_title,
        "rules": [c.to_json() for c in m.rule_chips],
    }


def live_json(live: LiveReply | None) -> dict[str, Any] | None:
    if live is None:
        return None
    return {
        "turnId": live.turn_id,
        "text": live.text,
        "steps": [s.to_json() for s in live.steps],
        "startedAt": live.started_at,
    }

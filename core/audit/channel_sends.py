"""Sends to a chat channel, each written to the audit trail with what the platform said
(docs/audit.md#what-is-recorded). Wraps the outbox's `ChannelSending`; a send that never left (held: the
channel is down) is no outside effect and writes nothing."""

from __future__ import annotations

import asyncio

from core.audit.recorder import AuditRecorder
from core.channels.channel import ChannelSending, Outgoing, SendHeld, SendOutcomeUnknown


class AuditedSends:
    def __init__(self, inner: ChannelSending, recorder: AuditRecorder) -> None:
        self._inner = inner
        self._recorder = recorder

    async def send(self, conversation_id: str, text: str, outgoing: Outgoing | None = None) -> str:
        try:
            message_id = await self._inner.send(conversation_id, text, outgoing)
        except (SendHeld, asyncio.CancelledError):
            raise
        except SendOutcomeUnknown as exc:
            self._recorder.channel_send(conversation_id=conversation_id, result="unknown", error=str(exc))
            raise
        except Exception as exc:
            self._recorder.channel_send(conversation_id=conversation_id, result="failed", error=str(exc))
            raise
        self._recorder.channel_send(
            conversation_id=conversation_id, result="delivered", message_id=message_id
        )
        return message_id

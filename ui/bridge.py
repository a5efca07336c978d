"""The one QObject that turns core bus events into Qt signals. Views re-read what they show."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from core.bus import EventBus
from core.events import ConversationsChanged, LiveReplyChanged, MessagesChanged

# A streamed reply announces every delta; the eye needs no more than about 30 frames a second.
LIVE_COALESCE_MS = 30


class EventBridge(QObject):
    conversationsChanged = Signal()
    messagesChanged = Signal(str)
    liveReplyChanged = Signal(str)

    def __init__(
        self, bus: EventBus, parent: QObject | None = None, live_interval_ms: int = LIVE_COALESCE_MS
    ) -> None:
        super().__init__(parent)
        self._live_pending: set[str] = set()
        self._live_timer = QTimer(self)
        self._live_timer.setSingleShot(True)
        self._live_timer.setInterval(live_interval_ms)
        self._live_timer.timeout.connect(self._flush_live)
        self._unsubscribe = bus.subscribe(self._on_event)

    def close(self) -> None:
        self._unsubscribe()
        self._live_timer.stop()
        self._live_pending.clear()

    def _on_event(self, event: object) -> None:
        if isinstance(event, LiveReplyChanged):
            self._live_pending.add(event.conversation_id)
            # Leading edge waits too: the first delta and the ones right behind it land in one repaint.
            if not self._live_timer.isActive():
                self._live_timer.start()
        elif isinstance(event, MessagesChanged):
            self.messagesChanged.emit(event.conversation_id)
        elif isinstance(event, ConversationsChanged):
            self.conversationsChanged.emit()

    def _flush_live(self) -> None:
        pending, self._live_pending = self._live_pending, set()
        for conversation_id in sorted(pending):
            self.liveReplyChanged.emit(conversation_id)

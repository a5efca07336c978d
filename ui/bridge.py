"""The one QObject that turns core bus events into Qt signals. Views re-read what they show.

Events that come in bursts (a streamed reply's deltas, a busy task's steps) are folded: each id is announced
once per short interval, however often it changed in it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from core.bus import EventBus
from core.changes import (
    AttentionChanged,
    BotsChanged,
    ChannelChanged,
    ConversationsChanged,
    LiveReplyChanged,
    McpServersChanged,
    MemoryChanged,
    MessagesChanged,
    PricesChanged,
    RuleChanged,
    RunStepAdded,
    SkillsChanged,
    TaskChanged,
    WebSearchChanged,
)

# A streamed reply announces every delta; the eye needs no more than about 30 frames a second.
LIVE_COALESCE_MS = 30
# A running task changes with every step; a chip or a task row that follows it ten times a second is live.
TASK_COALESCE_MS = 100
# The needs-you list changes whenever a task does; re-reading it a few times a second is plenty.
ATTENTION_COALESCE_MS = 150


class _Burst:
    """Ids waiting to be announced once the interval is over. The leading edge waits too, so the first
    change and the ones right behind it go out together."""

    def __init__(self, owner: QObject, interval_ms: int, emit: Callable[[str], None]) -> None:
        self._pending: set[str] = set()
        self._emit = emit
        self._timer = QTimer(owner)
        self._timer.setSingleShot(True)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._flush)

    def add(self, ident: str) -> None:
        self._pending.add(ident)
        if not self._timer.isActive():
            self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        self._pending.clear()

    @property
    def due(self) -> bool:
        """Whether an announcement is still to come."""
        return self._timer.isActive() or bool(self._pending)

    def _flush(self) -> None:
        pending, self._pending = self._pending, set()
        for ident in sorted(pending):
            self._emit(ident)


class EventBridge(QObject):
    conversationsChanged = Signal()
    # A bot was added or its settings changed (name, avatar, model, pause, ...).
    botsChanged = Signal()
    messagesChanged = Signal(str)
    liveReplyChanged = Signal(str)
    taskChanged = Signal(str)
    # A working run of this task took a step (task id); folded like taskChanged.
    runStepAdded = Signal(str)
    # Something on the needs-you list may have changed (AttentionChanged, or a task or rule changed): re-read
    # it. Folded over bursts.
    attentionChanged = Signal()
    # A rule was created, edited or deleted, or its runs moved on (rule id); folded like taskChanged.
    ruleChanged = Signal(str)
    # A model's price override was set or removed (model name): views showing prices re-read them.
    pricesChanged = Signal(str)
    # A chat channel was added or removed, or its status or login moved on (channel id). Not folded: a
    # login's steps are few and the person is watching the dialog for each.
    channelChanged = Signal(str)
    # A bot's MCP servers were saved, or one started, stopped or failed (bot id).
    mcpChanged = Signal(str)
    skillsChanged = Signal(str)  # a bot's id; "" for a shared skill (every bot's list)
    # A note of a bot's memory was kept, changed or deleted, or its notebook filled or got room (bot id).
    memoryChanged = Signal(str)
    webSearchChanged = Signal()  # the app's web search setup (the settings' 网页搜索 section re-reads it)

    def __init__(
        self,
        bus: EventBus,
        parent: QObject | None = None,
        live_interval_ms: int = LIVE_COALESCE_MS,
        task_interval_ms: int = TASK_COALESCE_MS,
        attention_interval_ms: int = ATTENTION_COALESCE_MS,
    ) -> None:
        super().__init__(parent)
        self._live = _Burst(self, live_interval_ms, self.liveReplyChanged.emit)
        self._tasks = _Burst(self, task_interval_ms, self.taskChanged.emit)
        self._steps = _Burst(self, task_interval_ms, self.runStepAdded.emit)
        self._attention = _Burst(self, attention_interval_ms, lambda _key: self.attentionChanged.emit())
        self._rules = _Burst(self, task_interval_ms, self.ruleChanged.emit)
        self._unsubscribe = bus.subscribe(self._on_event)

    def pending(self) -> bool:
        """Whether any coalesced signal is still due (tests check that a burst ended in one signal)."""
        return self._live.due or self._tasks.due or self._steps.due or self._attention.due or self._rules.due

    def close(self) -> None:
        self._unsubscribe()
        self._live.stop()
        self._tasks.stop()
        self._steps.stop()
        self._attention.stop()
        self._rules.stop()

    def _on_event(self, event: object) -> None:
        if isinstance(event, LiveReplyChanged):
            self._live.add(event.conversation_id)
        elif isinstance(event, TaskChanged):
            self._tasks.add(event.task_id)
            self._attention.add("")
        elif isinstance(event, RunStepAdded):
            self._steps.add(event.task_id)
        elif isinstance(event, RuleChanged):
            self._rules.add(event.rule_id)
            self._attention.add("")  # a rule paused, resumed or ready to act is a needs-you row
        elif isinstance(event, AttentionChanged):
            self._attention.add("")
        elif isinstance(event, McpServersChanged):
            self.mcpChanged.emit(event.bot_id)
        elif isinstance(event, SkillsChanged):
            self.skillsChanged.emit(event.bot_id or "")
        elif isinstance(event, MemoryChanged):
            self.memoryChanged.emit(event.bot_id)
        elif isinstance(event, WebSearchChanged):
            self.webSearchChanged.emit()
        elif isinstance(event, ChannelChanged):
            self.channelChanged.emit(event.channel_id)
            self._attention.add("")  # a login that expired is a needs-you row
        elif isinstance(event, MessagesChanged):
            self.messagesChanged.emit(event.conversation_id)
        elif isinstance(event, ConversationsChanged):
            self.conversationsChanged.emit()
        elif isinstance(event, BotsChanged):
            self.botsChanged.emit()
        elif isinstance(event, PricesChanged):
            self.pricesChanged.emit(event.model)

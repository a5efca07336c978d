"""The bridge turns core events into Qt signals, folding bursts of live-reply changes into one."""

from __future__ import annotations

from core.bus import EventBus
from core.changes import (
    AttentionChanged,
    BotsChanged,
    ChannelChanged,
    ConversationsChanged,
    LiveReplyChanged,
    MemoryChanged,
    MessagesChanged,
    RuleChanged,
    RunStepAdded,
    TaskChanged,
)
from tests.ui.conftest import wait_until
from ui.bridge import EventBridge


async def test_events_become_signals() -> None:
    bus = EventBus()
    bridge = EventBridge(bus)
    seen: list[tuple[str, str]] = []
    bridge.conversationsChanged.connect(lambda: seen.append(("conversations", "")))
    bridge.messagesChanged.connect(lambda cid: seen.append(("messages", cid)))
    bridge.liveReplyChanged.connect(lambda cid: seen.append(("live", cid)))

    bus.publish(ConversationsChanged())
    bus.publish(MessagesChanged("c1"))
    bus.publish(LiveReplyChanged("c1"))
    await wait_until(lambda: ("live", "c1") in seen)

    assert seen == [("conversations", ""), ("messages", "c1"), ("live", "c1")]
    bridge.close()


async def test_a_burst_of_live_changes_arrives_once_per_conversation() -> None:
    bus = EventBus()
    bridge = EventBridge(bus)
    live: list[str] = []
    bridge.liveReplyChanged.connect(live.append)

    for _ in range(500):
        bus.publish(LiveReplyChanged("c1"))
        bus.publish(LiveReplyChanged("c2"))
    await wait_until(lambda: len(live) >= 2)

    assert sorted(live) == ["c1", "c2"]
    bridge.close()


async def test_close_stops_the_signals() -> None:
    bus = EventBus()
    bridge = EventBridge(bus)
    seen: list[str] = []
    bridge.messagesChanged.connect(seen.append)
    bridge.liveReplyChanged.connect(seen.append)

    bus.publish(LiveReplyChanged("pending"))  # waiting in the coalescing timer
    bridge.close()
    bus.publish(MessagesChanged("c1"))
    bus.publish(LiveReplyChanged("c1"))

    # A later event from a fresh bridge proves the loop ran past the old timer's deadline.
    other = EventBridge(bus)
    probe: list[str] = []
    other.liveReplyChanged.connect(probe.append)
    bus.publish(LiveReplyChanged("probe"))
    await wait_until(lambda: probe == ["probe"])
    assert seen == []
    other.close()


async def test_run_steps_fold_per_task_and_leave_task_changes_alone() -> None:
    bus = EventBus()
    bridge = EventBridge(bus)
    steps: list[str] = []
    tasks: list[str] = []
    bridge.runStepAdded.connect(steps.append)
    bridge.taskChanged.connect(tasks.append)

    for _ in range(200):
        bus.publish(RunStepAdded("t_a", "r_1"))
        bus.publish(RunStepAdded("t_b", "r_2"))
    await wait_until(lambda: len(steps) >= 2 and not bridge.pending())

    assert sorted(steps) == ["t_a", "t_b"]
    assert tasks == []  # a step doesn't make the task list or needs-you re-read
    bridge.close()


async def test_bot_changes_become_a_signal() -> None:
    bus = EventBus()
    bridge = EventBridge(bus)
    seen: list[str] = []
    bridge.botsChanged.connect(lambda: seen.append("bots"))

    bus.publish(BotsChanged())
    await wait_until(lambda: bool(seen))

    assert seen == ["bots"]
    bridge.close()


async def test_a_change_of_a_bots_memory_becomes_a_signal_with_its_bot() -> None:
    bus = EventBus()
    bridge = EventBridge(bus)
    seen: list[str] = []
    bridge.memoryChanged.connect(seen.append)

    bus.publish(MemoryChanged("b_1"))
    await wait_until(lambda: bool(seen))

    assert seen == ["b_1"]
    bridge.close()


async def test_needs_you_is_re_read_after_an_attention_task_or_rule_change_once_per_burst() -> None:
    bus = EventBus()
    bridge = EventBridge(bus)
    attention: list[str] = []
    bridge.attentionChanged.connect(lambda: attention.append("re-read"))

    bus.publish(AttentionChanged())  # a chat question opened, a delivery got stuck, ...
    bus.publish(TaskChanged("t_a"))
    bus.publish(RuleChanged("u_a"))
    await wait_until(lambda: attention != [] and not bridge.pending())
    assert attention == ["re-read"]

    bus.publish(AttentionChanged())
    await wait_until(lambda: len(attention) == 2 and not bridge.pending())
    bus.publish(RuleChanged("u_b"))  # a rule paused after failures: its row appears
    await wait_until(lambda: len(attention) == 3 and not bridge.pending())
    bridge.close()


async def test_a_channel_change_re_reads_needs_you() -> None:
    """A channel whose login expired is a needs-you row; its status change is all that announces it."""
    bus = EventBus()
    bridge = EventBridge(bus)
    attention: list[str] = []
    bridge.attentionChanged.connect(lambda: attention.append("re-read"))
    bus.publish(ChannelChanged("ch_1"))
    await wait_until(lambda: attention != [] and not bridge.pending())
    assert attention == ["re-read"]
    bridge.close()


async def test_a_channel_change_is_announced_with_its_id() -> None:
    """The 渠道 group and the login dialog follow each step of a channel's login as it is announced."""
    bus = EventBus()
    bridge = EventBridge(bus)
    seen: list[str] = []
    bridge.channelChanged.connect(seen.append)
    bus.publish(ChannelChanged("ch_1"))
    bus.publish(ChannelChanged("ch_1"))
    assert seen == ["ch_1", "ch_1"]
    bridge.close()

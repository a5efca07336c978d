"""Which things may raise an OS notification (docs/push-rules.md#os-notifications): needs-you items and
results the user asked for, only while the window isn't focused, at most one per item.

Pure and Qt-free: the caller feeds it what it read (needs-you items, a delivery that may ring) and sends
what it lets through. "At most one per item" holds for this app run: an item that leaves the list and
comes back with the same id stays quiet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from core.attention.items import AttentionItem
from core.store.deliveries import DeliveryRecord

NoticeKind = Literal["needs_you", "result"]

# Ringing deliveries that are results: a task's done report, a rule hit in act mode, or a digest of those.
# Questions, approvals and failures reach the person as needs-you items instead, so they notify from there
# (once) and not a second time from the outbox.
RESULT_PURPOSES: frozenset[str] = frozenset({"result", "rule", "digest"})


@dataclass(frozen=True, slots=True)
class Notice:
    """One notification to send. `key` is what "at most once" counts: the item or delivery id."""

    key: str
    kind: NoticeKind
    bot_id: str
    title_subject: str  # the task title for a needs-you item ('' when it has none)
    body: str
    task_id: str = ""
    conversation_id: str = ""


def task_title(item: AttentionItem) -> str:
    """The task's title from a subject like 'GPU 价格调研 · 等你回答'; the whole subject otherwise."""
    head, sep, _label = item.subject.partition(" · ")
    return head.strip() if sep else item.subject.strip()


def item_body(item: AttentionItem) -> str:
    """「GPU 价格调研:要登录 X 云的控制台才看得到包月价,账号用哪个?」: the title, then the first line of
    what the person reads (a second line, such as a question's default, stays in the app)."""
    title = task_title(item)
    line = item.line.strip().splitlines()[0].strip() if item.line.strip() else ""
    if title and line:
        return f"{title}:{line}"
    return title or line


def result_body(delivery: DeliveryRecord) -> str:
    return " ".join(delivery.text.split())


class NotificationGate:
    def __init__(self, window_focused: Callable[[], bool]) -> None:
        self._window_focused = window_focused
        self._told: set[str] = set()
        self._baselined = False

    def told(self, key: str) -> bool:
        return key in self._told

    def baseline(self, items: Iterable[AttentionItem]) -> None:
        """What waits when the app starts is already on screen (the window opens with it): nothing to
        notify. Items arriving after this do."""
        self._told.update(item.id for item in items)
        self._baselined = True

    @property
    def baselined(self) -> bool:
        return self._baselined

    def admit_items(self, items: Iterable[AttentionItem], bot_names: Mapping[str, str]) -> list[Notice]:
        """The notices for items not told yet that may notify; none while the window is focused.
        An item seen while the window is focused counts as told: the person saw it arrive."""
        fresh = [item for item in items if item.id not in self._told]
        if not fresh:
            return []
        focused = self._window_focused()
        notices: list[Notice] = []
        for item in fresh:
            if not item.pushed:
                continue  # observe_ready and the like: shown in the list, never rung
            self._told.add(item.id)
            if focused:
                continue
            notices.append(
                Notice(
                    key=item.id,
                    kind="needs_you",
                    bot_id=item.bot_id,
                    title_subject=task_title(item),
                    body=item_body(item) or bot_names.get(item.bot_id, ""),
                    task_id=item.task_id,
                    conversation_id=item.conversation_id,
                )
            )
        return notices

    def admit_result(self, delivery: DeliveryRecord) -> Notice | None:
        """A delivery the outbox lets ring: a notice when it's a result, not told yet, and the window
        isn't focused."""
        if delivery.purpose not in RESULT_PURPOSES or delivery.id in self._told:
            return None
        self._told.add(delivery.id)
        if self._window_focused():
            return None
        return Notice(
            key=delivery.id,
            kind="result",
            bot_id=delivery.bot_id,
            title_subject="",
            body=result_body(delivery),
            task_id=delivery.task_id,
            conversation_id=delivery.conversation_id,
        )

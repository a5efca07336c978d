"""OS notifications for needs-you items and results (docs/push-rules.md#os-notifications): what the gate lets
through goes to a Notifier.

`Notifications` re-reads the needs-you list when the bridge says it may have changed (folded: one read in
flight, a burst becomes one more) and is handed the outbox's ringing deliveries. Sending never holds up the
outbox or the Qt loop: each send is its own task.

`DesktopNotifierSender` is the real Notifier: desktop-notifier (D-Bus on Linux) inside a 3 s time-out,
because a service that owns the name but never answers would hang the call for 30 s; when that fails, the
tray shows the message itself; with no tray, nothing is shown (the badge and the window still say it).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from app.notification_gate import Notice, NotificationGate
from core.attention.facade import AttentionFacade
from core.attention.items import AttentionItem
from core.bots.facade import BotFacade
from core.clock import Clock, SystemClock
from core.delivery.outbox import local_zone
from core.delivery.policy import QuietHours
from core.store.deliveries import DeliveryRecord
from ui.assets import icon_path
from ui.async_calls import AsyncCalls
from ui.bridge import EventBridge
from ui.i18n import language, t
from ui.reloader import Reloader

log = logging.getLogger(__name__)

SEND_TIMEOUT_S = 3.0

Fallback = Callable[[str, str, Callable[[], None]], bool]


class Notifier(Protocol):
    async def send(self, title: str, body: str, on_clicked: Callable[[], None]) -> bool:
        """Show one notification; True when something was shown. Never raises."""
        ...


class ItemOpener(Protocol):
    """What a click opens; MainWindow has both."""

    def show_needs_you(self) -> None: ...

    def open_attention(self, task_id: str, conversation_id: str) -> None: ...


class DesktopNotifierSender:
    def __init__(
        self, app_name: str = "Errand", fallback: Fallback | None = None, timeout_s: float = SEND_TIMEOUT_S
    ) -> None:
        self._app_name = app_name
        self._fallback = fallback
        self._timeout_s = timeout_s
        self._notifier: Any = None

    def _desktop_notifier(self) -> Any:
        # Imported on the first notification, not at start-up: it pulls in a D-Bus client.
        if self._notifier is None:
            from desktop_notifier import DesktopNotifier, Icon

            # It logs every failed send with a full traceback (no session bus: every time); we log one line.
            logging.getLogger("desktop_notifier").setLevel(logging.ERROR)
            self._notifier = DesktopNotifier(app_name=self._app_name, app_icon=Icon(path=icon_path("errand")))
        return self._notifier

    async def send(self, title: str, body: str, on_clicked: Callable[[], None]) -> bool:
        dispatched: list[bool] = []
        try:
            notifier = self._desktop_notifier()
            # send() never raises when the service is missing; only on_dispatched tells success.
            await asyncio.wait_for(
                notifier.send(
                    title=title,
                    message=body,
                    on_dispatched=lambda: dispatched.append(True),
                    on_clicked=on_clicked,
                ),
                self._timeout_s,
            )
        except TimeoutError:
            log.warning("the notification service did not answer within %.0f s", self._timeout_s)
        except Exception:
            log.warning("sending a desktop notification failed", exc_info=True)
        if dispatched:
            return True
        if self._fallback is not None and self._fallback(title, body, on_clicked):
            log.info("notification shown by the tray instead")
            return True
        log.info("no way to show a notification here; the badge and the window carry it")
        return False


class Notifications:
    def __init__(
        self,
        attention: AttentionFacade,
        bots: BotFacade,
        bridge: EventBridge,
        notifier: Notifier,
        opener: ItemOpener,
        window_focused: Callable[[], bool],
        raise_window: Callable[[], None],
        clock: Clock | None = None,
    ) -> None:
        self._attention = attention
        self._bots = bots
        self._bridge = bridge
        self._notifier = notifier
        self._opener = opener
        self._raise_window = raise_window
        self._clock: Clock = clock or SystemClock()
        self.gate = NotificationGate(window_focused)
        self._calls = AsyncCalls()
        self._names: dict[str, str] = {}
        self._item_listeners: list[Callable[[list[AttentionItem]], None]] = []
        self._reader: Reloader[list[AttentionItem]] = Reloader(
            lambda: self._attention.items(lang=language()), self._apply_items
        )
        self._started = False

    def on_items(self, listener: Callable[[list[AttentionItem]], None]) -> None:
        """Also hand every needs-you read to `listener` (the tray badge), so the list is read once."""
        self._item_listeners.append(listener)

    def start(self) -> asyncio.Future[None]:
        """Read the list now (what already waits is on screen: it doesn't notify) and on every change."""
        if not self._started:
            self._started = True
            self._bridge.attentionChanged.connect(self.reload)
            self._bridge.botsChanged.connect(self._forget_names)
        return self._reader.request()

    def reload(self) -> asyncio.Future[None] | None:
        if not self._started:
            return None
        return self._reader.request()

    async def on_ring(self, delivery: DeliveryRecord) -> None:
        """The outbox's ring listener. Returns at once: a slow notification service never holds a send."""
        notice = self.gate.admit_result(delivery)
        if notice is not None:
            self._calls.start(self._send(notice))

    async def drain(self) -> None:
        """Wait for the notifications being decided or sent now (tests)."""
        await self._calls.wait_all()

    def shutdown(self) -> None:
        if self._started:
            self._started = False
            self._bridge.attentionChanged.disconnect(self.reload)
            self._bridge.botsChanged.disconnect(self._forget_names)
        self._reader.reset()
        self._calls.cancel_all()

    def _apply_items(self, items: list[AttentionItem]) -> None:
        for listener in self._item_listeners:
            listener(items)
        if not self.gate.baselined:
            self.gate.baseline(items)
            return
        for notice in self.gate.admit_items(items, self._names):
            self._calls.start(self._send(notice))

    async def _send(self, notice: Notice) -> None:
        if notice.kind == "needs_you" and await self._quiet_now(notice.bot_id):
            # The badge and the page carry it; results never get here in quiet hours (the outbox holds them).
            log.info("not ringing for %s: the bot's quiet hours", notice.key)
            return
        name = await self._bot_name(notice.bot_id)
        if notice.kind == "needs_you":
            title = t("notify.needs_you", bot=name)
        else:
            title = t("notify.result", bot=name)
        await self._notifier.send(title, notice.body, lambda: self.open(notice))

    def open(self, notice: Notice) -> None:
        """A click: bring the window forward with the item shown (needs-you page; a result's task or
        conversation)."""
        self._raise_window()
        if notice.kind == "needs_you":
            self._opener.show_needs_you()
        else:
            self._opener.open_attention(notice.task_id, notice.conversation_id)

    async def _quiet_now(self, bot_id: str) -> bool:
        try:
            bot = await self._bots.get(bot_id)
        except Exception:
            return False
        return QuietHours(bot.quiet_start, bot.quiet_end).contains(self._clock.time(), local_zone())

    def _forget_names(self) -> None:
        self._names = {}  # a bot was renamed or added: read the names again at the next notification

    async def _bot_name(self, bot_id: str) -> str:
        if bot_id not in self._names:
            try:
                self._names = {bot.id: bot.name for bot in await self._bots.list()}
            except Exception:
                log.warning("reading bot names for a notification failed", exc_info=True)
        return self._names.get(bot_id) or t("notify.app")

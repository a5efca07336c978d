"""Sleep and resume on the desktop: logind's PrepareForSleep signal where there is one, and the portable
clock-drift watcher everywhere. Both end in one `Host.resync` per wake (`CoalescedResync`).

logind is on the system bus; `QDBusConnection.connect()` says True even when logind is absent, so the
watcher first checks that the bus is there and the Manager interface answers (`isValid()`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, Slot
from PySide6.QtDBus import QDBusConnection, QDBusInterface

from core.clock import Clock
from core.clock_watch import ClockJumpWatcher, CoalescedResync, Resync
from ui.async_calls import AsyncCalls

log = logging.getLogger(__name__)

LOGIND_SERVICE = "org.freedesktop.login1"
LOGIND_PATH = "/org/freedesktop/login1"
LOGIND_MANAGER = "org.freedesktop.login1.Manager"
# What Qt's SLOT() macro makes of the slot's signature (QtDBus wants it as bytes).
_RESUME_SLOT = b"1on_prepare_for_sleep(bool)"


class LogindSleepWatcher(QObject):
    """Calls `on_resume()` when logind says the machine woke up (PrepareForSleep(false))."""

    def __init__(self, on_resume: Callable[[], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._on_resume = on_resume
        self.active = False

    def start(self) -> bool:
        """Subscribe when logind is there; False (and a log line) when it isn't."""
        bus = QDBusConnection.systemBus()
        if not bus.isConnected():
            log.info("no system D-Bus here: sleep and resume are noticed by the clock-drift watcher only")
            return False
        # Introspects once over the system bus (a local socket): fast, and only at start.
        manager = QDBusInterface(LOGIND_SERVICE, LOGIND_PATH, LOGIND_MANAGER, bus)
        if not manager.isValid():
            log.info(
                "logind is not available (%s): sleep and resume are noticed by the clock-drift watcher only",
                manager.lastError().message() or "no answer",
            )
            return False
        self.active = bus.connect(
            LOGIND_SERVICE,
            LOGIND_PATH,
            LOGIND_MANAGER,
            "PrepareForSleep",
            self,
            _RESUME_SLOT,
        )
        log.info("listening to logind for sleep and resume: %s", self.active)
        return self.active

    def stop(self) -> None:
        if not self.active:
            return
        QDBusConnection.systemBus().disconnect(
            LOGIND_SERVICE, LOGIND_PATH, LOGIND_MANAGER, "PrepareForSleep", self, _RESUME_SLOT
        )
        self.active = False

    @Slot(bool)
    def on_prepare_for_sleep(self, going_to_sleep: bool) -> None:
        if going_to_sleep:
            log.info("the machine is going to sleep")
            return
        log.info("the machine woke up")
        self._on_resume()


class PowerWatch:
    """Both watchers, feeding one coalesced resync. Start after the host started; stop before it stops."""

    def __init__(self, resync: Resync, clock: Clock, *, use_logind: bool = True) -> None:
        self.resync = CoalescedResync(resync, clock)
        self.drift = ClockJumpWatcher(clock, self.resync)
        self.sleep = LogindSleepWatcher(self._resumed) if use_logind else None
        self._calls = AsyncCalls()

    def start(self) -> None:
        self.drift.start()
        if self.sleep is not None:
            self.sleep.start()

    async def stop(self) -> None:
        if self.sleep is not None:
            self.sleep.stop()
        self._calls.cancel_all()
        await self.drift.stop()

    def _resumed(self) -> None:
        # A Qt slot cannot await; the resync runs as a task on the same (qasync) loop.
        self._calls.start(self.resync("resume"))

"""`errand`: the tray app. Shows the window first, then starts the host on the same (qasync) loop.

The agent runtime is imported by `Host.start()` in a worker thread, after the window is on screen; until
the window's first read is shown, a calm skeleton stands in for its content (`ui.skeleton`). A language saved
in Settings applies at once: the window is built again in it (`app.live_language`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from app.child_watcher import watch_children_with_pidfd
from app.collector import resume_after_start
from app.logging_setup import setup_logging
from app.process_age import process_age
from app.secrets import make_secret_store
from app.settings_from_env import model_override

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication

    from app.late_facades import HostFacades
    from app.live_language import LiveLanguage
    from app.notifications import Notifications
    from app.power import PowerWatch
    from app.window_actions import WindowActions
    from core.bots.facade import BotFacade
    from core.bus import EventBus
    from core.host import Host
    from core.memory.facade import MemoryFacade
    from ui.bridge import EventBridge
    from ui.main_window import MainWindow
    from ui.skeleton import LoadingSkeleton

log = logging.getLogger(__name__)


def no_display_reason() -> str | None:
    """Why a window cannot open here, or None. Qt itself would abort with a cryptic plugin error."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return (
        "There is no display here (neither DISPLAY nor WAYLAND_DISPLAY is set), so the window cannot open. "
        "Start Errand from your desktop session, or run `errand serve` for the headless host and its API."
    )


def run_gui(data_dir: Path) -> int:
    """Run the tray app; the caller holds the data-dir lock."""
    reason = no_display_reason()
    if reason:
        print(f"errand: {reason}", file=sys.stderr)
        return 2
    # ERRAND_LOG_STDERR=1 logs to stderr too, as `serve` does: for a terminal, and tests that wait on a line.
    setup_logging(data_dir, to_stderr=os.environ.get("ERRAND_LOG_STDERR") == "1")
    from app import qt_import_hook

    qt_import_hook.install()  # before the window's and the host's imports: ~20 MB of sources kept otherwise
    return _run(data_dir)


def _application(data_dir: Path) -> QApplication:
    """The Qt application, named and styled with the person's choices from Settings (read before anything
    is built; a later language change rebuilds the window, see `app.live_language`)."""
    from PySide6.QtWidgets import QApplication

    from app.tray import app_icon
    from core.preferences import stored_preferences
    from ui.i18n import use_language
    from ui.theme import apply_theme

    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    app.setApplicationName("Errand")
    app.setDesktopFileName("errand")  # the launcher entry (docs/packaging.md#launcher): docks show its icon
    app.setWindowIcon(app_icon())
    chosen = stored_preferences(data_dir / "errand.db")
    if chosen.language != "auto":
        use_language(chosen.language)
    apply_theme(app, None if chosen.theme == "auto" else chosen.theme)
    return app


def _run(data_dir: Path) -> int:
    import qasync

    from app.instance_socket import InstanceServer, socket_name
    from app.late_facades import LateFacades
    from core.bus import EventBus
    from ui.bridge import EventBridge
    from ui.skeleton import LoadingSkeleton

    # ERRAND_STARTUP_PROBE=1 prints start-up timings and quits once the host is up (bench/startup.py).
    probe = os.environ.get("ERRAND_STARTUP_PROBE") == "1"
    app = _application(data_dir)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    watch_children_with_pidfd(loop)
    quit_requested = asyncio.Event()
    # Like the tray's Quit: the host stops cleanly on Ctrl+C and on SIGTERM (a logout, `kill`, systemd).
    _stop_on_signals(loop, quit_requested.set)

    # The window first, over stand-ins for the host's facades; the host's modules import after it is on
    # screen, off the loop (docs/architecture.md#start-up).
    bus = EventBus()
    bridge = EventBridge(bus)
    facades = LateFacades()
    live = _live_window(facades, bridge, memory=facades.memory)
    skeleton = LoadingSkeleton(live.window)
    live.window.show()
    shown_at = process_age()
    desktop = _Desktop(data_dir, facades.desktop_bots, bridge, live.window, quit_requested.set)
    live.on_replaced(desktop.use_window)
    tray_at = process_age()
    later_launches = InstanceServer(socket_name(data_dir), on_show=desktop.open_window)
    app.lastWindowClosed.connect(lambda: None if desktop.tray.available else quit_requested.set())

    async def main() -> int:
        try:
            host = await _built_host(data_dir, bus)
            built_at = process_age()
            actions = _window_actions(host, live, app, bridge)
            await _first_read(host, live, skeleton, on_started=lambda: facades.bind(host))
        except Exception:
            log.exception("the host failed to start")
            from PySide6.QtWidgets import QMessageBox

            QMessageBox.critical(
                live.window, "Errand", f"Errand could not start. See {data_dir / 'logs' / 'errand.log'}."
            )
            return 1
        desktop.host_started(host)
        actions.host_started()
        if probe:
            _print_probe(shown_at, tray_at, built_at)
            quit_requested.set()
        await quit_requested.wait()
        log.info("quitting")
        later_launches.close()
        await desktop.stop()
        actions.shutdown()
        # Closed before the host stops: events from stopping must not start reads of a closing store.
        bridge.close()
        live.window.shutdown()
        await host.stop()
        return 0

    with loop:
        code: int = loop.run_until_complete(main())
    return code


async def _built_host(data_dir: Path, bus: EventBus) -> Host:
    """The host, its modules imported in a worker thread while the window stays live (a second of imports
    on the loop would freeze the window just shown); built on the loop, where it will run."""
    import importlib

    await asyncio.to_thread(importlib.import_module, "core.host")
    from core.host import Host

    return Host(data_dir, secrets=make_secret_store(data_dir), model_override=model_override(), bus=bus)


def _window_actions(host: Host, live: LiveLanguage, app: QApplication, bridge: EventBridge) -> WindowActions:
    """What the window asks the app to open (settings, new task), over the host; onto every rebuilt window."""
    from app.window_actions import WindowActions

    actions = WindowActions(host, live.window, app, bridge, switch_language=live.switch)
    live.on_replaced(actions.use_window)
    return actions


def _print_probe(shown_at: float, tray_at: float, built_at: float) -> None:
    import psutil

    rss_mb = psutil.Process().memory_info().rss / 2**20
    print(
        f"window-shown {shown_at:.3f}\ntray-shown {tray_at:.3f}\nhost-built {built_at:.3f}\n"
        f"host-started {process_age():.3f}\nrss-mb {rss_mb:.1f}",
        flush=True,
    )


async def _first_read(
    host: Host, live: LiveLanguage, skeleton: LoadingSkeleton, *, on_started: Callable[[], None] | None = None
) -> None:
    """Start the host and show the window's first read, which takes the skeleton's place. `on_started`
    runs once the host can answer, before the read (the window's stand-ins are bound to it then)."""
    first = live.window
    try:
        await host.start()
        if on_started is not None:
            on_started()
        await first.refresh()
        if live.window is not first:  # the language changed while the host was starting
            await live.window.refresh()
        live.refreshed = True
        resume_after_start()
    finally:
        skeleton.remove()


def _live_window(host: HostFacades, bridge: EventBridge, memory: MemoryFacade | None = None) -> LiveLanguage:
    """The main window over the host's facades (and the memory's, when given), built again whenever the
    language changes."""
    from app.live_language import LiveLanguage
    from ui.main_window import MainWindow

    def build_window() -> MainWindow:
        window = MainWindow(
            host.chat,
            bridge,
            tasks=host.tasks,
            attention=host.attention,
            bots=host.desktop_bots,
            rules=host.rules,
            channels=host.channels,
            memory=memory,
        )
        window.use_search(host.search)
        return window

    return LiveLanguage(build_window)


def _stop_on_signals(loop: asyncio.AbstractEventLoop, stop: Callable[[], None]) -> None:
    """Run `stop` on SIGINT and SIGTERM. Qt's own loop never hands control back to Python for a signal, so
    on POSIX the loop's signal handler wakes it through a file descriptor it watches."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop)
        except (NotImplementedError, RuntimeError):  # Windows: no loop signal handlers there
            signal.signal(sig, lambda _sig, _frame: loop.call_soon_threadsafe(stop))


class _Desktop:
    """The parts around the window: tray (badge, menu), OS notifications, sleep/resume. The tray comes up
    with the window; the rest once the host has started, since they read through it. After a language
    change `use_window` moves them onto the rebuilt window."""

    def __init__(
        self,
        data_dir: Path,
        bots: BotFacade,
        bridge: EventBridge,
        window: MainWindow,
        quit_app: Callable[[], None],
    ) -> None:
        from app.tray import NoTrayNote, PauseControl, Tray
        from app.tray_notice import ClosedToTrayNotice

        self._bridge = bridge
        self._window = window
        self._notifications: Notifications | None = None
        self._power: PowerWatch | None = None
        self.pause = PauseControl(bots)  # reads the bots once the host has started
        self.tray = Tray(
            window,
            on_quit=quit_app,
            on_open=self.open_window,
            on_new_task=self.new_task,
            on_set_paused=self.pause.set_paused,
        )
        self.pause.show = self.tray.set_paused_checked
        window.set_close_to_tray(self.tray.available)
        self._tray_notice = ClosedToTrayNotice(data_dir, self.tray.show_message)
        window.closedToTray.connect(self._tray_notice.closed_to_tray)
        if not self.tray.available:
            log.info("no system tray here: closing the window quits Errand")
            NoTrayNote(data_dir).show_once(window)

    @property
    def window(self) -> MainWindow:
        return self._window

    def use_window(self, window: MainWindow) -> None:
        """The window was rebuilt (a language change): the tray's menu and words, closing to the tray and
        what notifications open all follow the new one."""
        self._window = window
        self.tray.follow(window)
        window.set_close_to_tray(self.tray.available)
        window.closedToTray.connect(self._tray_notice.closed_to_tray)

    def open_window(self) -> None:
        from app.tray import bring_forward

        bring_forward(self._window)

    # What a notification's click opens, always in the window shown now (an `ItemOpener`).
    def show_needs_you(self) -> None:
        self._window.show_needs_you()

    def open_attention(self, task_id: str, conversation_id: str) -> None:
        self._window.open_attention(task_id, conversation_id)

    def new_task(self) -> None:
        self.open_window()
        self._window.new_task()

    def host_started(self, host: Host) -> None:
        from app.notifications import DesktopNotifierSender, Notifications
        from app.power import PowerWatch
        from ui.i18n import t

        notifications = Notifications(
            host.attention,
            host.desktop_bots,
            self._bridge,
            DesktopNotifierSender(t("notify.app"), fallback=self.tray.show_message),
            self,
            window_focused=lambda: self._window.isVisible() and self._window.isActiveWindow(),
            raise_window=self.open_window,
            clock=host.clock,
        )
        notifications.on_items(lambda items: self.tray.set_count(len(items)))
        host.outbox.on_ring(notifications.on_ring)
        notifications.start()
        self._notifications = notifications
        self._bridge.botsChanged.connect(self.pause.refresh)
        self.pause.refresh()
        self._power = PowerWatch(host.resync, host.clock)
        self._power.start()

    async def stop(self) -> None:
        if self._power is not None:
            await self._power.stop()
        if self._notifications is not None:
            self._notifications.shutdown()
        self.pause.shutdown()
        self.tray.hide()

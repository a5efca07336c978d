"""`errand`: the tray app. Shows the window first, then starts the host on the same (qasync) loop.

pydantic-ai is imported by `Host.start()` in a worker thread, after the window is on screen.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from pathlib import Path

from app.logging_setup import setup_logging
from app.secrets import make_secret_store
from app.settings_from_env import model_override

log = logging.getLogger(__name__)


def _process_age() -> float:
    """Seconds since this process was created: cold start includes the interpreter's own start-up."""
    import psutil

    return time.time() - float(psutil.Process().create_time())


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
    setup_logging(data_dir, to_stderr=False)
    return _run(data_dir)


def _run(data_dir: Path) -> int:
    import qasync
    from PySide6.QtWidgets import QApplication

    from app.tray import Tray, app_icon
    from core.host import Host
    from ui.bridge import EventBridge
    from ui.main_window import MainWindow
    from ui.theme import apply_theme

    # ERRAND_STARTUP_PROBE=1 prints start-up timings and quits once the host is up (bench/startup.py).
    probe = os.environ.get("ERRAND_STARTUP_PROBE") == "1"
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    app.setApplicationName("Errand")
    app.setWindowIcon(app_icon())
    apply_theme(app)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    quit_requested = asyncio.Event()

    host = Host(data_dir, secrets=make_secret_store(data_dir), model_override=model_override())
    window = MainWindow(host.chat, EventBridge(host.bus), tasks=host.tasks, attention=host.attention)
    window.show()
    shown_at = _process_age()
    tray = Tray(window, on_quit=quit_requested.set)
    window.set_close_to_tray(tray.available)
    if not tray.available:
        log.info("no system tray here: closing the window quits Errand")
    app.lastWindowClosed.connect(lambda: None if tray.available else quit_requested.set())

    async def main() -> int:
        try:
            await host.start()
            await window.refresh()
        except Exception:
            log.exception("the host failed to start")
            from PySide6.QtWidgets import QMessageBox

            QMessageBox.critical(
                window, "Errand", f"Errand could not start. See {data_dir / 'logs' / 'errand.log'}."
            )
            return 1
        if probe:
            import psutil

            rss_mb = psutil.Process().memory_info().rss / 2**20
            print(
                f"window-shown {shown_at:.3f}\nhost-started {_process_age():.3f}\nrss-mb {rss_mb:.1f}",
                flush=True,
            )
            quit_requested.set()
        await quit_requested.wait()
        window.shutdown()
        tray.hide()
        await host.stop()
        return 0

    with loop:
        code: int = loop.run_until_complete(main())
    return code

"""`errand serve`: the host headless on a plain asyncio loop, with the HTTP API. SIGTERM stops it cleanly."""

from __future__ import annotations

import asyncio
import logging
import secrets
import signal
import sys
from pathlib import Path

from app.api_file import remove_api_file, write_api_file
from app.child_watcher import watch_children_with_pidfd
from app.collector import resume_after_start
from app.logging_setup import setup_logging
from app.secrets import make_secret_store
from app.settings_from_env import model_override

log = logging.getLogger(__name__)


async def serve(data_dir: Path, port: int) -> int:
    """Run the host headless until SIGTERM; the caller holds the data-dir lock."""
    setup_logging(data_dir, to_stderr=True)
    watch_children_with_pidfd(asyncio.get_running_loop())
    from core.api.server import ApiServer
    from core.clock_watch import ClockJumpWatcher
    from core.host import Host

    host = Host(data_dir, secrets=make_secret_store(data_dir), model_override=model_override())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await host.start()
    # A headless host sleeps and has its clock changed too: schedules and held deliveries look again.
    drift = ClockJumpWatcher(host.clock, host.resync)
    drift.start()
    api = ApiServer(host, token=secrets.token_urlsafe(32), port=port)
    try:
        url = await api.start()
    except OSError as exc:
        print(
            f"errand: cannot listen on 127.0.0.1:{port} ({exc.strerror}). Pick another --port.",
            file=sys.stderr,
        )
        await drift.stop()
        await host.stop()
        return 1
    resume_after_start()
    path = write_api_file(data_dir, url, api.token)
    print(f"Errand API listening on {url} (token in {path})", flush=True)
    log.info("serving API on %s", url)
    await stop.wait()
    log.info("stopping")
    await drift.stop()
    await api.stop()
    await host.stop()
    remove_api_file(data_dir)
    return 0


def run_serve(data_dir: Path, port: int) -> int:
    return asyncio.run(serve(data_dir, port))

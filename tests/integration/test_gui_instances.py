"""The tray app as real processes: a second launch brings the first one's window forward and exits, and
SIGTERM or SIGINT stops the first one as cleanly as the tray's Quit does."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.fakes.model_server import ScriptedModelServer
from tests.serve_process import serve_env, serve_process

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _gui_env(model_server: ScriptedModelServer, home: Path) -> dict[str, str]:
    env = serve_env(model_server, home)
    env["QT_QPA_PLATFORM"] = "offscreen"
    env["ERRAND_LOG_STDERR"] = "1"  # the tests wait on the app's log lines
    return env


@asynccontextmanager
async def _gui_process(data_dir: Path, env: dict[str, str]) -> AsyncIterator[asyncio.subprocess.Process]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "app.cli",
        "--data-dir",
        str(data_dir),
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield proc
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def _log(data_dir: Path) -> str:
    path = data_dir / "logs" / "errand.log"
    return path.read_text(encoding="utf-8") if path.exists() else ""


async def _logged(data_dir: Path, words: str, proc: asyncio.subprocess.Process) -> None:
    """Until the app logs `words` (on stderr too, with ERRAND_LOG_STDERR=1): each line is awaited."""
    assert proc.stderr is not None
    async with asyncio.timeout(60):
        while True:
            line = await proc.stderr.readline()
            assert line, "the app exited before it said: " + words
            if words in line.decode(errors="replace"):
                return


async def _second_launch(data_dir: Path, env: dict[str, str]) -> tuple[int | None, str]:
    async with _gui_process(data_dir, env) as second:
        _, err = await asyncio.wait_for(second.communicate(), timeout=60)
        return second.returncode, err.decode()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_second_launch_brings_the_window_forward_and_a_signal_stops_the_first_cleanly(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path, sig: signal.Signals
) -> None:
    data_dir = tmp_path / "data"
    env = _gui_env(model_server, home)
    async with _gui_process(data_dir, env) as first:
        await _logged(data_dir, "host started", first)

        code, err = await _second_launch(data_dir, env)
        assert code == 0, err
        assert "Errand is already running; its window was brought forward." in err
        await _logged(data_dir, "a later launch asked for the window", first)

        first.send_signal(sig)
        assert await asyncio.wait_for(first.wait(), timeout=30) == 0
    log = _log(data_dir)
    assert "quitting" in log and "host stopped" in log
    assert "Traceback" not in log


async def test_a_second_launch_next_to_a_headless_host_says_nobody_answered(
    tmp_path: Path, model_server: ScriptedModelServer, home: Path
) -> None:
    data_dir = tmp_path / "data"
    env = serve_env(model_server, home)
    async with serve_process(data_dir, env) as headless:
        assert headless.stdout is not None
        line = await asyncio.wait_for(headless.stdout.readline(), timeout=30)
        assert b"listening on" in line

        code, err = await _second_launch(data_dir, _gui_env(model_server, home))
        assert code == 1
        assert "did not answer a request to show its window" in err and "--data-dir" in err
        headless.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(headless.wait(), timeout=15) == 0

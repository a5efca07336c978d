"""The one-off commands through the real `errand` command line: install-desktop twice and
uninstall-desktop, reset from a script without and with --yes, reset of a data dir a running serve holds."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.model_server import ScriptedModelServer
from tests.serve_process import read_until_listening, serve_env, serve_process

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _errand(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,  # a script, not a terminal
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ERRAND_", "XDG_"))}
    return dict(
        base, HOME=str(home), XDG_DATA_HOME=str(tmp_path / "share"), XDG_CONFIG_HOME=str(tmp_path / "cfg")
    )


def test_install_desktop_twice_then_uninstall(env: dict[str, str], tmp_path: Path) -> None:
    first = _errand("install-desktop", env=env)
    assert first.returncode == 0, first.stderr
    entry = tmp_path / "share" / "applications" / "errand.desktop"
    assert f"Exec={sys.executable} -m app.cli\n" in entry.read_text(encoding="utf-8")
    assert (tmp_path / "share" / "icons" / "hicolor" / "scalable" / "apps" / "errand.svg").is_file()

    second = _errand("install-desktop", env=env)
    assert second.returncode == 0
    assert "nothing changed" in second.stdout

    data_dir = tmp_path / "data"
    gone = _errand("uninstall-desktop", "--data-dir", str(data_dir), env=env)
    assert gone.returncode == 0
    assert not entry.exists()
    assert f"Your data stays in {data_dir}" in gone.stdout


def test_install_desktop_with_no_home_says_what_to_set(env: dict[str, str], tmp_path: Path) -> None:
    env = {k: v for k, v in env.items() if k != "XDG_DATA_HOME"}
    env["HOME"] = str(tmp_path / "no-such-home")
    done = _errand("install-desktop", env=env)
    assert done.returncode == 2
    assert "No XDG data directory here" in done.stderr
    assert not (tmp_path / "no-such-home").exists()


def test_reset_from_a_script_needs_yes(env: dict[str, str], tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    (data_dir / "logs").mkdir(parents=True)
    (data_dir / "errand.db").write_bytes(b"db")
    refused = _errand("reset", "--data-dir", str(data_dir), env=env)
    assert refused.returncode == 2
    assert "add --yes" in refused.stderr
    assert (data_dir / "errand.db").exists()

    done = _errand("reset", "--data-dir", str(data_dir), "--yes", env=env)
    assert done.returncode == 0, done.stderr
    assert not data_dir.exists()


async def test_reset_refuses_a_data_dir_serve_holds(
    env: dict[str, str], tmp_path: Path, model_server: ScriptedModelServer
) -> None:
    data_dir = tmp_path / "data"
    async with serve_process(data_dir, serve_env(model_server, Path(env["HOME"]))) as proc:
        await read_until_listening(proc)
        done = await asyncio.to_thread(_errand, "reset", "--data-dir", str(data_dir), "--yes", env=env)
        assert done.returncode == 1
        assert "Quit that Errand first" in done.stderr
        assert (data_dir / "errand.db").exists()

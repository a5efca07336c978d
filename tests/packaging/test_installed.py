"""The bundle and the wheel, each started as a person would start them: `--version`, the tray app on a
display with no tray, `serve` answering its API and stopping on SIGTERM, `install-desktop`."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path

import pytest

from core.version import __version__
from tests.serve_process import api_client

pytestmark = pytest.mark.slow


def _errand_of(kind: str, bundle: Path, wheel_venv: Path) -> list[str]:
    return [str(bundle)] if kind == "bundle" else [str(wheel_venv / "bin" / "errand")]


KINDS = ["bundle", "wheel"]


@pytest.mark.parametrize("kind", KINDS)
def test_version_names_errand_python_and_qt(kind: str, bundle: Path, wheel_venv: Path, clean_env) -> None:
    done = subprocess.run(
        [*_errand_of(kind, bundle, wheel_venv), "--version"],
        env=clean_env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"errand {__version__}"
    assert lines[1].startswith("Python 3.")
    assert lines[1].endswith("bundle)" if kind == "bundle" else f"{wheel_venv}/bin/python)")
    assert lines[2].startswith("Qt 6.11.3 (PySide6 6.11.3)")


@pytest.mark.parametrize("kind", KINDS)
async def test_serve_answers_health_and_stops_on_sigterm(
    kind: str, bundle: Path, wheel_venv: Path, clean_env, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    proc = await asyncio.create_subprocess_exec(
        *_errand_of(kind, bundle, wheel_venv),
        "serve",
        "--data-dir",
        str(data_dir),
        "--port",
        "0",
        env=clean_env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
        assert b"listening on" in line, line + await proc.stderr.read()
        async with api_client(data_dir) as client:
            health = await client.get("/api/health")
            assert health.status_code == 200
            assert health.json()["status"] == "ok"
            assert health.json()["version"] == __version__
            # The host is whole, not just listening: its default bot is there.
            assert (await client.get("/api/bots")).json()["bots"]
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), timeout=30) == 0
        assert not (data_dir / "api.json").exists()
        stderr = (await proc.stderr.read()).decode()
        assert "Traceback" not in stderr, stderr
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


@pytest.mark.parametrize("display", ["offscreen", "xcb"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_window_comes_up_where_there_is_no_tray_and_says_so(
    kind: str, display: str, bundle: Path, wheel_venv: Path, clean_env, tmp_path: Path, request
) -> None:
    """Offscreen, and on a real X server (the bundle's own xcb plugin and the libraries it needs)."""
    data_dir = tmp_path / "data"
    # The start-up probe prints when the window was shown and quits once the host is up.
    env = dict(clean_env, ERRAND_STARTUP_PROBE="1", QT_QPA_PLATFORM=display)
    if display == "xcb":
        env["DISPLAY"] = request.getfixturevalue("x_display")
    done = subprocess.run(
        [*_errand_of(kind, bundle, wheel_venv), "--data-dir", str(data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    timings = dict(row.split() for row in done.stdout.splitlines() if row.strip())
    assert float(timings["window-shown"]) > 0
    assert float(timings["host-started"]) >= float(timings["window-shown"])
    log = (data_dir / "logs" / "errand.log").read_text(encoding="utf-8")
    assert "no system tray here: closing the window quits Errand" in log
    assert "Traceback" not in log


def test_the_wheel_ships_its_resources_and_nothing_of_the_tree(wheel_venv: Path) -> None:
    site = next((wheel_venv / "lib").glob("python3.*/site-packages"))
    resources = site / "resources"
    assert (resources / "icons" / "errand.svg").is_file()
    assert {p.name for p in (resources / "styles").glob("*.qss")} >= {"light.qss", "dark.qss"}
    assert (resources / "translations" / "zh_CN.json").is_file()
    assert list((resources / "translations" / "core").glob("*.json"))
    for absent in ("tests", "bench", "scripts", "docs", "packaging/errand-linux.spec"):
        assert not (site / absent).exists(), absent
    record = next(site.glob("errand-*.dist-info"))
    assert record.name == f"errand-{__version__}.dist-info"
    # Not an editable install pointing back at the source tree.
    assert not list(site.glob("__editable__*errand*"))


def test_the_bundle_holds_the_qt_plugins_it_needs_and_not_the_rest(bundle: Path) -> None:
    internal = bundle.parent / "_internal"
    plugins = internal / "PySide6" / "Qt" / "plugins"
    platforms = {p.name for p in (plugins / "platforms").iterdir()}
    assert {"libqxcb.so", "libqoffscreen.so"} <= platforms
    assert "libqvnc.so" not in platforms
    assert (plugins / "iconengines" / "libqsvgicon.so").is_file()
    assert (plugins / "imageformats" / "libqsvg.so").is_file()
    for unused in ("qmltooling", "sqldrivers", "printsupport"):
        assert not (plugins / unused).exists(), unused
    assert not list(internal.rglob("libQt6Qml*.so*")), "QML is not used"
    assert not list(internal.rglob("_pytest")), "test tools do not belong in the bundle"
    assert (internal / "resources" / "icons" / "errand.svg").is_file()


def test_install_desktop_from_the_installed_package_twice(
    wheel_venv: Path, clean_env, tmp_path: Path
) -> None:
    share = tmp_path / "share"
    env = dict(clean_env, XDG_DATA_HOME=str(share))
    errand = str(wheel_venv / "bin" / "errand")
    first = subprocess.run(
        [errand, "install-desktop"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert first.returncode == 0, first.stderr
    entry = (share / "applications" / "errand.desktop").read_text(encoding="utf-8")
    assert f"Exec={wheel_venv}/bin/python -m app.cli\n" in entry
    assert (share / "icons" / "hicolor" / "256x256" / "apps" / "errand.png").is_file()
    second = subprocess.run(
        [errand, "install-desktop"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert second.returncode == 0
    assert "nothing changed" in second.stdout
    gone = subprocess.run(
        [errand, "uninstall-desktop"], env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert gone.returncode == 0
    assert not (share / "applications" / "errand.desktop").exists()
    assert "Your data stays in" in gone.stdout
    assert json.dumps(gone.stderr) == '""'

"""What tests/packaging runs against: the bundle packaging/build-linux made and the build venv it installed
the wheel into. CI builds both first (.ci/run); run by hand after `packaging/build-linux`:
`QT_QPA_PLATFORM=offscreen .venv/bin/pytest tests/packaging`."""

from __future__ import annotations

import os
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _built(env_name: str, default: Path) -> Path:
    path = Path(os.environ.get(env_name) or default)
    if not path.exists():
        pytest.fail(f"{path} is missing: build it with packaging/build-linux (or set {env_name})")
    return path


@pytest.fixture(scope="session")
def bundle() -> Path:
    """The bundle's executable."""
    return _built("ERRAND_BUNDLE", ROOT / "dist" / "errand" / "errand")


@pytest.fixture(scope="session")
def wheel_venv() -> Path:
    """A venv holding the wheel installed from dist/, not the source tree."""
    return _built("ERRAND_WHEEL_VENV", ROOT / "build" / "bundle-venv")


@pytest.fixture
def clean_env(tmp_path: Path) -> dict[str, str]:
    """No ERRAND_ settings, a home of its own, keys in a file (no keyring to ask), no tray (offscreen)."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("ERRAND_", "XDG_", "PYTHON", "VIRTUAL_ENV"))
    }
    home = tmp_path / "home"
    home.mkdir()
    env.update(HOME=str(home), ERRAND_SECRETS="file", QT_QPA_PLATFORM="offscreen")
    return env


@pytest.fixture(scope="session")
def x_display() -> Iterator[str]:
    """A real X server (Xvfb, no window manager and so no tray); its display number read from -displayfd."""
    read_end, write_end = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_end), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write_end,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 30)
        number = os.read(read_end, 32).decode().strip() if ready else ""
        if not number:
            pytest.fail("Xvfb did not start (scripts/system-packages installs it)")
        yield f":{number}"
    finally:
        os.close(read_end)
        server.terminate()
        server.wait(timeout=10)

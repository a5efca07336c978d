"""`errand doctor`: checks the set-up and says how to fix each problem.

Exit status 1 when something must be fixed."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


def _python() -> Check:
    ok = sys.version_info >= (3, 11)
    return Check("Python", ok, sys.version.split()[0], "Install Python 3.11 or newer.")


def _qt() -> Check:
    try:
        from PySide6 import QtWidgets  # noqa: F401
    except ImportError as exc:
        return Check("Qt (PySide6)", False, str(exc), "Run: pip install -e . (installs PySide6-Essentials).")
    display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    if sys.platform.startswith("linux") and not display:
        return Check(
            "Qt (PySide6)",
            False,
            "installed, but there is no display: the window needs a desktop session",
            "Run `errand serve` for headless use, or start Errand from your desktop.",
            required=False,
        )
    return Check("Qt (PySide6)", True, "installed")


def _sandbox() -> Check:
    if not sys.platform.startswith("linux"):
        return Check(
            "Shell sandbox",
            False,
            "no OS sandbox on this platform; file tools still guard paths",
            required=False,
        )
    if shutil.which("bwrap") is None:
        return Check(
            "Shell sandbox",
            False,
            "bubblewrap is not installed: shell commands run with your full rights",
            "Install it: sudo apt install bubblewrap",
            required=False,
        )
    return Check("Shell sandbox", True, "bubblewrap")


def _keyring(data_dir: Path) -> Check:
    from app.secrets import ChoosableSecretStore, make_secret_store

    store = make_secret_store(data_dir)
    if isinstance(store, ChoosableSecretStore):
        asyncio.run(store.probe())
    return Check("API key storage", store.available, store.description, required=False)


def _data_dir(data_dir: Path) -> Check:
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        probe = data_dir / ".doctor-probe"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        return Check(
            "Data dir", False, f"{data_dir}: {exc.strerror}", "Pass a writable folder with --data-dir."
        )
    from app.instance_lock import DataDirInUseError, DataDirLock

    try:
        with DataDirLock(data_dir):
            pass
    except DataDirInUseError as exc:
        return Check("Data dir", True, f"{data_dir} (in use by a running Errand, pid {exc.pid})")
    return Check("Data dir", True, str(data_dir))


def _model() -> Check:
    from app.settings_from_env import model_override

    override = model_override()
    if override is None:
        return Check(
            "Model", True, "set per bot in the app's settings (no ERRAND_MODEL_* variables)", required=False
        )
    problem = override.problem()
    return Check(
        "Model", problem is None, problem or f"{override.model} at {override.base_url}", problem or ""
    )


def run_doctor(data_dir: Path) -> int:
    checks = [_python(), _qt(), _sandbox(), _data_dir(data_dir), _keyring(data_dir), _model()]
    failed = False
    for check in checks:
        mark = "ok  " if check.ok else ("FAIL" if check.required else "warn")
        print(f"[{mark}] {check.name}: {check.detail}")
        if not check.ok and check.fix:
            print(f"       fix: {check.fix}")
        failed = failed or (check.required and not check.ok)
    return 1 if failed else 0

"""Architecture rules a reviewer would otherwise have to remember: core never imports Qt, and the host and
the window start without the channel SDKs, which take seconds to import and load only for a channel that
exists."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QT_MODULES = ("PySide6", "PyQt5", "PyQt6", "qasync", "shiboken6")


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_module_under_core_imports_qt() -> None:
    offenders = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        for name in _imported_modules(path):
            if name.split(".")[0] in QT_MODULES:
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    assert offenders == []


def test_importing_all_of_core_loads_no_qt() -> None:
    modules = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for p in (ROOT / "core").rglob("*.py")
    )
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {QT_MODULES!r}]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


SLOW_TO_IMPORT = ("lark_oapi", "dingtalk_stream", "telegram", "segno", "openai")


def test_host_and_window_modules_do_not_import_the_channel_sdks() -> None:
    # Start-up figures of docs/architecture.md#start-up: each of these costs 0.2-2 s to import.
    code = (
        "import sys\n"
        "import core.host, core.agent.runtime, core.api.server, ui.main_window, app.gui, app.cli\n"
        f"print(','.join(m for m in sys.modules if m.split('.')[0] in {SLOW_TO_IMPORT!r}))\n"
    )
    assert _printed_in_a_fresh_interpreter(code) == ""


HOST_ONLY = ("sqlalchemy", "pydantic", "httpx", "core.host", "core.store", "core.agent.runtime")


def test_the_window_and_the_tray_are_built_without_the_hosts_modules() -> None:
    # docs/architecture.md#start-up: the desktop shows its window before the host's modules are imported
    # (about 0.6 s of them); a UI module that reached a service would bring them all back in front of it.
    code = (
        "import sys\n"
        "import app.gui, app.late_facades, app.live_language, app.tray, app.tray_notice\n"
        "import app.instance_socket, core.preferences, ui.main_window, ui.skeleton, ui.bridge\n"
        f"hits = [m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in {HOST_ONLY!r})]\n"
        "print(','.join(sorted(hits)))\n"
    )
    assert _printed_in_a_fresh_interpreter(code) == ""


def _printed_in_a_fresh_interpreter(code: str) -> str:
    """What `code` prints, run where nothing was imported before it (offscreen: no display needed)."""
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"QT_QPA_PLATFORM": "offscreen", "PATH": "/usr/bin:/bin"},
    )
    return out.stdout.strip()

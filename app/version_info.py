"""What `errand --version` prints: Errand's version, then the Python and Qt it runs on (for bug reports)."""

from __future__ import annotations

import platform
import sys

from core.version import __version__


def qt_versions() -> str:
    try:
        import PySide6
        from PySide6 import QtCore
    except ImportError as exc:  # a broken install is exactly when a bug report needs this line
        return f"Qt not loadable ({exc})"
    return f"Qt {QtCore.qVersion()} (PySide6 {PySide6.__version__})"


def version_text() -> str:
    build = "bundle" if getattr(sys, "frozen", False) else sys.executable
    return "\n".join(
        [
            f"errand {__version__}",
            f"Python {platform.python_version()} ({platform.python_implementation()}, {build})",
            qt_versions(),
        ]
    )

"""What every Errand bundle holds, shared by the three PyInstaller specs (docs/packaging.md#bundles).

The specs build from the installed `errand` package (the wheel), not the source tree, so a bundle holds
exactly what the wheel ships. Imports that PyInstaller cannot see are named here: the host's modules load
through importlib after the window is up, and the channel and tool SDKs load only when a channel or
server exists.
"""

from __future__ import annotations

from PyInstaller.utils.hooks import collect_data_files, collect_submodules, copy_metadata

DATAS = [
    *collect_data_files("resources"),
    # Read at import or at run time: errand's own version, and the prices' bundled catalogue.
    *copy_metadata("errand"),
    *copy_metadata("genai_prices"),
    *collect_data_files("genai_prices"),
    *collect_data_files("lark_oapi"),
]

HIDDEN_IMPORTS = [
    *collect_submodules("app"),
    *collect_submodules("core"),
    *collect_submodules("ui"),
    *collect_submodules(
        "pydantic_ai", filter=lambda name: ".models." not in name or name.endswith(".openai")
    ),
    "qasync",
]

# Qt parts and Python modules no part of Errand uses: each only adds size (and start-up scanning).
EXCLUDES = [
    "tkinter",
    "PySide6.QtQml",
    "PySide6.QtQuick",
    "PySide6.QtQuickWidgets",
    "PySide6.QtPdf",
    "PySide6.QtOpenGL",
    "PySide6.QtOpenGLWidgets",
    "PySide6.QtSql",
    "PySide6.QtTest",
    "PySide6.QtDesigner",
    "PySide6.QtUiTools",
    "PySide6.QtXml",
    "PySide6.QtConcurrent",
    "PySide6.QtPrintSupport",
    # Test tools that arrive with the project's test extras when a bundle is built from a dev venv.
    "pytest",
    "_pytest",
    "mypy",
    "openai",
    "croniter",
]

# Qt plugins the tray app loads: the X11 and Wayland platforms plus offscreen (headless, tests), the SVG
# icon engine and image format, the desktop themes' look, TLS for QtNetwork. Everything else goes.
QT_PLUGIN_DIRS_KEPT = {
    "platforms",
    "platformthemes",
    "platforminputcontexts",
    "xcbglintegrations",
    "wayland-decoration-client",
    "wayland-graphics-integration-client",
    "wayland-shell-integration",
    "iconengines",
    "imageformats",
    "styles",
    "tls",
    "egldeviceintegrations",
}
QT_PLATFORMS_KEPT = ("libqxcb", "libqwayland", "libqoffscreen", "qwindows", "qcocoa", "qoffscreen")
QT_IMAGE_FORMATS_KEPT = ("qsvg", "qico", "qjpeg", "qgif")


def _qt_translation_wanted(parts: list[str]) -> bool:
    """Qt's own catalogues in the two languages Errand speaks (its 99 others are 7 MB)."""
    name = parts[-1]
    return not name.endswith(".qm") or name.endswith(("_zh_CN.qm", "_en.qm"))


def _qt_plugin_wanted(dest: str) -> bool:
    parts = dest.replace("\\", "/").split("/")
    if "translations" in parts and "Qt" in parts:
        return _qt_translation_wanted(parts)
    if "plugins" not in parts:
        return True
    index = parts.index("plugins")
    if len(parts) <= index + 2:
        return True
    kind, name = parts[index + 1], parts[-1]
    if kind not in QT_PLUGIN_DIRS_KEPT:
        return False
    if kind == "platforms":
        return name.startswith(QT_PLATFORMS_KEPT)
    if kind == "imageformats":
        return name.startswith(tuple(f"lib{n}" for n in QT_IMAGE_FORMATS_KEPT) + QT_IMAGE_FORMATS_KEPT)
    return True


def trimmed(entries):  # type: ignore[no-untyped-def]
    """PyInstaller's TOC without the Qt plugins Errand never loads and Qt's catalogues in other languages."""
    return [entry for entry in entries if _qt_plugin_wanted(entry[0])]

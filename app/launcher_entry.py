"""`errand install-desktop` and `uninstall-desktop`: Errand in the launcher of a freedesktop (XDG) desktop
(docs/packaging.md#launcher).

The entry goes to `$XDG_DATA_HOME/applications/errand.desktop` and the icon to the hicolor theme there (the
SVG as `scalable`, PNGs at the sizes panels and docks ask for), which GNOME, KDE, Xfce and the others read.
Files already as they should be are left alone, so installing twice changes nothing. Uninstalling removes
exactly those files (and the start-at-login entry, which would otherwise start a removed install) and never
the person's data.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from app.desktop_file import ENTRY_NAME, ICON_NAME, desktop_entry

log = logging.getLogger(__name__)

PNG_SIZES = (16, 22, 24, 32, 48, 64, 128, 256, 512)
# Rebuilding the desktop's caches is a courtesy (most launchers watch the folders); never wait long on it.
CACHE_TOOL_TIMEOUT_S = 10.0


class NoXdgDirsError(Exception):
    """This system has no place for a freedesktop launcher entry."""


@dataclass
class Changes:
    written: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)


def data_home(env: Mapping[str, str] = os.environ, platform: str = "linux") -> Path:
    """`$XDG_DATA_HOME`, else `~/.local/share`; NoXdgDirsError where there is neither or the system is not
    a freedesktop one."""
    if platform in ("darwin", "win32"):
        where = "move Errand.app to Applications" if platform == "darwin" else "use the Start-menu shortcut"
        raise NoXdgDirsError(
            f"install-desktop is for Linux desktops; on this system {where} (see packaging/README.md)."
        )
    configured = env.get("XDG_DATA_HOME", "").strip()
    # The spec says a relative XDG_DATA_HOME is invalid and must be ignored.
    if configured and Path(configured).is_absolute():
        return Path(configured)
    home = env.get("HOME", "").strip()
    if home and Path(home).is_absolute() and Path(home).is_dir():
        return Path(home) / ".local" / "share"
    raise NoXdgDirsError(
        "No XDG data directory here: XDG_DATA_HOME is not set to an absolute path and HOME is not a folder "
        f"({home or 'unset'}). Set XDG_DATA_HOME (for example to ~/.local/share) and run it again."
    )


def entry_path(share: Path) -> Path:
    return share / "applications" / ENTRY_NAME


def icon_paths(share: Path) -> dict[str, Path]:
    """Where each icon goes, by its size ('scalable' for the SVG)."""
    hicolor = share / "icons" / "hicolor"
    paths = {"scalable": hicolor / "scalable" / "apps" / f"{ICON_NAME}.svg"}
    for size in PNG_SIZES:
        paths[str(size)] = hicolor / f"{size}x{size}" / "apps" / f"{ICON_NAME}.png"
    return paths


def install(
    share: Path, command: Sequence[str], svg: bytes, render_png: Callable[[bytes, int], bytes]
) -> Changes:
    """Write the entry and icons under `share`; files already holding these bytes are not touched."""
    changes = Changes()
    wanted: dict[Path, bytes] = {entry_path(share): desktop_entry(command).encode("utf-8")}
    for size, path in icon_paths(share).items():
        wanted[path] = svg if size == "scalable" else render_png(svg, int(size))
    for path, content in wanted.items():
        if path.is_file() and path.read_bytes() == content:
            changes.unchanged.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(content)
        partial.replace(path)
        changes.written.append(path)
    return changes


def uninstall(share: Path) -> Changes:
    changes = Changes()
    for path in [entry_path(share), *icon_paths(share).values()]:
        if path.is_file():
            path.unlink()
            changes.removed.append(path)
    return changes


def refresh_desktop_caches(share: Path, run: Callable[..., object] = subprocess.run) -> None:
    """Tell the desktop now rather than at its next scan, where its cache tools are installed."""
    for tool, args in (
        ("update-desktop-database", [str(share / "applications")]),
        ("gtk-update-icon-cache", ["-q", "-t", "-f", str(share / "icons" / "hicolor")]),
    ):
        found = shutil.which(tool)
        if found is None:
            continue
        try:
            run([found, *args], capture_output=True, timeout=CACHE_TOOL_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.info("%s did not run: %s", tool, exc)


def render_png_with_qt(svg: bytes, size: int) -> bytes:
    """The SVG drawn at size x size, as PNG bytes. Qt draws it offscreen, so no display is needed."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QGuiApplication, QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    if QGuiApplication.instance() is None:
        _keep_alive.append(QGuiApplication(["errand", "-platform", "offscreen"]))
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        QSvgRenderer(QByteArray(svg)).render(painter)
    finally:
        painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    # PySide6 6.11 takes the format as str at run time though its stubs say bytes.
    image.save(buffer, "PNG")  # type: ignore[call-overload]
    return bytes(data.data())


_keep_alive: list[object] = []

"""`errand install-desktop` / `uninstall-desktop`: the launcher entry and icons under XDG_DATA_HOME,
written once (a second install changes nothing), removed exactly, and a clear message with no XDG dirs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from app.autostart import XdgAutostart, launch_command
from app.desktop_commands import run_install_desktop, run_uninstall_desktop
from app.desktop_file import desktop_entry, exec_quote
from app.launcher_entry import PNG_SIZES, NoXdgDirsError, data_home, icon_paths, render_png_with_qt

ROOT = Path(__file__).resolve().parents[2]


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def share(tmp_path: Path) -> Path:
    return tmp_path / "share"


def _install(share: Path, refreshed: list[Path] | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_install_desktop(
        {"XDG_DATA_HOME": str(share)},
        "linux",
        refresh=(refreshed if refreshed is not None else []).append,
        out=out,
        err=err,
    )
    return code, out.getvalue(), err.getvalue()


def test_install_puts_the_entry_and_every_icon_size_under_xdg_data_home(
    qapp: QApplication, share: Path
) -> None:
    refreshed: list[Path] = []
    code, out, err = _install(share, refreshed)
    assert (code, err) == (0, "")
    assert "errand uninstall-desktop" in out
    entry = (share / "applications" / "errand.desktop").read_text(encoding="utf-8")
    assert f"Exec={exec_quote(launch_command())}\n" in entry
    assert "Icon=errand\n" in entry
    assert "Categories=Utility;Office;\n" in entry
    assert "X-GNOME-Autostart" not in entry  # the launcher's entry, not the login one
    svg = share / "icons" / "hicolor" / "scalable" / "apps" / "errand.svg"
    assert svg.read_bytes() == (ROOT / "resources" / "icons" / "errand.svg").read_bytes()
    for size in PNG_SIZES:
        image = QImage(str(share / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "errand.png"))
        assert (image.width(), image.height()) == (size, size)
        # Drawn, not blank: the icon's green square covers the middle.
        assert image.pixelColor(size // 2, size // 4).alpha() == 255
    assert refreshed == [share]


def test_a_second_install_changes_nothing_and_says_so(qapp: QApplication, share: Path) -> None:
    _install(share)
    before = {p: p.stat().st_mtime_ns for p in share.rglob("*") if p.is_file()}
    refreshed: list[Path] = []
    code, out, _ = _install(share, refreshed)
    assert code == 0
    assert "already in the launcher" in out
    assert {p: p.stat().st_mtime_ns for p in share.rglob("*") if p.is_file()} == before
    assert refreshed == []


def test_install_replaces_an_entry_from_an_older_install(qapp: QApplication, share: Path) -> None:
    _install(share)
    entry = share / "applications" / "errand.desktop"
    entry.write_text(desktop_entry(["/old/place/errand"]), encoding="utf-8")
    code, out, _ = _install(share)
    assert code == 0
    assert "in the launcher now" in out
    assert "/old/place" not in entry.read_text(encoding="utf-8")


def test_uninstall_removes_exactly_what_install_wrote_and_the_login_entry(
    qapp: QApplication, share: Path, tmp_path: Path
) -> None:
    neighbour = share / "icons" / "hicolor" / "48x48" / "apps" / "other-app.png"
    neighbour.parent.mkdir(parents=True)
    neighbour.write_bytes(b"not ours")
    _install(share)
    login = XdgAutostart(tmp_path / "config")
    login.turn_on(["errand"])
    data_dir = tmp_path / "data"

    out = io.StringIO()
    code = run_uninstall_desktop(
        data_dir, {"XDG_DATA_HOME": str(share)}, "linux", login_start=login, refresh=lambda _: None, out=out
    )
    assert code == 0
    assert _files(share) == {"icons/hicolor/48x48/apps/other-app.png": b"not ours"}
    assert not login.is_on()
    assert "stopped it starting at login" in out.getvalue()
    assert f"Your data stays in {data_dir}" in out.getvalue()

    again = io.StringIO()
    assert (
        run_uninstall_desktop(
            data_dir,
            {"XDG_DATA_HOME": str(share)},
            "linux",
            login_start=login,
            refresh=lambda _: None,
            out=again,
        )
        == 0
    )
    assert again.getvalue().startswith("Errand was not in the launcher.")


def test_without_xdg_dirs_it_says_what_to_set_and_writes_nothing(tmp_path: Path) -> None:
    err = io.StringIO()
    code = run_install_desktop({"HOME": str(tmp_path / "missing")}, "linux", refresh=lambda _: None, err=err)
    assert code == 2
    assert "No XDG data directory here" in err.getvalue()
    assert "Set XDG_DATA_HOME" in err.getvalue()
    assert list(tmp_path.iterdir()) == []


def test_where_the_entry_goes() -> None:
    assert data_home({"XDG_DATA_HOME": "/x/share", "HOME": "/home/a"}) == Path("/x/share")
    # A relative XDG_DATA_HOME is invalid (the spec) and ignored.
    with pytest.raises(NoXdgDirsError):
        data_home({"XDG_DATA_HOME": "rel"})
    for system, says in (("darwin", "Errand.app to Applications"), ("win32", "Start-menu shortcut")):
        with pytest.raises(NoXdgDirsError, match=says):
            data_home({"HOME": "/home/a"}, system)


def test_icons_go_to_the_hicolor_theme(tmp_path: Path) -> None:
    paths = icon_paths(tmp_path)
    assert paths["scalable"] == tmp_path / "icons/hicolor/scalable/apps/errand.svg"
    assert paths["256"] == tmp_path / "icons/hicolor/256x256/apps/errand.png"


def test_rendering_the_same_svg_twice_gives_the_same_bytes(qapp: QApplication) -> None:
    svg = (ROOT / "resources" / "icons" / "errand.svg").read_bytes()
    assert render_png_with_qt(svg, 48) == render_png_with_qt(svg, 48)


def test_the_packaged_entry_is_the_one_the_app_writes() -> None:
    """packaging/errand.desktop (for distribution packages, which put `errand` on PATH) is the same text."""
    packaged = (ROOT / "packaging" / "errand.desktop").read_text(encoding="utf-8")
    assert packaged == desktop_entry(["errand"])

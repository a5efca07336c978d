"""Start at login on Linux: an XDG autostart entry written and removed under XDG_CONFIG_HOME."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from app import autostart

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG autostart is Linux's")


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    return tmp_path


@linux_only
def test_enabling_writes_the_entry_and_disabling_removes_it(config_home: Path) -> None:
    entry = config_home / "autostart" / "errand.desktop"
    assert not autostart.is_start_at_login()

    autostart.set_start_at_login(True, "/opt/errand/errand")
    text = entry.read_text(encoding="utf-8")
    assert text.startswith("[Desktop Entry]\n")
    assert "Type=Application\n" in text
    assert "Exec=/opt/errand/errand\n" in text
    assert autostart.is_start_at_login()
    assert [p.name for p in entry.parent.iterdir()] == ["errand.desktop"]  # no partial file left

    autostart.set_start_at_login(False, "/opt/errand/errand")
    assert not entry.exists()
    assert not autostart.is_start_at_login()
    autostart.set_start_at_login(False, "/opt/errand/errand")  # already off: nothing to do, no error


@linux_only
def test_enabling_again_replaces_the_command(config_home: Path) -> None:
    autostart.set_start_at_login(True, "/old/errand")
    autostart.set_start_at_login(True, "/new/errand")
    text = (config_home / "autostart" / "errand.desktop").read_text(encoding="utf-8")
    assert "Exec=/new/errand\n" in text
    assert "/old/" not in text


def test_a_relative_xdg_config_home_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/dir")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert autostart.autostart_dir() == tmp_path / ".config" / "autostart"


def test_exec_lines_quote_the_way_desktop_entries_do() -> None:
    assert autostart.exec_quote(["/usr/bin/python3", "-m", "app.cli"]) == "/usr/bin/python3 -m app.cli"
    assert autostart.exec_quote(["/home/a b/py", "50%"]) == '"/home/a b/py" 50%%'
    assert autostart.exec_quote(['/x/"q"$']) == '"/x/\\"q\\"\\$"'
    # The file's string escaping doubles each backslash once more.
    assert 'Exec="/x/\\\\"q\\\\"\\\\$"' in autostart.desktop_entry(autostart.exec_quote(['/x/"q"$']))


def test_other_systems_say_it_is_not_supported(monkeypatch: pytest.MonkeyPatch, config_home: Path) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(NotImplementedError, match="not supported on this system"):
        autostart.set_start_at_login(True, "/Applications/Errand.app")
    assert not (config_home / "autostart").exists()

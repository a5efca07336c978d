"""Start at login on each system: the XDG autostart entry, the macOS LaunchAgent and the Windows Run key,
each with the platform given (the registry is a dict here), written on and removed off."""

from __future__ import annotations

import plistlib
from pathlib import Path

import pytest

from app import autostart
from app.autostart import XdgAutostart, launch_command, login_start_for, set_start_at_login
from app.desktop_file import desktop_entry, exec_quote
from app.launch_agent import LaunchAgent
from app.run_key import RUN_KEY, VALUE_NAME, RunKeyLogin, windowless


class DictRunKey:
    """The Run key as a dict of value name -> command line."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def read(self, name: str) -> str | None:
        return self.values.get(name)

    def write(self, name: str, value: str) -> None:
        self.values[name] = value

    def delete(self, name: str) -> None:
        self.values.pop(name, None)


def test_linux_writes_the_autostart_entry_under_xdg_config_home_and_removes_it(tmp_path: Path) -> None:
    login = login_start_for("linux", {"XDG_CONFIG_HOME": str(tmp_path)}, home=tmp_path / "home")
    entry = tmp_path / "autostart" / "errand.desktop"
    assert not login.is_on()

    login.turn_on(["/opt/errand/errand"])
    text = entry.read_text(encoding="utf-8")
    assert text.startswith("[Desktop Entry]\n")
    assert "Type=Application\n" in text
    assert "Exec=/opt/errand/errand\n" in text
    assert "X-GNOME-Autostart-enabled=true\n" in text
    assert login.is_on()
    assert [p.name for p in entry.parent.iterdir()] == ["errand.desktop"]  # no partial file left

    login.turn_off()
    assert not entry.exists()
    assert not login.is_on()
    login.turn_off()  # already off: nothing to do, no error


def test_turning_on_again_replaces_the_command(tmp_path: Path) -> None:
    login = XdgAutostart(tmp_path)
    login.turn_on(["/old/errand"])
    login.turn_on(["/new/errand"])
    text = (tmp_path / "autostart" / "errand.desktop").read_text(encoding="utf-8")
    assert "Exec=/new/errand\n" in text
    assert "/old/" not in text


def test_without_xdg_config_home_the_entry_goes_under_dot_config(tmp_path: Path) -> None:
    assert autostart.config_home({}, home=tmp_path) == tmp_path / ".config"
    # The spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
    assert autostart.config_home({"XDG_CONFIG_HOME": "relative/dir"}, home=tmp_path) == tmp_path / ".config"
    login = login_start_for("linux", {}, home=tmp_path)
    login.turn_on(["errand"])
    assert (tmp_path / ".config" / "autostart" / "errand.desktop").is_file()


def test_exec_lines_quote_the_way_desktop_entries_do() -> None:
    assert exec_quote(["/usr/bin/python3", "-m", "app.cli"]) == "/usr/bin/python3 -m app.cli"
    assert exec_quote(["/home/a b/py", "50%"]) == '"/home/a b/py" 50%%'
    assert exec_quote(['/x/"q"$']) == '"/x/\\"q\\"\\$"'
    # The file's string escaping doubles each backslash once more.
    assert 'Exec="/x/\\\\"q\\\\"\\\\$"' in desktop_entry(['/x/"q"$'])


def test_macos_writes_a_launch_agent_that_runs_at_load(tmp_path: Path) -> None:
    login = login_start_for("darwin", {}, home=tmp_path)
    plist = tmp_path / "Library" / "LaunchAgents" / "app.errand.Errand.plist"
    assert isinstance(login, LaunchAgent)
    assert not login.is_on()

    login.turn_on(["/Applications/Errand.app/Contents/MacOS/errand"])
    agent = plistlib.loads(plist.read_bytes())
    assert agent["Label"] == "app.errand.Errand"
    assert agent["ProgramArguments"] == ["/Applications/Errand.app/Contents/MacOS/errand"]
    assert agent["RunAtLoad"] is True
    assert agent["KeepAlive"] is False  # Quit means quit: launchd does not bring it back
    assert login.is_on()
    assert [p.name for p in plist.parent.iterdir()] == [plist.name]

    login.turn_off()
    assert not plist.exists()
    assert not login.is_on()
    assert not (tmp_path / ".config").exists()  # nothing of the Linux way on a Mac


def test_windows_names_the_command_under_the_run_key_and_deletes_it(tmp_path: Path) -> None:
    key = DictRunKey()
    key.values["OtherApp"] = "C:\\other.exe"
    login = login_start_for("win32", {}, home=tmp_path, run_key=key)
    assert isinstance(login, RunKeyLogin)
    assert RUN_KEY == r"Software\Microsoft\Windows\CurrentVersion\Run"

    login.turn_on([r"C:\Program Files\Errand\errand.exe"])
    assert key.values[VALUE_NAME] == r'"C:\Program Files\Errand\errand.exe"'
    assert login.is_on()

    login.turn_off()
    assert VALUE_NAME not in key.values
    assert key.values == {"OtherApp": "C:\\other.exe"}  # only our value
    assert not login.is_on()
    login.turn_off()
    assert list(tmp_path.iterdir()) == []  # no files on Windows


def test_windows_starts_a_source_install_with_the_windowless_python(tmp_path: Path) -> None:
    (tmp_path / "python.exe").write_bytes(b"")
    (tmp_path / "pythonw.exe").write_bytes(b"")
    assert windowless([str(tmp_path / "python.exe"), "-m", "app.cli"]) == [
        str(tmp_path / "pythonw.exe"),
        "-m",
        "app.cli",
    ]
    # Without a pythonw.exe beside it, python.exe it stays.
    (tmp_path / "pythonw.exe").unlink()
    assert windowless([str(tmp_path / "python.exe")]) == [str(tmp_path / "python.exe")]


def test_the_launch_command_is_the_bundle_itself_or_this_python_running_the_cli() -> None:
    assert launch_command("/opt/errand/errand", frozen=True) == ["/opt/errand/errand"]
    assert launch_command("/venv/bin/python", frozen=False) == ["/venv/bin/python", "-m", "app.cli"]


def test_set_start_at_login_writes_this_installs_command(tmp_path: Path) -> None:
    login = XdgAutostart(tmp_path)
    set_start_at_login(True, login)
    assert f"Exec={exec_quote(launch_command())}\n" in login.path.read_text(encoding="utf-8")
    set_start_at_login(False, login)
    assert not login.path.exists()


def test_a_folder_that_cannot_be_written_raises_and_leaves_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "autostart"
    blocker.write_text("a file where the folder should be", encoding="utf-8")
    with pytest.raises(OSError):
        XdgAutostart(tmp_path).turn_on(["errand"])
    assert blocker.read_text(encoding="utf-8") == "a file where the folder should be"

"""The handshake between a second launch and the running app: `show` brings the window, silence is told."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from PySide6.QtNetwork import QLocalServer
from pytestqt.qtbot import QtBot

from app.instance_socket import InstanceServer, ask_to_show, socket_name

ROOT = Path(__file__).resolve().parents[2]


def _ask_from_another_process(name: str, wait_s: float) -> Callable[[], list[bool]]:
    """The asking side blocks, so it runs in its own process (as a second launch does) while the server
    answers on this Qt thread. A thread of this process would share Qt's socket machinery with the server."""
    code = f"from app.instance_socket import ask_to_show; print(ask_to_show({name!r}, {wait_s}))"
    child = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)

    said: list[bool] = []

    def answers() -> list[bool]:
        if not said and child.poll() is not None:
            out, _ = child.communicate()
            said.append(out.strip() == "True")
        return said

    return answers


def test_a_show_request_reaches_the_running_app_and_is_answered(qtbot: QtBot, tmp_path: Path) -> None:
    shown: list[str] = []
    server = InstanceServer(socket_name(tmp_path), on_show=lambda: shown.append("window"))
    try:
        assert server.listening
        answers = _ask_from_another_process(socket_name(tmp_path), wait_s=10)
        qtbot.waitUntil(lambda: bool(answers()), timeout=15_000)
        assert answers() == [True]
        assert shown == ["window"]
    finally:
        server.close()


def test_nobody_listening_is_reported_as_no_answer(tmp_path: Path) -> None:
    assert ask_to_show(socket_name(tmp_path), wait_s=0.3) is False


def test_a_listener_that_never_answers_is_reported_as_no_answer(qtbot: QtBot, tmp_path: Path) -> None:
    mute = QLocalServer()
    assert mute.listen(socket_name(tmp_path))
    try:
        answers = _ask_from_another_process(socket_name(tmp_path), wait_s=0.5)
        qtbot.waitUntil(lambda: bool(answers()), timeout=10_000)
        assert answers() == [False]
    finally:
        mute.close()


def test_a_socket_left_by_a_dead_app_does_not_stop_the_next_one_listening(
    qtbot: QtBot, tmp_path: Path
) -> None:
    name = socket_name(tmp_path)
    dead = QLocalServer()
    assert dead.listen(name)
    # Still bound under the name, as the socket file of an app that crashed is left behind.
    shown: list[str] = []
    server = InstanceServer(name, on_show=lambda: shown.append("window"))
    try:
        assert server.listening
        answers = _ask_from_another_process(name, wait_s=10)
        qtbot.waitUntil(lambda: bool(answers()), timeout=15_000)
        assert answers() == [True] and shown == ["window"]
    finally:
        server.close()
        dead.close()


def test_each_data_dir_has_its_own_socket_and_every_spelling_of_one_the_same(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    assert socket_name(tmp_path / "a") == socket_name(tmp_path / "a" / ".." / "a")
    assert socket_name(tmp_path / "a") != socket_name(tmp_path / "b")
    assert len(socket_name(tmp_path)) < 40

"""Closing the window to the tray: the tray says once, ever per data dir, that Errand keeps running."""

from __future__ import annotations

from pathlib import Path

from app.tray_notice import ClosedToTrayNotice


def test_the_first_close_to_the_tray_says_errand_keeps_running_and_later_ones_are_quiet(
    tmp_path: Path,
) -> None:
    said: list[tuple[str, str]] = []
    notice = ClosedToTrayNotice(tmp_path, lambda title, body: said.append((title, body)))
    assert notice.closed_to_tray()
    assert not notice.closed_to_tray()
    assert len(said) == 1
    title, body = said[0]
    assert title == "Errand is still running" and body.startswith("It keeps working in the tray.")
    # After a restart (a new notice on the same data dir) it stays quiet.
    again = ClosedToTrayNotice(tmp_path, lambda title, body: said.append((title, body)))
    assert not again.closed_to_tray() and len(said) == 1


def test_a_tray_that_cannot_show_messages_leaves_it_for_a_later_close(tmp_path: Path) -> None:
    assert not ClosedToTrayNotice(tmp_path, lambda title, body: False).closed_to_tray()
    said: list[str] = []
    assert ClosedToTrayNotice(tmp_path, lambda title, body: said.append(title)).closed_to_tray()
    assert said == ["Errand is still running"]

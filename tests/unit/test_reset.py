"""`errand reset --data-dir D`: removes an Errand data dir only when confirmed, never some other folder,
never one a running Errand holds."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from app.instance_lock import DataDirLock
from app.reset import run_reset


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    d = tmp_path / "errand-data"
    (d / "sessions").mkdir(parents=True)
    (d / "errand.db").write_bytes(b"x" * 2048)
    (d / "bots" / "b1" / "workspace").mkdir(parents=True)
    (d / "bots" / "b1" / "workspace" / "notes.md").write_text("hi", encoding="utf-8")
    return d


def _reset(
    d: Path, answer: str | None = None, *, yes: bool = False, tty: bool = True
) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        assert answer is not None, "reset asked when it should not have"
        return answer

    code = run_reset(d, assume_yes=yes, ask=ask, interactive=tty, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_typing_the_folders_name_removes_it(data_dir: Path) -> None:
    code, out, err = _reset(data_dir, "errand-data")
    assert (code, err) == (0, "")
    assert not data_dir.exists()
    assert "every bot, conversation, task" in out
    assert "(2.0 KB)" in out
    assert "OS keyring" in out  # says what it did not remove


def test_any_other_answer_removes_nothing(data_dir: Path) -> None:
    code, out, _ = _reset(data_dir, "y")
    assert code == 1
    assert "Nothing was removed." in out
    assert (data_dir / "bots" / "b1" / "workspace" / "notes.md").read_text(encoding="utf-8") == "hi"


def test_from_a_script_it_needs_yes(data_dir: Path) -> None:
    code, _, err = _reset(data_dir, tty=False)
    assert code == 2
    assert "add --yes" in err
    assert (data_dir / "errand.db").exists()
    code, _, _ = _reset(data_dir, yes=True, tty=False)
    assert code == 0
    assert not data_dir.exists()


def test_a_folder_that_is_not_errands_is_left_alone(tmp_path: Path) -> None:
    photos = tmp_path / "Photos"
    photos.mkdir()
    (photos / "cat.jpg").write_bytes(b"jpg")
    code, _, err = _reset(photos, yes=True)
    assert code == 2
    assert "does not look like an Errand data dir" in err
    assert (photos / "cat.jpg").read_bytes() == b"jpg"


def test_a_data_dir_in_use_is_not_removed(data_dir: Path) -> None:
    with DataDirLock(data_dir):
        code, _, err = _reset(data_dir, yes=True)
    assert code == 1
    assert "Quit that Errand first" in err
    assert (data_dir / "errand.db").exists()


def test_a_missing_folder_is_nothing_to_do(tmp_path: Path) -> None:
    code, _, err = _reset(tmp_path / "nope", yes=True)
    assert code == 0
    assert "nothing to remove" in err

"""A task detail's files (issue 17): the file a result names is a link that opens it, only when it is in the
task's folder, and 打开 (the folder or a file) that nothing on the computer can do says so with the path
and 复制路径."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QApplication
from pytestqt.qtbot import QtBot

from tests.fakes.fake_tasks import FakeTaskFacade
from tests.ui.conftest import wait_until
from ui import i18n
from ui.result_links import file_url, link_files
from ui.task_detail import TaskDetailBody


@pytest.fixture
def body(qtbot: QtBot, tasks: FakeTaskFacade) -> Iterator[TaskDetailBody]:
    made = TaskDetailBody(tasks)
    qtbot.addWidget(made)
    made.resize(640, 700)
    made.show()
    yield made
    made.shutdown()


def refuse_opening(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    urls: list[str] = []

    def open_url(url: QUrl) -> bool:
        urls.append(url.toLocalFile())
        return False

    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(open_url))
    return urls


def allow_opening(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    urls: list[str] = []

    def open_url(url: QUrl) -> bool:
        urls.append(url.toLocalFile())
        return True

    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(open_url))
    return urls


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    made = tmp_path / "tasks" / "gpu-prices-t_1"
    (made / "data").mkdir(parents=True)
    (made / "report.md").write_text("# GPUs\n")
    (made / "data" / "prices.csv").write_text("a,b\n")
    (made / "报告.md").write_text("# 报告\n")
    (tmp_path / "secret.txt").write_text("not the task's\n")
    return made


async def shown(body: TaskDetailBody, task_id: str) -> None:
    body.show_task(task_id)
    await wait_until(lambda: body.detail is not None and body.detail.task.id == task_id)


def test_only_files_in_the_task_folder_are_linked(folder: Path) -> None:
    linked = link_files("Wrote report.md and data/prices.csv; see ../secret.txt and notes.md.", str(folder))
    assert linked.files == (folder / "report.md", (folder / "data" / "prices.csv"))
    assert f'<a href="{file_url(folder / "report.md")}">report.md</a>' in linked.html
    assert "../secret.txt" in linked.html and "secret.txt</a>" not in linked.html
    assert "notes.md</a>" not in linked.html  # named, but not there
    zh = link_files("已生成报告.md，见 report.md。", str(folder))
    assert zh.files == (folder / "报告.md", folder / "report.md")
    assert "已生成<a " in zh.html


def test_markup_in_a_result_stays_text(folder: Path) -> None:
    linked = link_files("<b>bold</b> report.md", str(folder))
    assert "&lt;b&gt;bold&lt;/b&gt;" in linked.html


async def test_a_result_naming_a_file_links_it_and_the_link_opens_it(
    body: TaskDetailBody, tasks: FakeTaskFacade, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    urls = allow_opening(monkeypatch)
    task = tasks.add_task(
        "GPU prices",
        stage="ready",
        folder=str(folder),
        latest_line="The table is in report.md",
        report={"state": "done", "summary": "done", "files": ["report.md", "data/prices.csv", "gone.txt"]},
    )
    await shown(body, task.id)
    result = body.result
    assert result.linked
    assert f'href="{file_url(folder / "report.md")}"' in result.label.text()
    # The Report's other file is listed under the line; the one that is not there is not.
    assert result.files_label.isVisible()
    assert "prices.csv</a>" in result.files_label.text() and "gone.txt" not in result.files_label.text()
    assert "report.md</a>" not in result.files_label.text()  # linked in the line already

    result.label.linkActivated.emit(file_url(folder / "report.md"))
    assert urls == [str(folder / "report.md")]
    assert not result.open_failure.isVisible()


async def test_a_result_without_a_file_of_the_folder_is_plain_text(
    body: TaskDetailBody, tasks: FakeTaskFacade, folder: Path
) -> None:
    task = tasks.add_task("GPU prices", folder=str(folder), latest_line="Reading <notes.md>")
    await shown(body, task.id)
    assert not body.result.linked
    assert body.latest_label.text() == "Reading <notes.md>"
    assert not body.result.files_label.isVisible()


async def test_open_folder_that_nothing_can_open_says_so_with_the_path_to_copy(
    body: TaskDetailBody, tasks: FakeTaskFacade, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    i18n.use_language("zh")
    urls = refuse_opening(monkeypatch)
    task = tasks.add_task("GPU 价格", folder=str(folder))
    await shown(body, task.id)
    failure = body.folder.open_failure
    assert not failure.isVisible()

    body.open_folder.click()
    assert urls == [str(folder)]
    assert failure.isVisible()
    assert failure.message.text().startswith("打不开这个文件夹")
    assert failure.path_label.text() == str(folder)
    assert failure.copy_button.text() == "复制路径"

    failure.copy_button.click()
    clipboard = QApplication.clipboard()
    assert clipboard is not None and clipboard.text() == str(folder)
    assert failure.copy_button.text() == "已复制"


async def test_a_file_link_that_nothing_can_open_says_so_with_its_path(
    body: TaskDetailBody, tasks: FakeTaskFacade, folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse_opening(monkeypatch)
    task = tasks.add_task("GPU prices", folder=str(folder), latest_line="Wrote report.md")
    await shown(body, task.id)
    body.result.label.linkActivated.emit(file_url(folder / "report.md"))
    failure = body.result.open_failure
    assert failure.isVisible()
    assert failure.message.text().startswith("Could not open report.md")
    assert failure.path_label.text() == str(folder / "report.md")
    failure.copy_button.click()
    clipboard = QApplication.clipboard()
    assert clipboard is not None and clipboard.text() == str(folder / "report.md")

"""技能 in a bot's settings, over the real SkillsService on a temporary data dir: the list with each
skill's scope and description, the folders that are not skills and why, adding a zip (a taken name offers
替换), a dropped folder, removing, and a folder put in by hand appearing when the list is read again."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from pytestqt.qtbot import QtBot

from core.skills.service import SkillsService
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.skill_folders import skill_zip, write_skill
from tests.ui.conftest import wait_until
from ui.bot_settings import BotSettingsDialog
from ui.bridge import EventBridge
from ui.skill_settings import SkillsSection


@pytest.fixture
def skills(tmp_path: Path, facade: FakeChatFacade, bots: FakeBotFacade) -> SkillsService:
    return SkillsService(
        shared_dir=tmp_path / "data" / "skills",
        bots_dir=tmp_path / "data" / "bots",
        require_bot=bots.get,
        bus=facade.bus,
    )


async def open_settings(
    qtbot: QtBot, bots: FakeBotFacade, skills: SkillsService, bridge: EventBridge
) -> SkillsSection:
    dialog = BotSettingsDialog(bots, "bot-1", skills=skills, skills_changed=bridge.skillsChanged)
    qtbot.addWidget(dialog)
    dialog.show()
    await dialog.load()
    section = dialog.skills_section
    assert section is not None
    await wait_until(lambda: not section._reading)
    return section


async def test_no_skills_says_what_a_skill_is_and_how_to_add_one(
    qtbot: QtBot, bots: FakeBotFacade, skills: SkillsService, bridge: EventBridge
) -> None:
    section = await open_settings(qtbot, bots, skills, bridge)
    assert section.rows == [] and section.none_label.isVisible()
    assert "SKILL.md" in section.none_label.text()
    assert section.drop_hint.isVisible() and not section.problems_label.isVisible()


async def test_a_zip_is_added_a_taken_name_offers_replace_and_a_skill_is_removed(
    qtbot: QtBot, bots: FakeBotFacade, skills: SkillsService, bridge: EventBridge, tmp_path: Path
) -> None:
    write_skill(tmp_path / "data" / "skills", "house-style", description="How reports look here.")
    (tmp_path / "data" / "skills" / "notes").mkdir()
    section = await open_settings(qtbot, bots, skills, bridge)
    assert [(r.skill.name, r.scope_label.text()) for r in section.rows] == [("house-style", "Shared")]
    assert section.rows[0].description.text() == "How reports look here."
    assert section.problems_label.text() == "notes: the folder has no SKILL.md"

    archive = tmp_path / "charts.zip"
    archive.write_bytes(skill_zip("charts", description="Draw charts."))
    section.add_path(archive)
    await wait_until(lambda: [r.skill.name for r in section.rows] == ["charts", "house-style"])
    assert section.rows[0].scope_label.text() == "This bot" and not section.error.isVisible()

    archive.write_bytes(skill_zip("charts", description="Better charts."))
    section.add_path(archive)
    await wait_until(section.error.isVisible)
    assert "already a skill named 'charts'" in section.error.text()
    assert section.replace_button.isVisible()
    assert section.rows[0].description.text() == "Draw charts."  # nothing changed
    section.replace_button.click()
    await wait_until(lambda: section.rows[0].description.text() == "Better charts.")
    assert not section.error.isVisible() and not section.replace_button.isVisible()

    section.rows[0].remove_button.click()
    await wait_until(lambda: [r.skill.name for r in section.rows] == ["house-style"])
    assert not (tmp_path / "data" / "bots" / "bot-1" / "skills" / "charts").exists()


async def test_a_dropped_folder_is_added_and_a_refused_one_says_why(
    qtbot: QtBot, bots: FakeBotFacade, skills: SkillsService, bridge: EventBridge, tmp_path: Path
) -> None:
    section = await open_settings(qtbot, bots, skills, bridge)
    good = write_skill(tmp_path / "downloads", "charts", folder="Charts Skill")
    (tmp_path / "downloads" / "empty").mkdir()
    for folder in (tmp_path / "downloads" / "empty", good):
        data = QMimeData()
        data.setUrls([QUrl.fromLocalFile(str(folder))])
        drop = QDropEvent(
            QPointF(QPoint(10, 10)),
            Qt.DropAction.CopyAction,
            data,
            Qt.MouseButton.LeftButton,
            Qt.KeyboardModifier.NoModifier,
        )
        section.dropEvent(drop)
        if folder.name == "empty":
            await wait_until(section.error.isVisible)
            assert "has no SKILL.md" in section.error.text() and section.rows == []
    await wait_until(lambda: [r.skill.name for r in section.rows] == ["charts"])
    assert not section.error.isVisible()


async def test_a_skill_added_elsewhere_appears_while_the_page_is_open(
    qtbot: QtBot, bots: FakeBotFacade, skills: SkillsService, bridge: EventBridge
) -> None:
    section = await open_settings(qtbot, bots, skills, bridge)
    await skills.add_zip("bot-1", skill_zip("charts"), scope="shared")  # e.g. through the API
    await wait_until(lambda: [r.skill.name for r in section.rows] == ["charts"])
    assert section.rows[0].scope_label.text() == "Shared"

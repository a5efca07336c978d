"""Render the first-run card, the bot settings and the app settings to PNG files, in both schemes.

    .venv/bin/python -m bench.render_settings [OUT_DIR] [--lang zh|en]

Runs offscreen on in-memory fakes. For both schemes it writes into OUT_DIR (default /tmp/errand-shots):
first-run-<scheme>-<lang>.png (the card with the presets, a local Ollama among them),
first-run-failed-<scheme>-<lang>.png (a failed 测试连接 and a missing key),
bot-settings-<scheme>-<lang>.png (a configured bot: stored key, quiet hours, a passed connection test),
bot-settings-refused-<scheme>-<lang>.png (a refused field under its row, quiet hours off, paused),
mcp-settings-<scheme>-<lang>.png (the 工具服务器 section: running, starting, and failed with stderr lines),
mcp-editor-<scheme>-<lang>.png (the mcpServers JSON with a refusal under it),
skills-settings-<scheme>-<lang>.png (the 技能 section: a bot's own and a shared skill, a broken folder, and a
taken name offering 替换),
app-settings-<scheme>-<lang>.png (language changed, so 「重启后生效」 shows) and
new-task-<scheme>-<lang>.png (two bots, a refusal under the form).
"""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path

from PySide6.QtWidgets import QApplication, QWidget

from bench.render_runner import render_main, settle
from core.bots.views import ConnectionCheck, ModelPreset
from core.bus import EventBus
from core.errors import ConflictError, InvalidInputError
from core.skills.service import SkillsService
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_mcp import FakeMcp
from tests.skill_folders import skill_zip, write_skill
from ui import i18n, theme
from ui.app_settings import AppSettingsDialog
from ui.bot_settings import BotSettingsDialog
from ui.first_run import FirstRunCard
from ui.new_task_dialog import NewTaskDialog

OLLAMA = ModelPreset(
    "ollama",
    "Ollama(本机)",
    "http://127.0.0.1:11434/v1",
    "qwen2.5:7b",
    needs_key=False,
    local=True,
    models=("qwen2.5:7b", "llama3.1:8b"),
)


def grab(widget: QWidget, out_dir: Path, name: str, scheme: str, lang: str) -> Path:
    path = out_dir / f"{name}-{scheme}-{lang}.png"
    widget.grab().save(str(path))
    return path


async def render(app: QApplication, out_dir: Path, scheme: theme.Scheme, lang: i18n.Language) -> list[Path]:
    i18n.use_language(lang)
    theme.apply_theme(app, scheme)
    zh = lang == "zh"
    paths: list[Path] = []

    bots = FakeBotFacade()
    bots.presets.append(OLLAMA)
    fresh = bots.add("Errand", configured=False, avatar="teal")
    card = FirstRunCard(bots, fresh.id)
    card.resize(860, 640)
    card.show()
    await card.load()
    await settle()
    paths.append(grab(card, out_dir, "first-run", scheme, lang))
    bots.connection = ConnectionCheck(
        ok=False, message="密钥不对:服务器说 401,请检查密钥" if zh else "The key was refused (401); check it"
    )
    card.pick("openai")
    card.test_connection()
    await settle()
    card.save()
    await settle()
    paths.append(grab(card, out_dir, "first-run-failed", scheme, lang))
    card.close()

    bots.connection = ConnectionCheck(ok=True, message="连接正常" if zh else "Connected", latency_ms=182.0)
    bot = bots.add("天天" if zh else "Tiantian", avatar="violet", quiet_start="22:00", quiet_end="08:00")
    dialog = BotSettingsDialog(bots, bot.id)
    dialog.resize(600, 1040)
    dialog.show()
    await dialog.load()
    dialog.test_connection()
    await settle()
    paths.append(grab(dialog, out_dir, "bot-settings", scheme, lang))
    dialog.quiet_off.setChecked(True)
    dialog.paused_switch.setChecked(True)
    dialog.slots_input.setCurrentIndex(3)
    dialog.key_input.setText("sk-new")
    bots.update_error = InvalidInputError("taskSlots", "must be between 1 and 3")
    dialog.save()
    await settle()
    paths.append(grab(dialog, out_dir, "bot-settings-refused", scheme, lang))
    bots.update_error = None
    dialog.reject()

    paths += await render_mcp(bots, bot.id, out_dir, scheme, lang)
    paths += await render_skills(bots, bot.id, out_dir, scheme, lang)

    prefs = AppSettingsDialog(bots, lambda _on: None, app)
    prefs.show()
    await prefs.load()
    prefs.language_combo.setCurrentIndex(prefs.language_combo.findData("en" if zh else "zh"))
    prefs.autostart_switch.setChecked(True)
    await settle()
    paths.append(grab(prefs, out_dir, "app-settings", scheme, lang))
    prefs.reject()

    async def refuse(_bot: str, _title: str, _brief: str, _plan: bool) -> object:
        raise ConflictError(
            "天天 已经有 10 个进行中的任务,先停掉或做完一个。"
            if zh
            else "Tiantian already has 10 open tasks; stop or finish one first."
        )

    new_task = NewTaskDialog(refuse, await bots.list(), bot.id)
    new_task.show()
    new_task.title_input.setText("GPU 价格调研" if zh else "GPU prices")
    new_task.brief_input.setPlainText(
        "调研三家云的 GPU 价格,整理成一张表" if zh else "Compare GPU prices across three clouds"
    )
    new_task.plan_switch.setChecked(True)
    new_task.submit()
    await settle()
    paths.append(grab(new_task, out_dir, "new-task", scheme, lang))
    new_task.reject()
    return paths


MCP_CONFIG = (
    '{"mcpServers": {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem",'
    ' "/home/me/notes"]}, "github": {"command": "docker", "args": ["run", "-i", "--rm",'
    ' "ghcr.io/github/github-mcp-server"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x"}},'
    ' "search": {"url": "https://mcp.example.com/mcp", "readOnly": true, "permission": "allow"}}}'
)


async def render_mcp(bots: FakeBotFacade, bot_id: str, out_dir: Path, scheme: str, lang: str) -> list[Path]:
    mcp = FakeMcp(EventBus(), bot_id)
    await mcp.replace_text(bot_id, MCP_CONFIG)
    mcp.set_state("files", "running", tools=14)
    mcp.set_state("search", "starting")
    mcp.set_state(
        "github",
        "failed",
        "it exited while starting; starting again in 4 s",
        ("Error: GITHUB_PERSONAL_ACCESS_TOKEN not set", "  at main (index.js:12)"),
    )
    dialog = BotSettingsDialog(bots, bot_id, mcp=mcp)
    dialog.resize(600, 1240)
    dialog.show()
    await dialog.load()
    await settle()
    paths = [grab(dialog, out_dir, "mcp-settings", scheme, lang)]
    section = dialog.mcp_section
    assert section is not None
    editor = section.open_editor()
    assert editor is not None
    editor.editor.setPlainText(editor.editor.toPlainText().replace('"command": "npx"', '"comand": "npx"'))
    editor.save()
    await settle()
    paths.append(grab(editor, out_dir, "mcp-editor", scheme, lang))
    editor.reject()
    dialog.reject()
    return paths


async def render_skills(
    bots: FakeBotFacade, bot_id: str, out_dir: Path, scheme: str, lang: str
) -> list[Path]:
    zh = lang == "zh"
    with tempfile.TemporaryDirectory() as data:
        skills = SkillsService(
            shared_dir=Path(data, "skills"), bots_dir=Path(data, "bots"), require_bot=bots.get, bus=EventBus()
        )
        write_skill(
            Path(data, "skills"),
            "house-style",
            description="报告用公司模板：标题、摘要、三点结论。"
            if zh
            else "Reports use the company template.",
        )
        await skills.add_zip(
            bot_id,
            skill_zip(
                "expense-form",
                description="从收据填写报销单。用户发来收据或要报销时使用。"
                if zh
                else "Fill in the expense form from receipts. Use it when the user sends receipts.",
            ),
        )
        _folder(Path(data, "skills", "notes"))  # not a skill: shown as a problem
        dialog = BotSettingsDialog(bots, bot_id, skills=skills)
        dialog.resize(600, 1480)
        dialog.show()
        await dialog.load()
        await settle()
        section = dialog.skills_section
        assert section is not None
        section.add_path(_file(Path(data, "expense-form.zip"), skill_zip("expense-form")))
        await settle()
        paths = [grab(dialog, out_dir, "skills-settings", scheme, lang)]
        dialog.reject()
    return paths


def _folder(path: Path) -> None:
    path.mkdir()


def _file(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def main() -> None:
    render_main(__doc__, render)


if __name__ == "__main__":
    main()

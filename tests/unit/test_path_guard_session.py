"""One path guard lives as long as the session: what changes on disk mid-session is still judged by it.

The runtime builds the guard once per permission (not once per tool call), so these tests make their first
tool call, then change the file system, then call again through the same session's tool context.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from core.agent.model_config import ModelConfig
from core.agent.runtime import AgentRuntime
from core.agent.sandbox import Permission, Preset
from core.agent.session_spec import SessionSpec
from core.agent.tool_api import ToolError, ToolSpec
from core.clock import FakeClock


@dataclass
class Session:
    runtime: AgentRuntime
    spec: SessionSpec
    tools: dict[str, ToolSpec]
    home: Path
    ws: Path

    async def call(self, name: str, **args: Any) -> str:
        spec = self.tools[name]
        return await spec.handler(self.runtime.tool_context(self.spec), spec.args_model.model_validate(args))


def make_spec(ws: Path, preset: Preset = Preset.WORKSPACE_WRITE, session_id: str = "task-t1") -> SessionSpec:
    return SessionSpec(
        session_id=session_id,
        kind="task",
        bot_id="b",
        cwd=ws,
        model=ModelConfig("http://127.0.0.1:9/v1", "fake-model", "k"),
        permission=Permission(preset, ws),
    )


@pytest.fixture
async def session(tmp_path: Path) -> AsyncIterator[Session]:
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    (ws / "notes.txt").write_text("hello\n")
    runtime = AgentRuntime(sessions_dir=tmp_path / "sessions", clock=FakeClock(), home=home)
    tools = {spec.name: spec for spec in runtime.common_tools}
    yield Session(runtime, make_spec(ws), tools, home, ws)
    await runtime.close()


async def first_call(s: Session) -> None:
    """The session's first tool call, so its guard exists before the file system changes."""
    assert "hello" in await s.call("read_file", path="notes.txt")


def secret(directory: Path, name: str = "credentials", text: str = "AWS-SECRET\n") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


# -- the guard is built once ---------------------------------------------------------------------------


async def test_the_session_keeps_one_guard_and_a_new_permission_gets_another(session: Session) -> None:
    first = session.runtime.tool_context(session.spec).guard
    assert session.runtime.tool_context(session.spec).guard is first
    read_only = make_spec(session.ws, Preset.READ_ONLY)
    assert session.runtime.tool_context(read_only).guard is not first
    assert session.runtime.tool_context(read_only).guard.permission.preset is Preset.READ_ONLY
    with pytest.raises(ToolError, match="read-only"):
        await session.tools["write_file"].handler(
            session.runtime.tool_context(read_only),
            session.tools["write_file"].args_model.model_validate({"path": "x.txt", "content": "x"}),
        )


# -- credentials that appear or move mid-session -------------------------------------------------------


async def test_a_credential_dir_created_after_the_first_call_is_refused(session: Session) -> None:
    await first_call(session)
    secret(session.home / ".aws")
    with pytest.raises(ToolError, match=r"~/\.aws/credentials is a credential path"):
        await session.call("read_file", path="~/.aws/credentials")
    with pytest.raises(ToolError, match="credential path"):
        await session.call("write_file", path="~/.aws/config", content="x")
    listing = await session.call("list_files", path=str(session.home), pattern="**")
    assert ".aws" not in listing


async def test_a_symlink_made_mid_session_into_a_credential_path_is_refused(session: Session) -> None:
    await first_call(session)
    secret(session.home / ".ssh", "id_rsa", "SSH-KEY\n")
    (session.ws / "keys").symlink_to(session.home / ".ssh")
    (session.ws / "netrc").symlink_to(session.home / ".netrc")  # not there yet: still refused
    with pytest.raises(ToolError, match="credential path"):
        await session.call("read_file", path="keys/id_rsa")
    with pytest.raises(ToolError, match="credential path"):
        await session.call("write_file", path="netrc", content="machine x password y\n")
    assert not (session.home / ".netrc").exists()
    assert "keys" not in await session.call("list_files", pattern="**")


async def test_a_credential_dir_that_is_a_symlink_is_refused_where_it_points(
    session: Session, tmp_path: Path
) -> None:
    vault = tmp_path / "vault" / "ssh"
    key = secret(vault, "id_rsa", "SSH-KEY\n")
    (session.home / ".ssh").symlink_to(vault)  # dotfile managers do this
    await first_call(session)
    with pytest.raises(ToolError, match="credential path"):
        await session.call("read_file", path=str(key))
    (session.ws / "elsewhere").symlink_to(vault)
    with pytest.raises(ToolError, match="credential path"):
        await session.call("read_file", path="elsewhere/id_rsa")


async def test_a_credential_dir_turned_into_a_symlink_mid_session_is_refused_where_it_points(
    session: Session, tmp_path: Path
) -> None:
    await first_call(session)
    key = secret(tmp_path / "vault" / "aws")
    (session.home / ".aws").symlink_to(key.parent)
    with pytest.raises(ToolError, match="credential path"):
        await session.call("read_file", path=str(key))


async def test_a_parent_of_credentials_turned_into_a_symlink_mid_session_is_followed(
    session: Session, tmp_path: Path
) -> None:
    await first_call(session)
    dots = tmp_path / "dotfiles" / "config"
    token = secret(dots / "gcloud", "token.json", "GCLOUD\n")
    hosts = secret(dots / "gh", "hosts.yml", "GH-TOKEN\n")
    (session.home / ".config").symlink_to(dots)
    for path in (token, hosts):
        with pytest.raises(ToolError, match="credential path"):
            await session.call("read_file", path=str(path))
    assert await session.call("grep", pattern="GCLOUD|GH-TOKEN", path=str(dots)) == (
        f"No matches for 'GCLOUD|GH-TOKEN' in {dots}."
    )


async def test_a_link_chain_retargeted_mid_session_is_followed(session: Session, tmp_path: Path) -> None:
    hop = tmp_path / "links" / "kube"
    hop.parent.mkdir()
    old, new = secret(tmp_path / "old-kube", "config"), secret(tmp_path / "new-kube", "config")
    hop.symlink_to(old.parent)
    (session.home / ".kube").symlink_to(hop)
    await first_call(session)
    with pytest.raises(ToolError, match="credential path"):
        await session.call("read_file", path=str(old))
    replacement = hop.with_name("kube.tmp")
    replacement.symlink_to(new.parent)
    os.replace(replacement, hop)  # how `ln -sfn` retargets: the link changes, ~/.kube does not
    with pytest.raises(ToolError, match="credential path"):
        await session.call("read_file", path=str(new))
    assert "AWS-SECRET" in await session.call("read_file", path=str(old))  # no longer a credential


async def test_ordinary_files_stay_readable_and_writable_through_the_kept_guard(session: Session) -> None:
    await first_call(session)
    (session.home / ".config").mkdir()
    (session.home / ".config" / "editor.toml").write_text("theme = 'dark'\n")
    assert "theme" in await session.call("read_file", path="~/.config/editor.toml")
    assert "Wrote 2 bytes" in await session.call("write_file", path="out.txt", content="ok")
    with pytest.raises(ToolError, match="outside the workspace"):
        await session.call("write_file", path="~/.config/editor.toml", content="x")

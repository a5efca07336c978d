from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx
import pytest

from core.agent.model_config import ModelConfig, RetryPolicy
from core.agent.runtime import AgentRuntime
from core.agent.sandbox import Permission, Preset
from core.agent.session import AgentSession
from core.agent.session_spec import SessionSpec
from core.channels.feishu.cards import check_card
from core.clock import FakeClock, SystemClock
from core.host import Host
from tests.fakes.fake_dingtalk import FakeDingTalk
from tests.fakes.fake_feishu import FakeFeishu
from tests.fakes.fake_ilink import FakeILink
from tests.fakes.fake_telegram import FakeTelegram
from tests.fakes.model_server import ScriptedModelServer
from tests.integration.host_fixtures import make_host, running_api
from tests.integration.rule_api import NOW
from tests.integration.task_script import SessionScript

FAST_RETRY = RetryPolicy(delays_s=(0.01, 0.01, 0.01))


@pytest.fixture
async def ilink() -> AsyncIterator[FakeILink]:
    """A fake WeChat iLink server whose QR login is scanned and confirmed at once."""
    async with FakeILink(hold_s=0.2) as server:
        server.qr_script = ["scaned", "confirmed"]
        yield server


@pytest.fixture
async def feishu() -> AsyncIterator[FakeFeishu]:
    """A fake Feishu open platform: one app, its bot, the long connection and the message routes."""
    async with FakeFeishu(card_checker=check_card) as server:
        yield server


@pytest.fixture
async def dingtalk() -> AsyncIterator[FakeDingTalk]:
    """A fake DingTalk: one app and its robot, the stream gateway, the robot's sends and their read-back."""
    async with FakeDingTalk() as server:
        yield server


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    """A fake Telegram Bot API: one bot, getUpdates long polling and the send routes."""
    async with FakeTelegram() as server:
        yield server


@pytest.fixture
async def model_server() -> AsyncIterator[ScriptedModelServer]:
    async with ScriptedModelServer() as server:
        yield server


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fake home with credentials in it, so guard tests never touch the real ~/.ssh."""
    h = tmp_path / "home"
    (h / ".ssh").mkdir(parents=True)
    (h / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    return h


@pytest.fixture
async def runtime(tmp_path: Path, home: Path) -> AsyncIterator[AgentRuntime]:
    rt = AgentRuntime(sessions_dir=tmp_path / "sessions", clock=SystemClock(), home=home)
    yield rt
    await rt.close()


OpenSession = Callable[..., Awaitable[AgentSession]]


@pytest.fixture
def open_session(runtime: AgentRuntime, model_server: ScriptedModelServer, tmp_path: Path) -> OpenSession:
    async def open_(
        session_id: str = "chat-c_test",
        *,
        rt: AgentRuntime | None = None,
        preset: Preset = Preset.WORKSPACE_WRITE,
        retry: RetryPolicy = FAST_RETRY,
        base_url: str | None = None,
    ) -> AgentSession:
        workspace = tmp_path / "workspace"
        workspace.mkdir(exist_ok=True)
        spec = SessionSpec(
            session_id=session_id,
            kind="chat",
            bot_id="b_test",
            cwd=workspace,
            model=ModelConfig(base_url=base_url or model_server.base_url, model="fake-model", api_key="k"),
            permission=Permission(preset=preset, workspace=workspace),
            retry=retry,
        )
        return await (rt or runtime).open_session(spec)

    return open_


@pytest.fixture
def script(model_server: ScriptedModelServer) -> SessionScript:
    """Replies scripted per session (chat, or a task by its title) on the fake model."""
    scripted = SessionScript()
    model_server.responder = scripted
    return scripted


@pytest.fixture
def host(tmp_path: Path, model_server: ScriptedModelServer, home: Path) -> Host:
    return make_host(tmp_path / "data", model_server.base_url, home=home)


# -- rules: a host on a fake clock at a fixed "now", and a client of its API ---------------------------


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(start=NOW)


@pytest.fixture
def rules_host(tmp_path: Path, model_server: ScriptedModelServer, home: Path, clock: FakeClock) -> Host:
    return make_host(tmp_path / "data", model_server.base_url, home=home, clock=clock)


@pytest.fixture
async def client(rules_host: Host) -> AsyncIterator[httpx.AsyncClient]:
    async with running_api(rules_host) as c:
        yield c

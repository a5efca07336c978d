"""Each bot's sidebar state, derived from tasks, needs-you and streaming replies (core.sidebar_state)."""

from __future__ import annotations

from core.attention.items import approval_item, failed_task_item, question_item
from core.bots.views import BotActivity
from core.sidebar_state import BotActivityReader
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_tasks import FakeTaskFacade


class Names:
    def __init__(self, *ids: str) -> None:
        self.ids = ids

    async def names(self) -> dict[str, str]:
        return {bot_id: bot_id.upper() for bot_id in self.ids}


def reader(chat: FakeChatFacade, tasks: FakeTaskFacade, attention: FakeAttentionFacade) -> BotActivityReader:
    return BotActivityReader(tasks, attention, chat, Names("a", "b"))


async def test_healthy_bots_are_idle_with_no_line() -> None:
    chat = FakeChatFacade()
    tasks = FakeTaskFacade(chat)
    tasks.add_task("Old", stage="ready", bot_id="a")
    got = await reader(chat, tasks, FakeAttentionFacade(chat)).read("zh")
    assert got == [BotActivity("a", "idle"), BotActivity("b", "idle")]


async def test_working_tasks_and_a_streaming_reply_make_a_bot_work() -> None:
    chat = FakeChatFacade()
    tasks = FakeTaskFacade(chat)
    tasks.add_task("GPU", stage="working", bot_id="a")
    tasks.add_task("Report", stage="working/asking", bot_id="a")
    talk = chat.add_conversation("Chat", bot_id="b")
    chat.start_live_reply(talk.id)
    a, b = await reader(chat, tasks, FakeAttentionFacade(chat)).read("zh")
    assert (a.state, a.line, a.working_count) == ("working", "2 个任务进行中", 2)
    assert (b.state, b.line) == ("working", "正在工作…")
    a_en, _b_en = await reader(chat, tasks, FakeAttentionFacade(chat)).read("en")
    assert a_en.line == "2 tasks working"


async def test_something_waiting_wins_and_names_the_task() -> None:
    chat = FakeChatFacade()
    tasks = FakeTaskFacade(chat)
    gpu = tasks.add_task("GPU 价格调研", stage="needs-you/answer", bot_id="a")
    tasks.add_task("Other", stage="working", bot_id="a")
    clean = tasks.add_task("清理旧构建", stage="needs-you/answer", bot_id="b")
    attention = FakeAttentionFacade(chat)
    attention.add(question_item("q1", gpu.id, "a", "GPU 价格调研", "包月还是按小时?", (), None, 1.0))
    attention.add(approval_item("p1", "b", "rm -rf build/", 2.0, task_id=clean.id, task_title="清理旧构建"))
    a, b = await reader(chat, tasks, attention).read("zh")
    assert (a.state, a.line, a.waiting_count, a.working_count) == ("waiting", "GPU 价格调研等你回答", 1, 1)
    assert (b.state, b.line) == ("waiting", "清理旧构建等你批准")

    attention.add(failed_task_item("t_x", "a", "Deck", "no access", 3.0))
    a, _b = await reader(chat, tasks, attention).read("en")
    assert (a.state, a.line, a.waiting_count) == ("waiting", "2 things wait for you", 2)


async def test_a_chats_own_approval_has_no_title() -> None:
    chat = FakeChatFacade()
    attention = FakeAttentionFacade(chat)
    attention.add(approval_item("p1", "a", "rm -rf build/", 2.0))
    a, _b = await reader(chat, FakeTaskFacade(chat), attention).read("zh")
    assert a.line == "等你批准"

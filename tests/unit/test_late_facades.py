"""The stand-ins the desktop window is built over before the host exists (app/late_facades.py): a call made
early waits for the host and then reaches it once; one made late goes straight through; a plain method
called early says the host is not ready; a name no facade has fails at once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from app.late_facades import HostNotReadyError, LateFacades
from core.attention.facade import AttentionFacade
from core.bots.facade import BotFacade
from core.channels.facade import ChannelFacade
from core.chat.facade import ChatFacade
from core.rules.facade import RuleFacade
from core.search.facade import SearchFacade
from core.tasks.facade import TaskFacade
from tests.fakes.fake_attention import FakeAttentionFacade
from tests.fakes.fake_bots import FakeBotFacade
from tests.fakes.fake_channels import FakeChannels
from tests.fakes.fake_chat import FakeChatFacade
from tests.fakes.fake_rules import FakeRuleFacade
from tests.fakes.fake_tasks import FakeTaskFacade


@dataclass
class FakeHost:
    chat: ChatFacade
    tasks: TaskFacade
    attention: AttentionFacade
    desktop_bots: BotFacade
    rules: RuleFacade
    channels: ChannelFacade
    search: SearchFacade


def a_host() -> tuple[FakeHost, FakeChatFacade]:
    chat = FakeChatFacade()
    host = FakeHost(
        chat=chat,
        tasks=FakeTaskFacade(chat),
        attention=FakeAttentionFacade(chat),
        desktop_bots=FakeBotFacade(chat.bus),
        rules=FakeRuleFacade(chat.bus),
        channels=FakeChannels(),
        search=chat,
    )
    return host, chat


async def test_a_call_made_before_the_host_waits_for_it_and_reaches_it_once() -> None:
    late = LateFacades()
    host, chat = a_host()
    conversation = chat.add_conversation("Early")
    listing = late.chat.list_conversations  # kept by a widget as it is built, called later
    early = asyncio.ensure_future(late.chat.say(conversation.id, "typed in the first second"))
    listed = asyncio.ensure_future(listing())
    await asyncio.sleep(0)  # let both start: they must be waiting, not failed
    assert not early.done() and not listed.done()
    assert chat.said == []

    late.bind(host)

    await asyncio.wait_for(asyncio.gather(early, listed), timeout=5)
    assert chat.said == [(conversation.id, "typed in the first second")]
    assert [c.id for c in listed.result()] == [conversation.id]
    # Kept from before the host and called after it: straight through, once more.
    assert [c.id for c in await listing()] == [conversation.id]


async def test_after_bind_every_facade_is_the_hosts_own() -> None:
    late = LateFacades()
    host, chat = a_host()
    late.bind(host)
    assert late.chat.list_conversations == chat.list_conversations
    assert late.tasks.list_tasks == host.tasks.list_tasks
    assert late.chat.live_reply("c_1") is None


def test_a_plain_method_called_before_the_host_says_so() -> None:
    late = LateFacades()
    with pytest.raises(HostNotReadyError, match=r"chat\.live_reply"):
        late.chat.live_reply("c_1")


def test_a_name_no_facade_has_fails_at_once() -> None:
    late = LateFacades()
    with pytest.raises(AttributeError):
        getattr(late.chat, "no_such_method")  # noqa: B009

"""The host's facades before the host exists (docs/architecture.md#start-up).

The window is built and shown first, in a few tenths of a second, while the host's modules import off the
loop. It is built over these stand-ins, which pass every call on to the host's own facade once `bind` has
been given the host, after it started (its store is open then). A call made before then waits for it: a
message typed in the first second is sent once the host is up, not lost. A facade's plain (not async)
methods have no answer to wait for; called early, they say so with an error rather than guess one.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any, Protocol, cast

from core.attention.facade import AttentionFacade
from core.bots.facade import BotFacade
from core.channels.facade import ChannelFacade
from core.chat.facade import ChatFacade
from core.memory.facade import MemoryFacade
from core.rules.facade import RuleFacade
from core.search.facade import SearchFacade
from core.tasks.facade import TaskFacade


class HostFacades(Protocol):
    """What of the host the window is built over (`core.host.Host` has all of it)."""

    @property
    def chat(self) -> ChatFacade: ...
    @property
    def tasks(self) -> TaskFacade: ...
    @property
    def attention(self) -> AttentionFacade: ...
    @property
    def desktop_bots(self) -> BotFacade: ...
    @property
    def rules(self) -> RuleFacade: ...
    @property
    def channels(self) -> ChannelFacade: ...
    @property
    def search(self) -> SearchFacade: ...


class HostNotReadyError(RuntimeError):
    """A plain method of a facade was called before the host was there to answer it."""


class LateFacades:
    """Stand-ins for the host's facades, typed as them, until `bind`; from then on the host's own."""

    def __init__(self) -> None:
        self._host: HostFacades | None = None
        self._bound = asyncio.Event()
        self.chat = cast(ChatFacade, _Late(self, "chat", ChatFacade))
        self.tasks = cast(TaskFacade, _Late(self, "tasks", TaskFacade))
        self.attention = cast(AttentionFacade, _Late(self, "attention", AttentionFacade))
        self.desktop_bots = cast(BotFacade, _Late(self, "desktop_bots", BotFacade))
        self.rules = cast(RuleFacade, _Late(self, "rules", RuleFacade))
        self.channels = cast(ChannelFacade, _Late(self, "channels", ChannelFacade))
        self.search = cast(SearchFacade, _Late(self, "search", SearchFacade))
        # Not in HostFacades: the window takes it on its own (`core.host.Host.memory`).
        self.memory = cast(MemoryFacade, _Late(self, "memory", MemoryFacade))

    def bind(self, host: HostFacades) -> None:
        """The host has started: every call from now on, and every one that waited, goes to its facades."""
        self._host = host
        self._bound.set()

    def facade_of(self, attribute: str) -> object | None:
        return None if self._host is None else getattr(self._host, attribute)

    async def host(self) -> HostFacades:
        await self._bound.wait()
        assert self._host is not None
        return self._host


class _Late:
    """One facade's stand-in. Its methods are looked up on the protocol, so a name the facade does not
    have is an AttributeError at once, as on the real one."""

    def __init__(self, owner: LateFacades, attribute: str, protocol: type) -> None:
        self._owner = owner
        self._attribute = attribute
        self._protocol = protocol

    def __getattr__(self, name: str) -> Callable[..., Any]:
        real = self._owner.facade_of(self._attribute)
        if real is not None:
            return cast(Callable[..., Any], getattr(real, name))
        declared = getattr(self._protocol, name)
        owner, attribute = self._owner, self._attribute
        if inspect.iscoroutinefunction(declared):
            # Captured early (a bound method kept by a widget) and called late: no wait then.
            async def when_bound(*args: Any, **kwargs: Any) -> Any:
                facade = owner.facade_of(attribute) or getattr(await owner.host(), attribute)
                return await getattr(facade, name)(*args, **kwargs)

            return when_bound

        def now(*args: Any, **kwargs: Any) -> Any:
            facade = owner.facade_of(attribute)
            if facade is None:
                raise HostNotReadyError(f"{attribute}.{name} was called before the host was built")
            return getattr(facade, name)(*args, **kwargs)

        return now

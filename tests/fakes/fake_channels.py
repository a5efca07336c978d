"""An in-memory ChannelFacade for UI tests and renders.

Channels are set up by hand (`put`) or made by `add` as the real service makes them: `connecting`, with a
QR login whose first code is there. A test then walks the login the way the platform would: `scan`,
`ask_verify_code`, `expire_code` (a new code, three in all, then the login fails as the real one does),
`confirm`, `fail`; and moves a channel's own status with `connect`, `expire_login` and `set_error`.
`enter_verify_code` checks the digits with the real checker, so a refusal carries the real field and words.

It publishes nothing itself: `on_change(callback)` is told the channel id after every change, and a test
hands that on (to the bus, so the bridge's `channelChanged` follows; or straight to a view). Every command
is recorded in `calls`; `add_gate` holds `add` and `log_in_again` until set, so a test can see the UI not
wait; `add_error` makes them raise.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping
from dataclasses import replace

from core.channels.app_check import AppCheck
from core.channels.service import KINDS, ChannelView
from core.channels.wechat.login import MAX_CODES, LoginProgress, checked_verify_code
from core.errors import InvalidInputError, NotFoundError

QR_URL = "https://liteapp.weixin.qq.com/q/7GiQu1?qrcode={n}&bot_type=3"


class FakeChannels:
    def __init__(self, known_bots: set[str] | None = None) -> None:
        """`known_bots`: the bots that exist (None: any bot id is taken)."""
        self._known = known_bots
        self._channels: dict[str, ChannelView] = {}
        self._ids = itertools.count(1)
        self._listeners: list[Callable[[str], None]] = []
        self.calls: list[tuple[str, ...]] = []
        self.codes_entered: list[tuple[str, str]] = []  # (channel id, digits) the facade took
        self.add_gate: asyncio.Event | None = None
        self.add_error: Exception | None = None
        self.reads = 0

    # ---- ChannelFacade -----------------------------------------------------------------------------

    async def of_bot(self, bot_id: str) -> list[ChannelView]:
        self._bot(bot_id)
        self.reads += 1
        return [c for c in self._channels.values() if c.bot_id == bot_id]

    async def get(self, bot_id: str, channel_id: str) -> ChannelView:
        return self._channel(bot_id, channel_id)

    async def add(self, bot_id: str, kind: str, config: Mapping[str, object] | None = None) -> ChannelView:
        self.calls.append(("add", bot_id, kind))
        if kind not in KINDS:
            raise InvalidInputError("kind", f"must be one of {', '.join(KINDS)}, not {kind!r}")
        self._bot(bot_id)
        await self._held()
        channel_id = f"ch_{next(self._ids):012x}"
        view = ChannelView(channel_id, bot_id, kind, "", "", "connecting", "", _first_code())
        self._set(view)
        return view

    async def check_app(self, kind: str, config: Mapping[str, object]) -> AppCheck:
        self.calls.append(("check_app", kind))
        await self._held()
        return AppCheck("Errand Bot", "ou_bot")

    async def log_in_again(self, bot_id: str, channel_id: str) -> ChannelView:
        self.calls.append(("log_in_again", bot_id, channel_id))
        self._channel(bot_id, channel_id)
        await self._held()
        view = replace(self._channels[channel_id], status="connecting", reason="", login=_first_code())
        self._set(view)
        return view

    def enter_verify_code(self, channel_id: str, code: str) -> None:
        self.calls.append(("enter_verify_code", channel_id, code))
        digits = checked_verify_code(code)
        view = self._channels.get(channel_id)
        if view is None or view.login is None:
            raise NotFoundError("login", channel_id)
        self.codes_entered.append((channel_id, digits))

    async def remove(self, bot_id: str, channel_id: str) -> None:
        self.calls.append(("remove", bot_id, channel_id))
        self._channel(bot_id, channel_id)
        del self._channels[channel_id]
        self._announce(channel_id)

    # ---- what a test drives ------------------------------------------------------------------------

    def on_change(self, listener: Callable[[str], None]) -> None:
        self._listeners.append(listener)

    def put(
        self,
        bot_id: str = "bot-1",
        status: str = "connected",
        *,
        account: str = "wxid_a1b2c3@im.bot",
        owner: str = "o9cq80_owner@im.wechat",
        reason: str = "",
        login: LoginProgress | None = None,
        kind: str = "wechat",
    ) -> ChannelView:
        """A channel as if it had been connected earlier."""
        view = ChannelView(f"ch_{next(self._ids):012x}", bot_id, kind, account, owner, status, reason, login)
        self._set(view)
        return view

    def channel(self, channel_id: str) -> ChannelView:
        return self._channels[channel_id]

    def ids(self) -> list[str]:
        return list(self._channels)

    def scan(self, channel_id: str) -> None:
        self._login(channel_id, status="scanned")

    def ask_verify_code(self, channel_id: str) -> None:
        self._login(channel_id, status="need_verify_code")

    def expire_code(self, channel_id: str) -> None:
        """The shown code expired: the next one is shown, or after the last the login fails."""
        login = self._progress(channel_id)
        if login.codes >= MAX_CODES:
            self.fail(channel_id, f"the QR code expired {MAX_CODES} times; start again to get a new one")
            return
        n = login.codes + 1
        self._login(channel_id, status="wait", qrcode_url=QR_URL.format(n=n), codes=n)

    def confirm(self, channel_id: str, account: str = "wxid_a1b2c3@im.bot") -> None:
        """The phone confirmed: the account is stored and the channel connects (first poll still to come)."""
        view = self._channels[channel_id]
        login = replace(self._progress(channel_id), status="confirmed")
        self._set(replace(view, account=account, owner="o9cq80_owner@im.wechat", login=login))

    def fail(self, channel_id: str, reason: str) -> None:
        view = self._channels[channel_id]
        login = replace(self._progress(channel_id), status="failed", reason=reason)
        self._set(replace(view, status="error", reason=reason, login=login))

    def connect(self, channel_id: str) -> None:
        self._set(replace(self._channels[channel_id], status="connected", reason=""))

    def expire_login(self, channel_id: str, reason: str = "WeChat ended the session (-14)") -> None:
        self._set(replace(self._channels[channel_id], status="login_expired", reason=reason, login=None))

    def set_error(self, channel_id: str, reason: str) -> None:
        self._set(replace(self._channels[channel_id], status="error", reason=reason))

    # ---- helpers -----------------------------------------------------------------------------------

    def _progress(self, channel_id: str) -> LoginProgress:
        login = self._channels[channel_id].login
        assert login is not None, f"{channel_id} has no login under way"
        return login

    def _login(self, channel_id: str, **changes: object) -> None:
        login = replace(self._progress(channel_id), **changes)  # type: ignore[arg-type]
        self._set(replace(self._channels[channel_id], login=login))

    def _set(self, view: ChannelView) -> None:
        self._channels[view.id] = view
        self._announce(view.id)

    def _announce(self, channel_id: str) -> None:
        for listener in list(self._listeners):
            listener(channel_id)

    async def _held(self) -> None:
        if self.add_gate is not None:
            await self.add_gate.wait()
        if self.add_error is not None:
            raise self.add_error

    def _bot(self, bot_id: str) -> None:
        if self._known is not None and bot_id not in self._known:
            raise NotFoundError("bot", bot_id)

    def _channel(self, bot_id: str, channel_id: str) -> ChannelView:
        self._bot(bot_id)
        view = self._channels.get(channel_id)
        if view is None or view.bot_id != bot_id:
            raise NotFoundError("channel", channel_id)
        return view


def _first_code() -> LoginProgress:
    return LoginProgress("wait", QR_URL.format(n=1), codes=1)

"""An in-memory ChannelFacade for UI tests and renders.

Channels are set up by hand (`put`) or made by `add` as the real service makes them. WeChat: `connecting`,
with a QR login whose first code is there. Feishu: its config checked field by field (an empty appId or
appSecret, a domain other than feishu or lark, is refused with that field as the real service does), then
`connected`, named by the config's "name" or "Errand Bot", the app id as its account; `check_app` checks the
same way and answers an AppCheck with that name. DingTalk: its {"appKey", "appSecret", "robotCode"} checked
with the real `checked_app` (fields appKey, appSecret, robotCode), then `connected` with the AppKey as its
account and no name (DingTalk tells none); `check_app` checks the same way and answers an empty AppCheck, as
the real one does. A DingTalk channel's groups are set up with `add_group` and decided by `admit_group`.
Telegram: its {"token"} checked with the real `checked_token` (field token), then `connected` as
@errand_test_bot, waiting for the pairing code "123456" until a test calls `pair`. A test then walks a
WeChat login the way the platform
would: `scan`, `ask_verify_code`, `expire_code` (a new code, three in all, then the login fails as the real
one does), `confirm`, `fail`; and moves a channel's own status with `connect`, `expire_login`, `set_error`
and `set_status` (Feishu's reconnecting and unhealthy).
`enter_verify_code` checks the digits with the real checker, so a refusal carries the real field and words.

It publishes nothing itself: `on_change(callback)` is told the channel id after every change, and a test
hands that on (to the bus, so the bridge's `channelChanged` follows; or straight to a view). Every command
is recorded in `calls` (and the configs `add` and `check_app` were given in `configs`); `add_gate` holds
`add`, `check_app` and `log_in_again` until set, so a test can see the UI not wait; `add_error` makes `add`
and `log_in_again` raise, `check_error` makes `check_app` raise (after the gate, as a platform's answer);
`admit_gate` holds `admit_group` and `admit_error` makes it raise.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping
from dataclasses import replace

from core.channels.app_check import AppCheck
from core.channels.dingtalk.config import checked_app
from core.channels.service import KINDS
from core.channels.telegram.config import checked_token
from core.channels.views import MAX_CODES, ChannelGroup, ChannelView, LoginProgress
from core.channels.wechat.login import checked_verify_code
from core.errors import InvalidInputError, NotFoundError

QR_URL = "https://liteapp.weixin.qq.com/q/7GiQu1?qrcode={n}&bot_type=3"
FEISHU_BOT = "Errand Bot"
FEISHU_DOMAINS = ("feishu", "lark")
TELEGRAM_BOT = "@errand_test_bot"
TELEGRAM_BOT_ID = "7012345678"
PAIRING_CODE = "123456"
DINGTALK_APP_KEY = "dingabc123xyz"
ADMISSIONS = ("asked", "allowed", "refused")
# The kinds the fake makes: the real service's, and the apps the UI connects (Feishu, DingTalk).
FAKE_KINDS = tuple(dict.fromkeys((*KINDS, "feishu", "dingtalk")))


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
        self.check_error: Exception | None = None
        self.admit_gate: asyncio.Event | None = None
        self.admit_error: Exception | None = None
        self.configs: list[tuple[str, dict[str, object]]] = []  # ("add" | "check_app", the config given)
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
        if kind not in FAKE_KINDS:
            raise InvalidInputError("kind", f"must be one of {', '.join(FAKE_KINDS)}, not {kind!r}")
        self._bot(bot_id)
        if kind == "feishu":
            self.configs.append(("add", dict(config or {})))
            app_id, domain = _checked_app(config or {})
            await self._held(self.add_error)
            name = str((config or {}).get("name") or FEISHU_BOT)
            view = ChannelView(
                f"ch_{next(self._ids):012x}",
                bot_id,
                kind,
                app_id,
                "",
                "connected",
                "",
                None,
                name=name,
                domain=domain,
            )
            self._set(view)
            return view
        if kind == "telegram":
            self.configs.append(("add", dict(config or {})))
            checked_token(config)
            await self._held(self.add_error)
            return self.put_telegram(bot_id)
        if kind == "dingtalk":
            self.configs.append(("add", dict(config or {})))
            app = checked_app(config)
            await self._held(self.add_error)
            return self.put_dingtalk(bot_id, app_key=app.app_key)
        await self._held(self.add_error)
        channel_id = f"ch_{next(self._ids):012x}"
        view = ChannelView(channel_id, bot_id, kind, "", "", "connecting", "", _first_code())
        self._set(view)
        return view

    async def check_app(self, kind: str, config: Mapping[str, object]) -> AppCheck:
        self.calls.append(("check_app", kind))
        self.configs.append(("check_app", dict(config)))
        if kind == "dingtalk":
            checked_app(config)
            await self._held(self.check_error)
            return AppCheck("", "")  # DingTalk tells neither the robot's name nor an id of its own
        if kind != "feishu":
            raise InvalidInputError("kind", f"{kind!r} has no app to check")
        _checked_app(config)
        await self._held(self.check_error)
        return AppCheck(str(config.get("name") or FEISHU_BOT), "ou_bot")

    async def admit_group(self, bot_id: str, channel_id: str, group_id: str, *, allowed: bool) -> ChannelView:
        self.calls.append(("admit_group", bot_id, channel_id, group_id, "allowed" if allowed else "refused"))
        view = self._channel(bot_id, channel_id)
        if not any(group.id == group_id for group in view.groups):
            raise NotFoundError("group", group_id)
        if self.admit_gate is not None:
            await self.admit_gate.wait()
        if self.admit_error is not None:
            raise self.admit_error
        view = self._channels[channel_id]  # as it is now, after the wait
        admission = "allowed" if allowed else "refused"
        groups = tuple(replace(g, admission=admission) if g.id == group_id else g for g in view.groups)
        return self._set(replace(view, groups=groups))

    async def log_in_again(self, bot_id: str, channel_id: str) -> ChannelView:
        self.calls.append(("log_in_again", bot_id, channel_id))
        self._channel(bot_id, channel_id)
        await self._held(self.add_error)
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
        name: str = "",
        domain: str = "",
        pairing_code: str = "",
    ) -> ChannelView:
        """A channel as if it had been connected earlier."""
        view = ChannelView(
            f"ch_{next(self._ids):012x}",
            bot_id,
            kind,
            account,
            owner,
            status,
            reason,
            login,
            name=name,
            domain=domain,
            pairing_code=pairing_code,
        )
        self._set(view)
        return view

    def put_feishu(
        self,
        bot_id: str = "bot-1",
        status: str = "connected",
        *,
        app_id: str = "cli_a1b2c3d4e5f6",
        name: str = FEISHU_BOT,
        domain: str = "feishu",
        reason: str = "",
    ) -> ChannelView:
        """A Feishu (or Lark) channel as if its app had been connected earlier."""
        return self.put(
            bot_id, status, account=app_id, owner="", reason=reason, kind="feishu", name=name, domain=domain
        )

    def put_telegram(
        self,
        bot_id: str = "bot-1",
        status: str = "connected",
        *,
        name: str = TELEGRAM_BOT,
        owner: str = "",
        pairing_code: str = PAIRING_CODE,
        reason: str = "",
    ) -> ChannelView:
        """A Telegram channel as if its token had been connected earlier: waiting for its pairing code
        unless an `owner` is given (then it has no code)."""
        return self.put(
            bot_id,
            status,
            account=TELEGRAM_BOT_ID,
            owner=owner,
            reason=reason,
            kind="telegram",
            name=name,
            pairing_code="" if owner else pairing_code,
        )

    def put_dingtalk(
        self,
        bot_id: str = "bot-1",
        status: str = "connected",
        *,
        app_key: str = DINGTALK_APP_KEY,
        reason: str = "",
    ) -> ChannelView:
        """A DingTalk channel as if its app had been connected earlier: no name, the AppKey as account, no
        groups yet (`add_group`)."""
        return self.put(bot_id, status, account=app_key, owner="", reason=reason, kind="dingtalk")

    def add_group(self, channel_id: str, group_id: str, title: str, admission: str = "asked") -> ChannelView:
        """The bot was added to a group (the latest first, as the service lists them), or a group's
        admission is set as it already is."""
        assert admission in ADMISSIONS, admission
        view = self._channels[channel_id]
        assert view.kind == "dingtalk", f"{channel_id} is a {view.kind} channel"
        others = tuple(g for g in view.groups if g.id != group_id)
        return self._set(replace(view, groups=(ChannelGroup(group_id, title, admission), *others)))

    def pair(self, channel_id: str, owner: str = "4242") -> None:
        """Someone sent `/start <code>`: they are the owner now and the code is spent."""
        self._set(replace(self._channels[channel_id], owner=owner, pairing_code=""))

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

    def set_status(self, channel_id: str, status: str, reason: str = "") -> None:
        """Any status, as Feishu's long connection moves (reconnecting, unhealthy, connected)."""
        self._set(replace(self._channels[channel_id], status=status, reason=reason))

    # ---- helpers -----------------------------------------------------------------------------------

    def _progress(self, channel_id: str) -> LoginProgress:
        login = self._channels[channel_id].login
        assert login is not None, f"{channel_id} has no login under way"
        return login

    def _login(self, channel_id: str, **changes: object) -> None:
        login = replace(self._progress(channel_id), **changes)  # type: ignore[arg-type]
        self._set(replace(self._channels[channel_id], login=login))

    def _set(self, view: ChannelView) -> ChannelView:
        self._channels[view.id] = view
        self._announce(view.id)
        return view

    def _announce(self, channel_id: str) -> None:
        for listener in list(self._listeners):
            listener(channel_id)

    async def _held(self, error: Exception | None) -> None:
        if self.add_gate is not None:
            await self.add_gate.wait()
        if error is not None:
            raise error

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


def _checked_app(config: Mapping[str, object]) -> tuple[str, str]:
    """(app id, domain), or the refusal the real service gives a bad field."""
    app_id = str(config.get("appId") or "").strip()
    if not app_id:
        raise InvalidInputError("appId", "is empty")
    if not str(config.get("appSecret") or "").strip():
        raise InvalidInputError("appSecret", "is empty")
    domain = str(config.get("domain") or "")
    if domain not in FEISHU_DOMAINS:
        raise InvalidInputError("domain", f"must be feishu or lark, not {domain!r}")
    return app_id, domain

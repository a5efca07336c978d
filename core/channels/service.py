"""A bot's chat channels as a part of the host: adding one (a QR login), keeping each connected on its own
task on the loop, and removing it (docs/channels.md#channels-of-a-bot).

Each channel runs one connection task: its login while it has none, then its receiver, whose messages go
to the ChannelInbox. At start, every channel with an account and a token in the keyring polls again; one
whose token is gone says `login_expired`. A Feishu channel has no login: the person gives its app's id and
secret, which are checked before anything is stored, and its connection task is the long connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import httpx
from sqlalchemy.orm import Session

from core.bots.secret_store import SecretStore
from core.bus import EventBus
from core.changes import AttentionChanged, ChannelChanged
from core.channels.app_check import AppCheck
from core.channels.channel import SendHeld
from core.channels.dingtalk import sdk as dingtalk_sdk
from core.channels.dingtalk.config import DingTalkApp
from core.channels.dingtalk.config import checked_app as checked_dingtalk_app
from core.channels.dingtalk.config import endpoint as dingtalk_endpoint
from core.channels.dingtalk.config import secret_name as dingtalk_secret_name
from core.channels.dingtalk.openapi import CredentialsRefused as DingTalkRefused
from core.channels.dingtalk.openapi import DingTalkApi, DingTalkError
from core.channels.dingtalk.receiver import DingTalkReceiver
from core.channels.dingtalk.receiver import PressHandler as DingTalkPressHandler
from core.channels.feishu import sdk as feishu_sdk
from core.channels.feishu.apps import FeishuApps
from core.channels.feishu.config import checked_app
from core.channels.feishu.config import secret_name as feishu_secret_name
from core.channels.feishu.receiver import FeishuReceiver, PressHandler
from core.channels.feishu.rest import CredentialsRefused, FeishuError, FeishuRest
from core.channels.inbox import ChannelInbox
from core.channels.status import set_status
from core.channels.telegram.config import base_urls as telegram_urls
from core.channels.telegram.config import checked_token, new_pairing_code, pairing_secret_name
from core.channels.telegram.config import token_secret_name as telegram_token_name
from core.channels.telegram.fault import TelegramFault
from core.channels.telegram.loader import open_api
from core.channels.telegram.receiver import PressHandler as TelegramPressHandler
from core.channels.telegram.receiver import TelegramReceiver
from core.channels.views import ChannelGroup, ChannelView
from core.channels.wechat.ilink import ILinkClient, configured_urls
from core.channels.wechat.login import WeChatLogin, checked_verify_code, token_secret_name
from core.channels.wechat.receiver import WeChatReceiver
from core.clock import Clock
from core.errors import InvalidInputError, NotFoundError, UnavailableError
from core.ids import new_id
from core.store import bots as bot_rows
from core.store import channels as channel_rows
from core.store.channels import ChannelRecord, InboundRecord
from core.store.database import Database
from core.store.errors import NotFoundError as StoreNotFound

if TYPE_CHECKING:
    from core.channels.telegram.api import TelegramApi

log = logging.getLogger(__name__)

KINDS = ("wechat", "feishu", "dingtalk", "telegram")
MAX_ALLOWED = 50
MAX_PEER_ID = 200
FIRST_CODE_TIMEOUT_S = 20.0  # how long adding a channel waits for the platform's first QR code


@dataclass(frozen=True, slots=True)
class AskedGroup:
    """A group the bot was added to that waits for the owner's word (needs-you)."""

    channel_id: str
    bot_id: str
    group_id: str
    title: str
    since: float  # when it last wrote


@dataclass(frozen=True, slots=True)
class ExpiredLogin:
    """A channel whose login is gone: only a new QR scan brings it back."""

    channel_id: str
    bot_id: str
    kind: str
    since: float
    reason: str


@dataclass(frozen=True, slots=True)
class SetAside:
    """A message that came in but failed to reach chat too often: the person decides."""

    inbound_id: int
    channel_id: str
    bot_id: str
    kind: str
    record: InboundRecord


@dataclass
class _Connection:
    client: ILinkClient | None  # WeChat's
    task: asyncio.Task[None] | None = None
    login: WeChatLogin | None = None
    receiver: FeishuReceiver | None = None
    telegram: TelegramApi | None = None  # imported with its first channel: python-telegram-bot costs 0.2 s
    dingtalk: DingTalkReceiver | None = None


class ChannelService:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        secrets: SecretStore,
        inbox: ChannelInbox,
        *,
        environ: Mapping[str, str],
        feishu: FeishuApps | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._feishu = feishu or FeishuApps(secrets, clock, environ)
        self._presses: PressHandler | None = None
        self._telegram_urls = telegram_urls(environ)
        self._telegram_presses: TelegramPressHandler | None = None
        self._dingtalk_endpoint = dingtalk_endpoint(environ)
        self._dingtalk_presses: DingTalkPressHandler | None = None
        self._db = db
        self._bus = bus
        self._clock = clock
        self._secrets = secrets
        self._inbox = inbox
        self._base_url, _cdn = configured_urls(environ)  # the CDN serves media, which is not read yet
        self._transport = transport
        self._connections: dict[str, _Connection] = {}

    # ---- lifecycle ----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Every channel that was logged in polls again."""
        for channel in await self._db.read(channel_rows.all_channels):
            if channel.kind == "feishu":
                self._start_feishu(channel.id)
            elif channel.kind == "telegram":
                self._start_telegram(channel.id)
            elif channel.kind == "dingtalk":
                self._start_dingtalk(channel.id)
            elif channel.account:
                await self._resume(channel)

    async def stop(self) -> None:
        for channel_id in list(self._connections):
            await self._disconnect(channel_id)

    # ---- reads --------------------------------------------------------------------------------------

    async def of_bot(self, bot_id: str) -> list[ChannelView]:
        await self._bot(bot_id)

        def read(s: Session) -> list[tuple[ChannelRecord, list[str], list[ChannelGroup]]]:
            return [(c, _strangers(s, c), _groups(s, c)) for c in channel_rows.channels_of_bot(s, bot_id)]

        return [
            await self._with_code(self._view(c, strangers, groups))
            for c, strangers, groups in await self._db.read(read)
        ]

    async def get(self, bot_id: str, channel_id: str) -> ChannelView:
        channel = await self._channel(bot_id, channel_id)
        strangers, groups = await self._db.read(lambda s: (_strangers(s, channel), _groups(s, channel)))
        return await self._with_code(self._view(channel, strangers, groups))

    async def _with_code(self, view: ChannelView) -> ChannelView:
        """A Telegram channel nobody paired with yet shows its pairing code."""
        if view.kind != "telegram" or view.owner:
            return view
        return replace(view, pairing_code=await self._secrets.get(pairing_secret_name(view.id)) or "")

    async def expired_logins(self) -> list[ExpiredLogin]:
        """Channels that say `login_expired`, for needs-you."""
        return [
            ExpiredLogin(c.id, c.bot_id, c.kind, c.updated_at, c.status_reason)
            for c in await self._db.read(channel_rows.all_channels)
            if c.status == "login_expired"
        ]

    async def set_aside(self) -> list[SetAside]:
        """Messages that failed to reach chat again and again, for needs-you."""

        def read(s: Session) -> list[SetAside]:
            found = []
            for record in channel_rows.set_aside_messages(s):
                channel = channel_rows.get_channel(s, record.channel_id)
                if channel is not None:
                    found.append(SetAside(record.id, channel.id, channel.bot_id, channel.kind, record))
            return found

        return await self._db.read(read)

    async def settle_set_aside(self, inbound_id: int, *, again: bool) -> None:
        """Try a set-aside message again (at the channel's next poll), or put it away."""
        if not await self._db.write(lambda s: channel_rows.settle_set_aside(s, inbound_id, again=again)):
            raise NotFoundError("set-aside message", str(inbound_id))
        self._bus.publish(AttentionChanged())

    async def asked_groups(self) -> list[AskedGroup]:
        """Groups on any channel that wait for the owner's word (needs-you), the longest waiting first."""

        def read(s: Session) -> list[AskedGroup]:
            found = []
            for peer in channel_rows.asked_groups(s):
                channel = channel_rows.get_channel(s, peer.channel_id)
                if channel is not None:
                    found.append(
                        AskedGroup(channel.id, channel.bot_id, peer.peer, peer.title, peer.last_inbound_at)
                    )
            return found

        return await self._db.read(read)

    async def admit_group(self, bot_id: str, channel_id: str, group_id: str, *, allowed: bool) -> ChannelView:
        """The owner's word on a group the bot was added to (docs/channels.md#groups): allowed, what waited
        there is handed on now; refused, it is put away and the bot stays silent there. Either may be
        changed later. NotFoundError for a group the channel was never added to."""
        await self._channel(bot_id, channel_id)
        try:
            held = await self._db.write(
                lambda s: channel_rows.set_admission(s, channel_id, group_id, allowed=allowed)
            )
        except StoreNotFound:
            raise NotFoundError("group", group_id) from None
        log.info(
            "channel %s: group %s %s (%d messages waited)",
            channel_id,
            group_id,
            "allowed" if allowed else "refused",
            held,
        )
        connection = self._connections.get(channel_id)
        if allowed and connection is not None and connection.dingtalk is not None:
            connection.dingtalk.wake()
        self._bus.publish(ChannelChanged(channel_id))
        self._bus.publish(AttentionChanged())
        return await self.get(bot_id, channel_id)

    def is_running(self, channel_id: str) -> bool:
        """Whether the channel has a live connection task (a login or a poll)."""
        connection = self._connections.get(channel_id)
        return connection is not None and connection.task is not None and not connection.task.done()

    # ---- commands -----------------------------------------------------------------------------------

    def answer_presses_with(
        self,
        presses: PressHandler,
        telegram: TelegramPressHandler | None = None,
        dingtalk: DingTalkPressHandler | None = None,
    ) -> None:
        """Who answers a button pressed on a Feishu or DingTalk card or under a Telegram message (all built
        after needs-you)."""
        self._presses = presses
        self._telegram_presses = telegram
        self._dingtalk_presses = dingtalk

    async def check_app(self, kind: str, config: Mapping[str, object]) -> AppCheck:
        """测试连接: the app's credentials open it, and this is its bot. Stores nothing. A DingTalk app
        tells no name or id of its robot: the check answers an empty AppCheck once its token came."""
        if kind == "dingtalk":
            await self._check_dingtalk(checked_dingtalk_app(config))
            return AppCheck("", "")
        if kind != "feishu":
            raise InvalidInputError("kind", f"only feishu and dingtalk apps are checked, not {kind!r}")
        app = checked_app(config)
        rest = await self._feishu.check(app)
        try:
            return await self._bot_of(rest)
        finally:
            await rest.close()

    @staticmethod
    async def _bot_of(rest: FeishuRest) -> AppCheck:
        try:
            await rest.token()
            return await rest.bot_info()
        except CredentialsRefused as exc:
            raise InvalidInputError("appSecret", f"{exc}: check the App ID and App Secret") from exc
        except FeishuError as exc:
            if exc.code is None:
                raise UnavailableError(f"Feishu could not be reached: {exc}") from exc
            raise InvalidInputError("appId", str(exc)) from exc

    async def add(self, bot_id: str, kind: str, config: Mapping[str, object] | None = None) -> ChannelView:
        """A new channel of `kind`: WeChat's QR login started (returns once the first code is there to
        show); a Feishu app checked, then stored with its secret in the keyring and connected."""
        if kind not in KINDS:
            raise InvalidInputError("kind", f"must be one of {', '.join(KINDS)}, not {kind!r}")
        await self._bot(bot_id)
        if kind == "feishu":
            return await self._add_feishu(bot_id, config)
        if kind == "telegram":
            return await self._add_telegram(bot_id, config)
        if kind == "dingtalk":
            return await self._add_dingtalk(bot_id, config)
        channel_id = new_id("ch")
        now = self._clock.time()
        await self._db.write(
            lambda s: channel_rows.insert_channel(s, id=channel_id, bot_id=bot_id, kind=kind, now=now)
        )
        await self._start_login(channel_id)
        return await self.get(bot_id, channel_id)

    async def set_allowed(self, bot_id: str, channel_id: str, peers: object) -> ChannelView:
        """Who besides the owner may use the bot through this channel (platform user ids, as the channel
        lists them under `strangers`). Replaces the list; a bad list changes nothing."""
        await self._channel(bot_id, channel_id)
        allowed = checked_peers(peers)
        now = self._clock.time()
        await self._db.write(lambda s: channel_rows.set_allowed(s, channel_id, allowed, now=now))
        self._bus.publish(ChannelChanged(channel_id))
        return await self.get(bot_id, channel_id)

    async def _add_feishu(self, bot_id: str, config: Mapping[str, object] | None) -> ChannelView:
        app = checked_app(config)
        found = await self.check_app(
            "feishu", {"appId": app.app_id, "appSecret": app.app_secret, "domain": app.domain}
        )
        for other in await self._db.read(channel_rows.all_channels):
            if other.kind == "feishu" and other.account == app.app_id:
                raise InvalidInputError("appId", "this app is connected already; one app serves one bot")
        channel_id = new_id("ch")
        now = self._clock.time()
        await self._secrets.set(feishu_secret_name(channel_id), app.app_secret)

        def store(s: Session) -> None:
            channel_rows.insert_channel(s, id=channel_id, bot_id=bot_id, kind="feishu", now=now)
            channel_rows.set_app(
                s,
                channel_id,
                app_id=app.app_id,
                domain=app.domain,
                name=found.bot_name,
                bot_ref=found.bot_open_id,
                now=now,
            )

        try:
            await self._db.write(store)
        except Exception:
            await self._secrets.delete(feishu_secret_name(channel_id))
            raise
        self._start_feishu(channel_id)
        self._bus.publish(ChannelChanged(channel_id))
        return await self.get(bot_id, channel_id)

    def _start_feishu(self, channel_id: str) -> None:
        connection = _Connection(client=None)
        self._connections[channel_id] = connection
        connection.task = asyncio.get_running_loop().create_task(self._run_feishu(channel_id, connection))

    async def _run_feishu(self, channel_id: str, connection: _Connection) -> None:
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, channel_id))
        if channel is None:
            return
        try:
            app = await self._feishu.app_of(channel)
        except SendHeld:
            await self._set_status(
                channel_id, "error", "the app secret is no longer in the keyring: connect the app again"
            )
            return
        sdk = await feishu_sdk.load()
        connection.receiver = FeishuReceiver(
            self._db,
            self._bus,
            self._clock,
            sdk,
            await self._feishu.rest(channel),
            app,
            self._feishu.base_url(app.domain),
            channel_id=channel_id,
            bot_open_id=channel.bot_ref,
            sink=self._inbox.hand_over,
            presses=self._presses,
        )
        try:
            await connection.receiver.run()
        except Exception:
            log.exception("channel %s: the Feishu connection failed", channel_id)
            await self._set_status(channel_id, "error", "the connection failed; see the log")

    async def _add_telegram(self, bot_id: str, config: Mapping[str, object] | None) -> ChannelView:
        """A Telegram bot by its token, checked with getMe first (nothing is stored when Telegram refuses
        it); the answer carries the one-time pairing code."""
        token = checked_token(config)
        api = await open_api(token, self._telegram_urls)
        try:
            me = await api.me()
        except TelegramFault as fault:
            if fault.token_refused or fault.refused:
                raise InvalidInputError("token", f"{fault}: copy the token from @BotFather again") from fault
            raise UnavailableError(f"Telegram could not be reached: {fault}") from fault
        finally:
            await api.close()
        for other in await self._db.read(channel_rows.all_channels):
            if other.kind == "telegram" and other.account == str(me.id):
                raise InvalidInputError("token", "this bot is connected already; it serves one Errand bot")
        channel_id = new_id("ch")
        now = self._clock.time()
        await self._secrets.set(telegram_token_name(channel_id), token)
        await self._secrets.set(pairing_secret_name(channel_id), new_pairing_code())

        def store(s: Session) -> None:
            channel_rows.insert_channel(s, id=channel_id, bot_id=bot_id, kind="telegram", now=now)
            name = f"@{me.username}" if me.username else me.first_name
            ident = str(me.id)
            channel_rows.set_app(s, channel_id, app_id=ident, domain="", name=name, bot_ref=ident, now=now)

        try:
            await self._db.write(store)
        except Exception:
            await self._secrets.delete(telegram_token_name(channel_id))
            await self._secrets.delete(pairing_secret_name(channel_id))
            raise
        self._start_telegram(channel_id)
        self._bus.publish(ChannelChanged(channel_id))
        return await self.get(bot_id, channel_id)

    async def _check_dingtalk(self, app: DingTalkApp) -> None:
        api = DingTalkApi(app, self._dingtalk_endpoint, self._clock, transport=self._transport)
        try:
            await api.token()
        except DingTalkRefused as exc:
            raise InvalidInputError("appSecret", f"{exc}: check the AppKey and AppSecret") from exc
        except DingTalkError as exc:
            if exc.http_status is None or exc.http_status >= 500:
                raise UnavailableError(f"DingTalk could not be reached: {exc}") from exc
            raise InvalidInputError("appKey", str(exc)) from exc
        finally:
            await api.close()

    async def _add_dingtalk(self, bot_id: str, config: Mapping[str, object] | None) -> ChannelView:
        """A DingTalk app by its AppKey and AppSecret, whose token is fetched first (nothing is stored when
        DingTalk refuses them); then stored, the secret in the keyring, and its stream connected."""
        app = checked_dingtalk_app(config)
        await self._check_dingtalk(app)
        for other in await self._db.read(channel_rows.all_channels):
            if other.kind == "dingtalk" and other.account == app.app_key:
                raise InvalidInputError("appKey", "this app is connected already; one app serves one bot")
        channel_id = new_id("ch")
        now = self._clock.time()
        await self._secrets.set(dingtalk_secret_name(channel_id), app.app_secret)

        def store(s: Session) -> None:
            channel_rows.insert_channel(s, id=channel_id, bot_id=bot_id, kind="dingtalk", now=now)
            # DingTalk tells no robot name; the robot code is what its sends are addressed from.
            channel_rows.set_app(
                s, channel_id, app_id=app.app_key, domain="", name="", bot_ref=app.robot_code, now=now
            )

        try:
            await self._db.write(store)
        except Exception:
            await self._secrets.delete(dingtalk_secret_name(channel_id))
            raise
        self._start_dingtalk(channel_id)
        self._bus.publish(ChannelChanged(channel_id))
        return await self.get(bot_id, channel_id)

    def _start_dingtalk(self, channel_id: str) -> None:
        connection = _Connection(client=None)
        self._connections[channel_id] = connection
        connection.task = asyncio.get_running_loop().create_task(self._run_dingtalk(channel_id, connection))

    async def _run_dingtalk(self, channel_id: str, connection: _Connection) -> None:
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, channel_id))
        if channel is None:
            return
        secret = await self._secrets.get(dingtalk_secret_name(channel_id))
        if not secret:
            reason = "the app secret is no longer in the keyring: connect the app again"
            await self._set_status(channel_id, "error", reason)
            return
        app = DingTalkApp(channel.account, secret, channel.bot_ref or channel.account)
        api = DingTalkApi(app, self._dingtalk_endpoint, self._clock, transport=self._transport)
        try:
            connection.dingtalk = DingTalkReceiver(
                self._db,
                self._bus,
                self._clock,
                await dingtalk_sdk.load(),
                api,
                channel_id=channel_id,
                sink=self._inbox.hand_over,
                presses=self._dingtalk_presses,
            )
            await connection.dingtalk.run()
        except Exception:
            log.exception("channel %s: the DingTalk connection failed", channel_id)
            await self._set_status(channel_id, "error", "the connection failed; see the log")
        finally:
            await asyncio.shield(api.close())

    def dingtalk_receiver(self, channel_id: str) -> DingTalkReceiver | None:
        """A DingTalk channel's receiver, once its connection task made it (tests, the bench)."""
        connection = self._connections.get(channel_id)
        return connection.dingtalk if connection is not None else None

    def _start_telegram(self, channel_id: str) -> None:
        connection = _Connection(client=None)
        self._connections[channel_id] = connection
        connection.task = asyncio.get_running_loop().create_task(self._run_telegram(channel_id, connection))

    async def _run_telegram(self, channel_id: str, connection: _Connection) -> None:
        token = await self._secrets.get(telegram_token_name(channel_id))
        if not token:
            reason = "the bot's token is no longer in the keyring: connect it again"
            await self._set_status(channel_id, "error", reason)
            return
        connection.telegram = await open_api(token, self._telegram_urls)
        receiver = TelegramReceiver(
            self._db,
            self._bus,
            self._clock,
            connection.telegram,
            self._secrets,
            channel_id=channel_id,
            sink=self._inbox.hand_over,
            presses=self._telegram_presses,
        )
        try:
            await receiver.run()
        except Exception:
            log.exception("channel %s: the Telegram connection failed", channel_id)
            await self._set_status(channel_id, "error", "the connection failed; see the log")

    def feishu_receiver(self, channel_id: str) -> FeishuReceiver | None:
        """A Feishu channel's receiver, once its connection task made it (tests, the bench: health reads)."""
        connection = self._connections.get(channel_id)
        return connection.receiver if connection is not None else None

    async def log_in_again(self, bot_id: str, channel_id: str) -> ChannelView:
        """A new QR login for a channel (its login expired, or failed): what polled stops, the scan starts.
        A Feishu or Telegram channel connects again instead."""
        channel = await self._channel(bot_id, channel_id)
        await self._disconnect(channel_id)
        if channel.kind in ("feishu", "telegram", "dingtalk"):
            await self._set_status(channel_id, "connecting", "")
            if channel.kind == "feishu":
                self._start_feishu(channel_id)
            elif channel.kind == "dingtalk":
                self._start_dingtalk(channel_id)
            else:
                self._start_telegram(channel_id)
            return await self.get(bot_id, channel_id)
        await self._set_status(channel_id, "connecting", "")
        await self._start_login(channel_id)
        return await self.get(bot_id, channel_id)

    async def _start_login(self, channel_id: str) -> None:  # WeChat
        """Start the channel's QR login on its connection task; return once the first code is there to
        show (or the login failed at once, or FIRST_CODE_TIMEOUT_S passed)."""
        client = ILinkClient(self._base_url, token="", transport=self._transport)
        connection = _Connection(client)
        self._connections[channel_id] = connection
        login = WeChatLogin(self._db, self._bus, self._clock, client, self._secrets, channel_id=channel_id)
        connection.login = login
        shown = asyncio.Event()

        def first_code(event: object) -> None:
            mine = isinstance(event, ChannelChanged) and event.channel_id == channel_id
            if mine and (login.progress.qrcode_url or login.progress.status == "failed"):
                shown.set()

        unsubscribe = self._bus.subscribe(first_code)
        connection.task = asyncio.get_running_loop().create_task(self._log_in_then_receive(channel_id))
        try:
            await asyncio.wait_for(shown.wait(), FIRST_CODE_TIMEOUT_S)
        except TimeoutError:
            log.warning("channel %s: no QR code within %.0f s", channel_id, FIRST_CODE_TIMEOUT_S)
        finally:
            unsubscribe()
        self._bus.publish(ChannelChanged(channel_id))

    def enter_verify_code(self, channel_id: str, code: str) -> None:
        checked_verify_code(code)
        connection = self._connections.get(channel_id)
        if connection is None or connection.login is None:
            raise NotFoundError("login", channel_id)
        connection.login.enter_verify_code(code)

    async def remove(self, bot_id: str, channel_id: str) -> None:
        """Disconnect the channel and forget it: its stored messages, peers and token go too."""
        await self._channel(bot_id, channel_id)
        await self._disconnect(channel_id)

        # What waited to go out there stays in its conversation on the desktop (the outbox, on the
        # ChannelChanged below, finds no channel for it any more).
        await self._db.write(lambda s: channel_rows.delete_channel(s, channel_id))
        await self._secrets.delete(token_secret_name(channel_id))
        await self._secrets.delete(feishu_secret_name(channel_id))
        await self._secrets.delete(dingtalk_secret_name(channel_id))  # the same entry today; named apart
        await self._secrets.delete(telegram_token_name(channel_id))
        await self._secrets.delete(pairing_secret_name(channel_id))
        await self._feishu.forget(channel_id)
        self._bus.publish(ChannelChanged(channel_id))
        self._bus.publish(AttentionChanged())

    # ---- connections --------------------------------------------------------------------------------

    def _connection(self, channel_id: str, base_url: str, token: str) -> _Connection:
        client = ILinkClient(base_url or self._base_url, token=token, transport=self._transport)
        connection = _Connection(client)
        self._connections[channel_id] = connection
        return connection

    async def _resume(self, channel: ChannelRecord) -> None:
        token = await self._secrets.get(token_secret_name(channel.id))
        if not token:
            await self._set_status(channel.id, "login_expired", "the bot's token is no longer in the keyring")
            return
        connection = self._connection(channel.id, channel.base_url, token)
        connection.task = asyncio.get_running_loop().create_task(self._receive(channel.id))

    async def _log_in_then_receive(self, channel_id: str) -> None:
        connection = self._connections[channel_id]
        assert connection.login is not None and connection.client is not None
        if not await connection.login.run():
            await self._set_status(channel_id, "error", connection.login.progress.reason)
            return
        await self._receive(channel_id)

    async def _receive(self, channel_id: str) -> None:
        connection = self._connections[channel_id]
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, channel_id))
        if channel is None or connection.client is None:
            return
        receiver = WeChatReceiver(
            self._db,
            self._bus,
            self._clock,
            connection.client,
            channel_id=channel_id,
            account=channel.account,
            sink=self._inbox.hand_over,
        )
        try:
            await receiver.run()
        except Exception:
            log.exception("channel %s: the connection failed", channel_id)
            await self._set_status(channel_id, "error", "the connection failed; see the log")

    async def _disconnect(self, channel_id: str) -> None:
        connection = self._connections.pop(channel_id, None)
        if connection is None:
            return
        if connection.task is not None:
            connection.task.cancel()
            await asyncio.gather(connection.task, return_exceptions=True)
        if connection.client is not None:
            await connection.client.close()
        if connection.telegram is not None:
            await connection.telegram.close()

    async def _set_status(self, channel_id: str, status: str, reason: str) -> None:
        await set_status(self._db, self._bus, self._clock, channel_id, status, reason)

    # ---- helpers ------------------------------------------------------------------------------------

    async def _bot(self, bot_id: str) -> None:
        if await self._db.read(lambda s: bot_rows.get_bot(s, bot_id)) is None:
            raise NotFoundError("bot", bot_id)

    async def _channel(self, bot_id: str, channel_id: str) -> ChannelRecord:
        await self._bot(bot_id)
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, channel_id))
        if channel is None or channel.bot_id != bot_id:
            raise NotFoundError("channel", channel_id)
        return channel

    def _view(self, channel: ChannelRecord, strangers: list[str], groups: list[ChannelGroup]) -> ChannelView:
        connection = self._connections.get(channel.id)
        login = connection.login.progress if connection is not None and connection.login is not None else None
        return ChannelView(
            id=channel.id,
            bot_id=channel.bot_id,
            kind=channel.kind,
            account=channel.account,
            owner=channel.owner,
            status=channel.status,
            reason=channel.status_reason,
            login=login,
            allowed=channel.allowed,
            strangers=tuple(strangers),
            name=channel.display_name,
            domain=channel.base_url if channel.kind == "feishu" else "",
            groups=tuple(groups),
        )


def _groups(s: Session, channel: ChannelRecord) -> list[ChannelGroup]:
    return [ChannelGroup(p.peer, p.title, p.admission) for p in channel_rows.groups(s, channel.id)]


def _strangers(s: Session, channel: ChannelRecord) -> list[str]:
    """Who was turned away and is still not allowed."""
    return [p.peer for p in channel_rows.strangers(s, channel.id) if not channel.admits(p.peer)]


def checked_peers(peers: object) -> list[str]:
    """A list of platform user ids: each a non-empty string of at most MAX_PEER_ID characters, at most
    MAX_ALLOWED of them; repeats are kept once."""
    if not isinstance(peers, list):
        raise InvalidInputError("allowed", "must be a list of user ids")
    if len(peers) > MAX_ALLOWED:
        raise InvalidInputError("allowed", f"may name at most {MAX_ALLOWED} people")
    kept: list[str] = []
    for n, peer in enumerate(peers):
        if not isinstance(peer, str) or not peer.strip() or len(peer) > MAX_PEER_ID or not peer.isprintable():
            raise InvalidInputError(
                f"allowed[{n}]",
                f"must be a user id: a non-empty printable string of at most {MAX_PEER_ID} characters",
            )
        if peer.strip() not in kept:
            kept.append(peer.strip())
    return kept

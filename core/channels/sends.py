"""The outbox's way onto the chat platforms (`ChannelSending`): a conversation is found by its peer, and the
message goes through that channel's sender within the platform's limits (docs/channels.md#sending).

It keeps its own client per channel, apart from the channel's long poll, so a send never waits behind a
poll that the server holds for half a minute. The token is read from the keyring for each send, so a new
login is used at once; a client is made again only when the token changed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx
from sqlalchemy.orm import Session

from core.bots.secret_store import SecretStore
from core.bus import EventBus
from core.changes import ChannelChanged
from core.channels.channel import CHANNEL_GONE, Outgoing, SendHeld, SendOutcomeUnknown
from core.channels.dingtalk.config import DingTalkApp
from core.channels.dingtalk.config import endpoint as dingtalk_endpoint
from core.channels.dingtalk.config import secret_name as dingtalk_secret_name
from core.channels.dingtalk.openapi import CredentialsRefused as DingTalkRefused
from core.channels.dingtalk.openapi import DingTalkApi, DingTalkError
from core.channels.dingtalk.sender import DingTalkSender, PendingSends
from core.channels.feishu.apps import FeishuApps
from core.channels.feishu.rest import FeishuError
from core.channels.feishu.sender import FeishuSender
from core.channels.telegram.config import base_urls as telegram_urls
from core.channels.telegram.config import token_secret_name as telegram_token_name
from core.channels.telegram.fault import TelegramFault
from core.channels.telegram.loader import open_api
from core.channels.telegram.sender import TelegramSender
from core.channels.wechat.ilink import ILinkClient, ILinkError, SessionExpired, configured_urls
from core.channels.wechat.login import token_secret_name
from core.channels.wechat.sender import WeChatSender
from core.clock import Clock
from core.store import channels as channel_rows
from core.store.channels import ChannelRecord, PeerRecord
from core.store.database import Database

if TYPE_CHECKING:
    from core.channels.telegram.api import TelegramApi

log = logging.getLogger(__name__)

RETRY_AFTER_WAIT_S = 30.0  # a 429 asking to wait longer goes back to the outbox's retries


@dataclass
class _Client:
    token: str
    client: ILinkClient


class ChannelSends:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        secrets: SecretStore,
        *,
        environ: Mapping[str, str],
        feishu: FeishuApps | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._feishu = feishu or FeishuApps(secrets, clock, environ)
        self._db = db
        self._bus = bus
        self._clock = clock
        self._secrets = secrets
        self._base_url, _cdn = configured_urls(environ)
        self._transport = transport
        self._clients: dict[str, _Client] = {}
        self._telegram_apis: dict[str, tuple[str, TelegramApi]] = {}
        self._dingtalk_apis: dict[str, DingTalkApi] = {}
        self._environ = environ
        self._closed = False

    async def close(self) -> None:
        self._closed = True
        for held in self._clients.values():
            await held.client.close()
        self._clients.clear()
        for _token, api in self._telegram_apis.values():
            await api.close()
        self._telegram_apis.clear()
        for dingtalk in self._dingtalk_apis.values():
            await dingtalk.close()
        self._dingtalk_apis.clear()

    async def send(self, conversation_id: str, text: str, outgoing: Outgoing | None = None) -> str:
        def find(s: Session) -> tuple[PeerRecord | None, ChannelRecord | None]:
            peer = channel_rows.peer_of_conversation(s, conversation_id)
            return peer, channel_rows.get_channel(s, peer.channel_id) if peer else None

        peer, channel = await self._db.read(find)
        if peer is None or channel is None:
            raise SendHeld(CHANNEL_GONE, "this conversation's channel was removed")
        if not channel.sendable:
            raise SendHeld("channel_down", f"the channel is {channel.status}")
        if channel.kind == "feishu":
            return await self._on_feishu(
                channel, lambda sender: sender.send(conversation_id, peer.peer, text, outgoing)
            )
        if channel.kind == "telegram":
            return await self._on_telegram(channel, conversation_id, peer.peer, text, outgoing)
        if channel.kind == "dingtalk":
            sender = await self._dingtalk(channel)
            return await self._dingtalk_call(channel, sender.send(conversation_id, peer, text, outgoing))
        return await self._send(channel, peer.peer, text)

    async def send_to_peer(self, channel_id: str, peer: str, text: str, *, reply_to: str = "") -> str:
        """One message to a peer with no conversation here (telling a stranger the bot is not theirs),
        within the same limits as any send; on Feishu under the message it answers (`reply_to`)."""
        channel = await self._db.read(lambda s: channel_rows.get_channel(s, channel_id))
        if channel is None or not channel.sendable:
            raise SendHeld("channel_down", "the channel is not connected")
        if channel.kind == "telegram":
            api = await self._telegram(channel)
            return await self._telegram_call(
                channel, lambda: api.send(peer, text, reply_to=int(reply_to) if reply_to.isdigit() else 0)
            )
        if channel.kind == "dingtalk":
            found = await self._db.read(lambda s: channel_rows.get_peer(s, channel_id, peer))
            if found is None:
                raise SendHeld("channel_down", "DingTalk never brought a message from there")
            sender = await self._dingtalk(channel)
            key = f"line:{channel_id}:{reply_to or peer}:{text}"
            return await self._dingtalk_call(channel, sender.send_line(found, text, key=key))
        if channel.kind == "feishu":
            key = f"line:{channel_id}:{reply_to or peer}:{text}"
            return await self._on_feishu(
                channel, lambda sender: sender.send_line(peer, text, key=key, reply_to=reply_to)
            )
        return await self._send(channel, peer, text)

    async def _on_feishu(self, channel: ChannelRecord, send: Callable[[FeishuSender], Awaitable[str]]) -> str:
        if self._closed:
            raise SendHeld("channel_down", "Errand is stopping")
        sender = FeishuSender(self._db, await self._feishu.rest(channel))
        try:
            return await send(sender)
        except FeishuError as exc:
            # With its uuid a send that may have gone is sent once even when tried again: a plain
            # failure, retried with the outbox's backoff (rate limits too), never `unsure`.
            log.warning("feishu channel %s: a send failed: %s", channel.id, exc)
            raise

    async def _on_telegram(
        self, channel: ChannelRecord, conversation_id: str, chat_id: str, text: str, outgoing: Outgoing | None
    ) -> str:
        sender = TelegramSender(self._db, await self._telegram(channel))
        return await self._telegram_call(
            channel, lambda: sender.send(conversation_id, chat_id, text, outgoing)
        )

    async def _telegram_call(self, channel: ChannelRecord, call: Callable[[], Awaitable[Any]]) -> str:
        try:
            try:
                return str(await call())
            except TelegramFault as fault:
                if not 0 < fault.retry_after <= RETRY_AFTER_WAIT_S:
                    raise
                # Telegram said how long to wait: waited here (this conversation's sends queue behind it),
                # instead of the outbox's own backoff, which may come back too soon.
                log.info(
                    "telegram channel %s: waiting %.0f s as Telegram asked", channel.id, fault.retry_after
                )
                await self._clock.sleep(fault.retry_after)
                return str(await call())
        except TelegramFault as fault:
            if fault.sent:  # Telegram has no idempotency key: it may be there, so never sent blindly again
                raise SendOutcomeUnknown(str(fault)) from fault
            if fault.token_refused:
                raise SendHeld("channel_down", "Telegram refused the bot's token") from fault
            raise

    async def _dingtalk(self, channel: ChannelRecord) -> DingTalkSender:
        if self._closed:
            raise SendHeld("channel_down", "Errand is stopping")
        secret = await self._secrets.get(dingtalk_secret_name(channel.id))
        if not secret:
            raise SendHeld("channel_down", "the app secret is not in the keyring")
        app = DingTalkApp(channel.account, secret, channel.bot_ref or channel.account)
        api = self._dingtalk_apis.get(channel.id)
        if api is not None and api.app != app:
            await api.close()
            api = None
        if api is None:
            api = DingTalkApi(app, dingtalk_endpoint(self._environ), self._clock, transport=self._transport)
            self._dingtalk_apis[channel.id] = api
        pending = PendingSends(self._db, self._clock, channel.id)
        return DingTalkSender(self._db, self._clock, api, pending=pending)

    async def _dingtalk_call(self, channel: ChannelRecord, call: Awaitable[str]) -> str:
        try:
            return await call
        except DingTalkError as exc:
            if isinstance(exc, DingTalkRefused):
                raise SendHeld("channel_down", "DingTalk refused the app's credentials") from exc
            # Throttled, refused, unconfirmed: a plain failure, retried with the outbox's backoff and shown
            # in needs-you after three (a lost answer already became SendOutcomeUnknown).
            log.warning("dingtalk channel %s: a send failed: %s", channel.id, exc)
            raise

    async def _telegram(self, channel: ChannelRecord) -> TelegramApi:
        if self._closed:
            raise SendHeld("channel_down", "Errand is stopping")
        token = await self._secrets.get(telegram_token_name(channel.id))
        if not token:
            raise SendHeld("channel_down", "the bot's token is not in the keyring")
        held = self._telegram_apis.get(channel.id)
        if held is not None and held[0] == token:
            return held[1]
        if held is not None:
            await held[1].close()
        api = await open_api(token, telegram_urls(self._environ))
        self._telegram_apis[channel.id] = (token, api)
        return api

    async def _send(self, channel: ChannelRecord, peer: str, text: str) -> str:
        token = await self._secrets.get(token_secret_name(channel.id))
        if not token:
            raise SendHeld("channel_down", "the channel's login is not in the keyring")
        client = await self._client(channel, token)
        try:
            return await WeChatSender(self._db, self._clock, client, channel_id=channel.id).send(peer, text)
        except SessionExpired as exc:
            await self._expired(channel.id, str(exc))
            raise SendHeld("channel_down", "the WeChat login expired") from exc
        except ILinkError as exc:
            if exc.outcome_unknown:
                raise SendOutcomeUnknown(str(exc)) from exc
            raise

    async def _client(self, channel: ChannelRecord, token: str) -> ILinkClient:
        if self._closed:  # Errand is stopping: it goes at the next start
            raise SendHeld("channel_down", "Errand is stopping")
        held = self._clients.get(channel.id)
        if held is not None and held.token == token:
            return held.client
        if held is not None:
            await held.client.close()
        client = ILinkClient(channel.base_url or self._base_url, token=token, transport=self._transport)
        self._clients[channel.id] = _Client(token, client)
        return client

    async def _expired(self, channel_id: str, reason: str) -> None:
        now = self._clock.time()
        log.warning("channel %s: the login expired while sending (%s)", channel_id, reason)

        def write(s: Session) -> None:
            # Only a connected channel: one reconnecting or signing in again has its own task, which
            # says so itself, and a new login's status must not be overwritten by an old token's refusal.
            found = channel_rows.get_channel(s, channel_id)
            if found is not None and found.status == "connected":
                channel_rows.set_status(s, channel_id, "login_expired", reason=reason, now=now)

        await self._db.write(write)
        self._bus.publish(ChannelChanged(channel_id))

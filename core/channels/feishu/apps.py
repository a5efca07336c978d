"""The REST client of each Feishu channel, shared by its connection, its sends and its card updates, so one
tenant token serves them all. The secret is read from the keyring when a client is made, and a client is
made again when the secret changed (the person connected the app anew)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from core.bots.secret_store import SecretStore
from core.channels.channel import SendHeld
from core.channels.feishu import sdk
from core.channels.feishu.config import FeishuApp, base_url, secret_name
from core.channels.feishu.rest import FeishuRest
from core.clock import Clock
from core.store.channels import ChannelRecord


@dataclass
class _Held:
    secret: str
    rest: FeishuRest


class FeishuApps:
    def __init__(self, secrets: SecretStore, clock: Clock, environ: Mapping[str, str]) -> None:
        self._secrets = secrets
        self._clock = clock
        self._environ = environ
        self._held: dict[str, _Held] = {}

    def base_url(self, domain: str) -> str:
        return base_url(domain, self._environ)

    async def app_of(self, channel: ChannelRecord) -> FeishuApp:
        """The channel's app with its secret; SendHeld when the secret left the keyring."""
        secret = await self._secrets.get(secret_name(channel.id))
        if not secret:
            raise SendHeld("channel_down", "the Feishu app's secret is no longer in the keyring")
        return FeishuApp(channel.account, secret, channel.base_url or "feishu")

    async def rest(self, channel: ChannelRecord) -> FeishuRest:
        app = await self.app_of(channel)
        held = self._held.get(channel.id)
        if held is not None and held.secret == app.app_secret:
            return held.rest
        if held is not None:
            await held.rest.close()
        rest = FeishuRest(await sdk.load(), app, self.base_url(app.domain), self._clock)
        self._held[channel.id] = _Held(app.app_secret, rest)
        return rest

    async def check(self, app: FeishuApp) -> FeishuRest:
        """A client for an app not stored yet (测试连接, connecting)."""
        return FeishuRest(await sdk.load(), app, self.base_url(app.domain), self._clock)

    async def forget(self, channel_id: str) -> None:
        held = self._held.pop(channel_id, None)
        if held is not None:
            await held.rest.close()

    async def close(self) -> None:
        for channel_id in list(self._held):
            await self.forget(channel_id)

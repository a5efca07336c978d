"""Connecting a bot to WeChat by QR code (docs/channels.md#login).

The window shows `progress.qrcode_url` as a QR image and follows `progress.status`: `wait` (show the code),
`scanned` (confirm on the phone), `need_verify_code` (ask for the digits the phone shows, then
`enter_verify_code`), `confirmed`, or `failed` with a reason. An expired code is replaced, three codes in
all. On success the bot token goes to the OS keyring (never the database or a log) and the channel keeps
the account, the WeChat user who scanned (its owner) and the account's API base URL.
"""

from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import replace
from urllib.parse import urlsplit

from sqlalchemy.orm import Session

from core.bots.secret_store import SecretStore, SecretStoreUnavailableError
from core.bus import EventBus
from core.changes import ChannelChanged
from core.channels.views import MAX_CODES, LoginProgress
from core.channels.wechat.ilink import ILinkClient, ILinkError, QrState
from core.clock import Clock
from core.errors import InvalidInputError
from core.store import channels as channel_rows
from core.store.database import Database

log = logging.getLogger(__name__)

CODE_LIFETIME_S = 480.0  # how long one code is polled before a new one is fetched
POLL_GAP_S = 1.0
_VERIFY_CODE = re.compile(r"\d{4,8}")


def token_secret_name(channel_id: str) -> str:
    """The keyring entry holding a channel's bot token."""
    return f"channel:{channel_id}:token"


def checked_verify_code(code: str) -> str:
    """The digits of a verify code, or InvalidInputError("code", ...)."""
    digits = code.strip()
    if not _VERIFY_CODE.fullmatch(digits):
        raise InvalidInputError("code", "must be the 4 to 8 digits your phone shows")
    return digits


class WeChatLogin:
    def __init__(
        self,
        db: Database,
        bus: EventBus,
        clock: Clock,
        client: ILinkClient,
        secrets: SecretStore,
        *,
        channel_id: str,
        poll_gap_s: float = POLL_GAP_S,
    ) -> None:
        self._db = db
        self._bus = bus
        self._clock = clock
        self._client = client
        self._secrets = secrets
        self._channel_id = channel_id
        self._poll_gap_s = poll_gap_s
        self._verify_code = ""
        self._code_given = asyncio.Event()
        self.progress = LoginProgress("wait")

    def enter_verify_code(self, code: str) -> None:
        """The digits the phone shows after a scan, when the platform asks for them."""
        self._verify_code = checked_verify_code(code)
        self._code_given.set()

    async def run(self) -> bool:
        """Walk the login to its end: True once the account is stored, False when it failed (the reason is
        in `progress`)."""
        for _ in range(MAX_CODES):
            try:
                qr = await self._client.qr_code()
            except ILinkError as exc:
                return await self._failed(f"WeChat gave no QR code: {exc}")
            self._show(LoginProgress("wait", qr.content, self.progress.codes + 1))
            outcome = await self._follow(qr.qrcode)
            if outcome is not None:
                return outcome
        return await self._failed(f"the QR code expired {MAX_CODES} times; start again to get a new one")

    async def _follow(self, qrcode: str) -> bool | None:
        """Poll one code to its end: True or False when the login ended, None when the code expired."""
        base_url = ""
        started = self._clock.monotonic()
        while self._clock.monotonic() - started < CODE_LIFETIME_S:
            try:
                state = await self._client.qr_status(qrcode, self._verify_code, base_url)
            except ILinkError as exc:
                return await self._failed(f"WeChat stopped answering the login: {exc}")
            if state.status in ("confirmed", "binded_redirect"):
                return await self._confirmed(state)
            if state.status == "expired":
                return None
            if state.status == "verify_code_blocked":
                return await self._failed("too many wrong verify codes; start again")
            if state.status == "scaned_but_redirect" and state.redirect_host:
                scheme = urlsplit(base_url or self._client.base_url).scheme or "https"
                base_url = f"{scheme}://{state.redirect_host}"
            if state.status == "need_verifycode":
                self._show(replace(self.progress, status="need_verify_code"))
                self._code_given.clear()
                await self._code_given.wait()
                continue
            if state.status in ("scaned", "scaned_but_redirect"):
                self._show(replace(self.progress, status="scanned"))
            await self._clock.sleep(self._poll_gap_s)
        return None

    async def _confirmed(self, state: QrState) -> bool:
        if not state.bot_token or not state.account_id:
            return await self._failed("WeChat confirmed the login without a bot token")
        try:
            await self._secrets.set(token_secret_name(self._channel_id), state.bot_token)
        except SecretStoreUnavailableError as exc:
            return await self._failed(str(exc))
        now = self._clock.time()

        def store(s: Session) -> None:
            channel_rows.set_account(
                s,
                self._channel_id,
                account=state.account_id,
                owner=state.owner_id,
                base_url=state.base_url,
                now=now,
            )
            channel_rows.set_status(s, self._channel_id, "connecting", now=now)

        await self._db.write(store)
        self._client.token = state.bot_token
        if state.base_url:
            self._client.base_url = state.base_url.rstrip("/")
        log.info("wechat channel %s: logged in as %s", self._channel_id, state.account_id)
        self._show(replace(self.progress, status="confirmed"))
        return True

    async def _failed(self, reason: str) -> bool:
        log.warning("wechat channel %s: login failed: %s", self._channel_id, reason)
        self._show(replace(self.progress, status="failed", reason=reason))
        return False

    def _show(self, progress: LoginProgress) -> None:
        self.progress = progress
        self._bus.publish(ChannelChanged(self._channel_id))

"""Feishu's REST calls, through lark-oapi's async request methods: the tenant token, the bot's own identity,
sending, replying, updating a card, reading a chat's history and fetching an attachment.

Every answer carries `code`, and only 0 is success (docs/channels.md#feishu). We fetch and cache the tenant
token ourselves (`enable_set_token`): the SDK's own cache is process-wide, keyed by app id, and fetched with
a blocking call on whatever thread asks. The SDK's request builders make each request and its own helpers
its URL and headers, but it goes out on one long-lived httpx client per app: the SDK's async path builds a
new client for every call (some 25 ms on the loop, and a new TLS handshake each time). It says what went
wrong and decides nothing: holding, retrying and backing off belong to the outbox and the connection.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx

from core.agent.http_warmup import shared_ssl_context
from core.channels.app_check import AppCheck
from core.channels.feishu.config import FeishuApp
from core.channels.feishu.sdk import Sdk
from core.clock import Clock

log = logging.getLogger(__name__)

TOKEN_EARLY_S = 600.0  # a token is renewed this long before Feishu says it expires
REQUEST_TIMEOUT_S = 15.0
MAX_ATTACHMENT_BYTES = 50 * 1024 * 1024
# Codes that mean the token itself was refused: fetch a new one and try once more.
TOKEN_REFUSED = frozenset({99991661, 99991663, 99991668})
RATE_LIMITED = frozenset({230020, 99991400})
NO_PERMISSION = frozenset({99991672, 99991679, 230027})
# The app id or secret is wrong (the token route's own codes).
CREDENTIALS_REFUSED = frozenset({10003, 10014, 99991543})


class FeishuError(Exception):
    """Feishu answered with an error, an answer we cannot read, or not at all."""

    def __init__(
        self, message: str, *, code: int | None = None, http_status: int | None = None, sent: bool = False
    ) -> None:
        super().__init__(message)
        self.code = code
        self.http_status = http_status
        # The request may have reached Feishu (no answer came back): a send may have gone. With its uuid a
        # second try within the hour is still sent once.
        self.sent = sent

    @property
    def rate_limited(self) -> bool:
        return self.code in RATE_LIMITED or self.http_status == 429

    @property
    def no_permission(self) -> bool:
        return self.code in NO_PERMISSION


class CredentialsRefused(FeishuError):
    """The app id and secret do not open this app: the person must correct them."""


@dataclass(frozen=True, slots=True)
class SentMessage:
    message_id: str
    root_id: str = ""
    thread_id: str = ""


@dataclass(frozen=True, slots=True)
class HistoryPage:
    items: list[dict[str, Any]] = field(default_factory=list)
    has_more: bool = False
    page_token: str = ""


class FeishuRest:
    def __init__(self, sdk: Sdk, app: FeishuApp, base_url: str, clock: Clock) -> None:
        self._sdk = sdk
        self._app = app
        self._clock = clock
        lark = sdk.lark
        self._client = (
            lark.Client.builder()
            .app_id(app.app_id)
            .app_secret(app.app_secret)
            .domain(base_url)
            .enable_set_token(True)
            .timeout(REQUEST_TIMEOUT_S)
            .log_level(lark.LogLevel.WARNING)
            .build()
        )
        self._token = ""
        self._token_until = 0.0
        self._http: httpx.AsyncClient | None = None

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    # ---- identity -----------------------------------------------------------------------------------

    async def token(self) -> str:
        """The tenant access token, fetched again 10 minutes before it expires. CredentialsRefused when
        the app id or secret is wrong."""
        if self._token and self._clock.time() < self._token_until:
            return self._token
        auth = self._sdk.auth
        body = (
            auth.InternalTenantAccessTokenRequestBody.builder()
            .app_id(self._app.app_id)
            .app_secret(self._app.app_secret)
            .build()
        )
        request = auth.InternalTenantAccessTokenRequest.builder().request_body(body).build()
        raw = await self._raw(request, None, "token")
        if raw.get("code") in CREDENTIALS_REFUSED:
            raise CredentialsRefused(
                f"Feishu refused the app id and secret ({raw.get('code')}: {raw.get('msg')})",
                code=raw.get("code"),
            )
        _check(raw, "token")
        token = raw.get("tenant_access_token")
        expire = raw.get("expire")
        if not isinstance(token, str) or not token or not isinstance(expire, int | float):
            raise FeishuError("Feishu's token answer has no tenant_access_token")
        self._token = token
        self._token_until = self._clock.time() + max(60.0, float(expire) - TOKEN_EARLY_S)
        return token

    async def bot_info(self) -> AppCheck:
        """The bot this app is: its name and open_id (how an @-mention of it is recognised)."""
        lark = self._sdk.lark
        request = (
            lark.BaseRequest.builder()
            .http_method(lark.HttpMethod.GET)
            .uri("/open-apis/bot/v3/info")
            .token_types({lark.AccessTokenType.TENANT})
            .build()
        )
        raw = await self._authed(request, "bot info")
        bot = raw.get("bot")
        if not isinstance(bot, dict) or not isinstance(bot.get("open_id"), str) or not bot["open_id"]:
            raise FeishuError("Feishu's bot info has no open_id: is the app's bot capability on?")
        return AppCheck(str(bot.get("app_name") or ""), bot["open_id"])

    # ---- messages -----------------------------------------------------------------------------------

    async def create(self, chat_id: str, msg_type: str, content: str, *, uuid: str) -> SentMessage:
        im = self._sdk.im
        body = (
            im.CreateMessageRequestBody.builder()
            .receive_id(chat_id)
            .msg_type(msg_type)
            .content(content)
            .uuid(uuid)
            .build()
        )
        request = im.CreateMessageRequest.builder().receive_id_type("chat_id").request_body(body).build()
        raw = await self._authed(request, "send", sending=True)
        return _sent(raw)

    async def reply(
        self, message_id: str, msg_type: str, content: str, *, uuid: str, in_thread: bool = False
    ) -> SentMessage:
        im = self._sdk.im
        body = (
            im.ReplyMessageRequestBody.builder()
            .msg_type(msg_type)
            .content(content)
            .reply_in_thread(in_thread)
            .uuid(uuid)
            .build()
        )
        request = im.ReplyMessageRequest.builder().message_id(message_id).request_body(body).build()
        raw = await self._authed(request, "reply", sending=True)
        return _sent(raw)

    async def patch(self, message_id: str, content: str) -> None:
        """A card we sent, changed for everyone who sees it (it must have been sent with update_multi)."""
        im = self._sdk.im
        body = im.PatchMessageRequestBody.builder().content(content).build()
        request = im.PatchMessageRequest.builder().message_id(message_id).request_body(body).build()
        await self._authed(request, "card update")

    async def history(
        self, chat_id: str, *, start_s: int, end_s: int, page_token: str = "", newest_first: bool = False
    ) -> HistoryPage:
        """One page (at most 50) of a chat's messages between two times in seconds, oldest first (or newest
        first)."""
        im = self._sdk.im
        builder = (
            im.ListMessageRequest.builder()
            .container_id_type("chat")
            .container_id(chat_id)
            .start_time(str(start_s))
            .end_time(str(end_s))
            .sort_type("ByCreateTimeDesc" if newest_first else "ByCreateTimeAsc")
            .page_size(50)
        )
        if page_token:
            builder = builder.page_token(page_token)
        request = builder.build()
        raw = await self._authed(request, "history")
        data = raw.get("data") or {}
        items = data.get("items") if isinstance(data, dict) else None
        return HistoryPage(
            items=[i for i in items or [] if isinstance(i, dict)],
            has_more=bool(data.get("has_more")) if isinstance(data, dict) else False,
            page_token=str(data.get("page_token") or "") if isinstance(data, dict) else "",
        )

    async def resource(self, message_id: str, file_key: str, kind: str) -> bytes:
        """An image or file a message carries (`kind` "image" or "file"), at most 50 MB."""
        im = self._sdk.im
        request = (
            im.GetMessageResourceRequest.builder()
            .message_id(message_id)
            .file_key(file_key)
            .type(kind)
            .build()
        )
        try:
            response = await self._execute(request, await self._option())
        except httpx.HTTPError as exc:
            raise FeishuError(f"could not fetch the {kind}: {exc!r}") from exc
        if not 200 <= response.status_code < 300 or response.headers.get("content-type", "").startswith(
            "application/json"
        ):
            try:
                error = response.json()
            except ValueError:
                error = {}
            code = error.get("code") if isinstance(error, dict) else None
            raise FeishuError(
                f"Feishu refused the {kind} ({code}: {error.get('msg') if isinstance(error, dict) else ''})",
                code=code if isinstance(code, int) else None,
                http_status=response.status_code,
            )
        if len(response.content) > MAX_ATTACHMENT_BYTES:
            raise FeishuError(f"the {kind} is larger than 50 MB")
        return response.content

    # ---- plumbing -----------------------------------------------------------------------------------

    async def _option(self) -> Any:
        return self._sdk.lark.RequestOption.builder().tenant_access_token(await self.token()).build()

    async def _authed(self, request: Any, what: str, *, sending: bool = False) -> dict[str, Any]:
        """`request` with the tenant token; once more with a fresh token when Feishu refused it."""
        for attempt in range(2):
            raw = await self._raw(request, await self._option(), what, sending=sending)
            if raw.get("code") in TOKEN_REFUSED and attempt == 0:
                log.info("feishu app %s: the tenant token was refused; fetching a new one", self._app.app_id)
                self._token, self._token_until = "", 0.0
                continue
            _check(raw, what)
            return raw
        raise AssertionError("unreachable")

    async def _execute(self, request: Any, option: Any) -> httpx.Response:
        """One request as the SDK would make it (its URL, headers and body), on our client."""
        sdk = self._sdk
        config = self._client._config
        if option is None:
            option = sdk.lark.RequestOption()
        sdk.token.verify(config, request, option)  # puts the token we set where the request wants it
        url = sdk.transport._build_url(config.domain, request.uri, request.paths)
        headers = sdk.transport._build_header(request, option, config)
        body = None if request.body is None else json.loads(sdk.json.marshal(request.body))
        if self._http is None:
            self._http = httpx.AsyncClient(
                verify=shared_ssl_context(), timeout=REQUEST_TIMEOUT_S, trust_env=False
            )
        return await self._http.request(
            str(request.http_method.name), url, headers=headers, params=request.queries, json=body
        )

    async def _raw(self, request: Any, option: Any, what: str, *, sending: bool = False) -> dict[str, Any]:
        """The answer as JSON; FeishuError when there is none we can read."""
        try:
            response = await self._execute(request, option)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise FeishuError(f"could not reach Feishu for the {what}: {exc!r}") from exc
        except (httpx.HTTPError, OSError) as exc:
            # The request went out and no answer came: it may have been carried out.
            raise FeishuError(f"no answer from Feishu for the {what}: {exc!r}", sent=sending) from exc
        status = response.status_code
        try:
            decoded = response.json() if response.content else {}
        except ValueError:
            decoded = None
        if not isinstance(decoded, dict):
            raise FeishuError(
                f"Feishu's answer to the {what} is not JSON (HTTP {status})",
                http_status=status,
                sent=sending and status >= 500,
            )
        if status >= 500 and "code" not in decoded:
            raise FeishuError(f"Feishu failed the {what} (HTTP {status})", http_status=status, sent=sending)
        decoded.setdefault("_http_status", status)
        return decoded


def _check(raw: dict[str, Any], what: str) -> None:
    code = raw.get("code")
    if code == 0:
        return
    status = raw.get("_http_status")
    raise FeishuError(
        f"Feishu refused the {what} ({code}: {raw.get('msg') or 'no reason given'})",
        code=code if isinstance(code, int) else None,
        http_status=status if isinstance(status, int) else None,
    )


def _sent(raw: dict[str, Any]) -> SentMessage:
    data = raw.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("message_id"), str) or not data["message_id"]:
        raise FeishuError("Feishu accepted the message but its answer has no message_id", sent=True)
    return SentMessage(data["message_id"], str(data.get("root_id") or ""), str(data.get("thread_id") or ""))

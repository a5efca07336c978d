"""An HTTP client of WeChat's personal-bot protocol (iLink): QR login, the `getupdates` long poll and
`sendmessage`, over httpx. It says plainly what went wrong and decides nothing: holding, retrying and backing
off belong to the channel that uses it.

HTTP 200 does not mean success on iLink: every answer carries `ret` (and newer ones `errcode`), and only 0
is success. `-14` is an expired session (the person must scan again); `-2` on a send means the peer must
write first (the 24 h window or the sends-per-message budget), so the send is held, never retried in a loop.
"""

from __future__ import annotations

import base64
import json
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from core.agent.http_warmup import shared_ssl_context
from core.channels.wechat.frames import FrameError, Updates, parse_updates, text_message

DEFAULT_BASE_URL = "https://ilinkai.weixin.qq.com"
DEFAULT_CDN_URL = "https://novac2c.cdn.weixin.qq.com/c2c"
# The protocol version we speak, as the official plugin announces it; the server reads these.
CHANNEL_VERSION = "2.4.8"
BOT_AGENT = "OpenClaw"
POLL_TIMEOUT_S = 35.0  # the server holds getupdates up to this long unless it says otherwise
QR_POLL_TIMEOUT_S = 35.0
REQUEST_TIMEOUT_S = 15.0
SESSION_EXPIRED = -14
SEND_REFUSED = -2
GATEWAY_ERRORS = frozenset({502, 503, 504})
GATEWAY_TIMEOUT = 504  # the platform behind the gateway may have done it

QrStatus = Literal[
    "wait",
    "scaned",
    "need_verifycode",
    "verify_code_blocked",
    "expired",
    "scaned_but_redirect",
    "binded_redirect",
    "confirmed",
]
_QR_STATUSES: frozenset[str] = frozenset(QrStatus.__args__)  # type: ignore[attr-defined]


class ILinkError(Exception):
    """The platform answered with an error, an answer we cannot read, or not at all."""

    def __init__(
        self,
        message: str,
        *,
        ret: int | None = None,
        http_status: int | None = None,
        outcome_unknown: bool = False,
    ) -> None:
        super().__init__(message)
        self.ret = ret
        self.http_status = http_status
        # The request may have reached the platform and been carried out (no answer, or one we cannot
        # read): a send must not be tried again blindly.
        self.outcome_unknown = outcome_unknown


class SessionExpired(ILinkError):
    """`-14`: the bot's login is no longer valid; the person must scan a new QR code."""


class SendRefused(ILinkError):
    """`-2` on a send: the peer must write first. Hold the message until they do; never retry in a loop."""


@dataclass(frozen=True, slots=True)
class QrCode:
    qrcode: str  # what to poll the status with
    content: str  # what the QR image encodes (a URL the phone opens)


@dataclass(frozen=True, slots=True)
class QrState:
    status: QrStatus
    bot_token: str = ""
    account_id: str = ""  # ilink_bot_id
    base_url: str = ""  # where this account's API lives from now on ('' = the default)
    owner_id: str = ""  # ilink_user_id: the WeChat user who scanned
    redirect_host: str = ""


def configured_urls(environ: Mapping[str, str]) -> tuple[str, str]:
    """(API base URL, CDN URL): `ERRAND_WECHAT_BASE_URL` and `ERRAND_WECHAT_CDN_URL` when set (tests and
    scripts point them at a server on 127.0.0.1), else WeChat's own."""
    base = environ.get("ERRAND_WECHAT_BASE_URL", "").strip() or DEFAULT_BASE_URL
    cdn = environ.get("ERRAND_WECHAT_CDN_URL", "").strip() or DEFAULT_CDN_URL
    return base.rstrip("/"), cdn.rstrip("/")


def client_version(version: str = CHANNEL_VERSION) -> str:
    """`iLink-App-ClientVersion`: major << 16 | minor << 8 | patch, in decimal."""
    major, minor, patch = (int(part) for part in version.split("."))
    return str(major << 16 | minor << 8 | patch)


def _uin() -> str:
    """`X-WECHAT-UIN`: base64 of a random uint32 in decimal, fresh for each request."""
    return base64.b64encode(str(secrets.randbelow(2**32)).encode()).decode()


class ILinkClient:
    """One account's connection to iLink. `token` is empty until login; `transport` lets tests and
    benchmarks use an in-process transport instead of the network."""

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        token: str = "",
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        # The shared TLS context: building one per client would hold the loop for 50-100 ms each time.
        self._http = httpx.AsyncClient(
            transport=transport, timeout=REQUEST_TIMEOUT_S, verify=shared_ssl_context()
        )

    async def close(self) -> None:
        await self._http.aclose()

    # ---- login --------------------------------------------------------------------------------------

    async def qr_code(self, old_tokens: list[str] | None = None) -> QrCode:
        body = await self._call(
            "POST",
            "/ilink/bot/get_bot_qrcode",
            params={"bot_type": "3"},
            body={"local_token_list": (old_tokens or [])[:10]},
            signed=False,
        )
        qrcode, content = body.get("qrcode"), body.get("qrcode_img_content")
        if not isinstance(qrcode, str) or not qrcode or not isinstance(content, str) or not content:
            raise ILinkError("get_bot_qrcode gave no qrcode and qrcode_img_content")
        return QrCode(qrcode, content)

    async def qr_status(self, qrcode: str, verify_code: str = "", base_url: str = "") -> QrState:
        """The QR code's state now. The server holds the request while nothing changes; a time-out or a
        gateway error is `wait`, as the phone has simply not acted yet."""
        params = {"qrcode": qrcode, **({"verify_code": verify_code} if verify_code else {})}
        try:
            body = await self._call(
                "GET",
                "/ilink/bot/get_qrcode_status",
                params=params,
                signed=False,
                timeout=QR_POLL_TIMEOUT_S + 5.0,
                base_url=base_url,
            )
        except _TimedOut:
            return QrState("wait")
        except ILinkError as exc:
            if exc.http_status in GATEWAY_ERRORS:
                return QrState("wait")
            raise
        status = body.get("status")
        if status not in _QR_STATUSES:
            raise ILinkError(f"get_qrcode_status gave an unknown status {status!r}")
        return QrState(
            status=status,
            bot_token=_text(body, "bot_token"),
            account_id=_text(body, "ilink_bot_id"),
            base_url=_text(body, "baseurl"),
            owner_id=_text(body, "ilink_user_id"),
            redirect_host=_text(body, "redirect_host"),
        )

    # ---- messages -----------------------------------------------------------------------------------

    async def get_updates(self, cursor: str, timeout_s: float = POLL_TIMEOUT_S) -> Updates:
        """Messages since `cursor`, waiting up to `timeout_s` for one. Our own time-out is an empty
        answer with the same cursor, as the plugin treats it."""
        try:
            body = await self._call(
                "POST",
                "/ilink/bot/getupdates",
                body={"get_updates_buf": cursor},
                timeout=timeout_s + min(5.0, timeout_s),
            )
        except _TimedOut:
            return Updates(messages=(), refused=(), cursor="", poll_timeout_ms=None)
        try:
            return parse_updates(body)
        except FrameError as exc:
            raise ILinkError(f"getupdates: {exc}") from exc

    async def send_text(self, to_user: str, context_token: str, text: str) -> str:
        """Send one text message; the platform's id of it ('' when it gives none), which a quote of it
        carries back. SendRefused when the peer must write first."""
        msg = text_message(to_user, f"errand-{uuid.uuid4().hex}", context_token, text)
        body = await self._call("POST", "/ilink/bot/sendmessage", body={"msg": msg})
        return _text(body, "message_id")

    # ---- the wire -----------------------------------------------------------------------------------

    def _headers(self, signed: bool) -> dict[str, str]:
        headers = {
            "Content-Type": "application/json",
            "X-WECHAT-UIN": _uin(),
            "iLink-App-Id": "bot",
            "iLink-App-ClientVersion": client_version(),
        }
        if signed:
            headers["AuthorizationType"] = "ilink_bot_token"
            headers["Authorization"] = f"Bearer {self.token}"
        return headers

    async def _call(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: dict[str, Any] | None = None,
        signed: bool = True,
        timeout: float = REQUEST_TIMEOUT_S,
        base_url: str = "",
    ) -> Mapping[str, Any]:
        if signed and not self.token:
            raise ILinkError(f"{path}: not logged in")
        payload = None
        if body is not None:
            payload = {**body, "base_info": {"channel_version": CHANNEL_VERSION, "bot_agent": BOT_AGENT}}
        url = (base_url.rstrip("/") or self.base_url) + path
        try:
            response = await self._http.request(
                method, url, params=params, json=payload, headers=self._headers(signed), timeout=timeout
            )
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            raise ILinkError(f"{path}: {type(exc).__name__}: {exc}") from exc  # it never left
        except httpx.TimeoutException as exc:
            raise _TimedOut(f"{path}: timed out", outcome_unknown=True) from exc
        except httpx.HTTPError as exc:
            raise ILinkError(f"{path}: {type(exc).__name__}: {exc}", outcome_unknown=True) from exc
        if response.status_code != 200:
            raise ILinkError(
                f"{path}: HTTP {response.status_code}",
                http_status=response.status_code,
                outcome_unknown=response.status_code == GATEWAY_TIMEOUT,
            )
        try:
            answer = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise ILinkError(f"{path}: the answer is not JSON", outcome_unknown=True) from None
        if not isinstance(answer, Mapping):
            raise ILinkError(f"{path}: the answer is not a JSON object", outcome_unknown=True)
        _check_ret(path, answer)
        return answer


class _TimedOut(ILinkError):
    """Our own time-out: for a long poll that is simply no news."""


def _text(body: Mapping[str, Any], key: str) -> str:
    value = body.get(key)
    return str(value) if isinstance(value, str | int) and not isinstance(value, bool) else ""


def _check_ret(path: str, answer: Mapping[str, Any]) -> None:
    codes = [answer.get(key) for key in ("ret", "errcode")]
    failed = next((code for code in codes if isinstance(code, int) and code != 0), None)
    if failed is None:
        return
    message = f"{path}: ret {failed}: {answer.get('errmsg') or 'no message'}"
    if failed == SESSION_EXPIRED:
        raise SessionExpired(message, ret=failed)
    if failed == SEND_REFUSED and path.endswith("/sendmessage"):
        raise SendRefused(message, ret=failed)
    raise ILinkError(message, ret=failed)

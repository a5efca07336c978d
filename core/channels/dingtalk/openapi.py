"""DingTalk's OpenAPI as the adapter uses it: the app's access token, the stream gateway's ticket, the robot's
sends (one-to-one batchSend, group send, interactive cards and their updates), the read-back of a send, and
a reply through a message's session webhook (docs/channels.md#dingtalk).

All on one long-lived httpx client per app, with time-outs (the SDK's own calls use blocking `requests`
without any). It says what went wrong and decides nothing: holding, retrying and backing off belong to the
outbox and the connection.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx

from core.channels.dingtalk.config import DingTalkApp
from core.clock import Clock

log = logging.getLogger(__name__)

TOKEN_EARLY_S = 300.0  # a token is renewed this long before DingTalk says it expires
REQUEST_TIMEOUT_S = 15.0
BOT_TOPIC = "/v1.0/im/bot/messages/get"
CARD_TOPIC = "/v1.0/card/instances/callback"
USER_AGENT = "Errand (dingtalk-stream 0.24.3 frames)"


class DingTalkError(Exception):
    """DingTalk answered with an error, an answer we cannot read, or not at all."""

    def __init__(
        self, message: str, *, code: str = "", http_status: int | None = None, sent: bool = False
    ) -> None:
        super().__init__(message)
        self.code = code
        self.http_status = http_status
        # The request may have reached DingTalk (no answer came back): a send may have gone.
        self.sent = sent


class CredentialsRefused(DingTalkError):
    """The AppKey and AppSecret do not open this app: the person must correct them."""


@dataclass(frozen=True, slots=True)
class BatchAnswer:
    """What batchSend said: the key to read the send back with, and who did not get it."""

    process_query_key: str
    invalid: list[str] = field(default_factory=list)
    throttled: list[str] = field(default_factory=list)


class DingTalkApi:
    def __init__(
        self,
        app: DingTalkApp,
        endpoint: str,
        clock: Clock,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.app = app
        self.endpoint = endpoint.rstrip("/")
        self._clock = clock
        self._http = httpx.AsyncClient(
            timeout=REQUEST_TIMEOUT_S, transport=transport, headers={"User-Agent": USER_AGENT}
        )
        self._token = ""
        self._token_until = 0.0

    async def close(self) -> None:
        await self._http.aclose()

    # ---- auth -----------------------------------------------------------------------------------------

    async def token(self) -> str:
        """The app's access token, fetched again shortly before it expires. CredentialsRefused when the
        AppKey and AppSecret are wrong."""
        if self._token and self._clock.time() < self._token_until:
            return self._token
        body = {"appKey": self.app.app_key, "appSecret": self.app.app_secret}
        try:
            answer = await self._call("POST", "/v1.0/oauth2/accessToken", body, token="")
        except DingTalkError as exc:
            if exc.http_status in (400, 401, 403):
                raise CredentialsRefused(
                    f"DingTalk refused the AppKey and AppSecret ({exc.code or exc.http_status})",
                    code=exc.code,
                    http_status=exc.http_status,
                ) from exc
            raise
        token = answer.get("accessToken")
        expires = answer.get("expireIn")
        if not isinstance(token, str) or not token or not isinstance(expires, int):
            raise DingTalkError("DingTalk's token answer could not be read")
        self._token = token
        self._token_until = self._clock.time() + max(expires - TOKEN_EARLY_S, 60.0)
        return token

    def forget_token(self) -> None:
        self._token, self._token_until = "", 0.0

    async def open_connection(self) -> tuple[str, str]:
        """A ticket for one stream connection: (websocket endpoint, ticket). CredentialsRefused when the
        gateway refuses the app."""
        body = {
            "clientId": self.app.app_key,
            "clientSecret": self.app.app_secret,
            "subscriptions": [
                {"type": "CALLBACK", "topic": BOT_TOPIC},
                {"type": "CALLBACK", "topic": CARD_TOPIC},
            ],
            "ua": USER_AGENT,
            # The SDK finds this by a UDP "connect" to 8.8.8.8; DingTalk only records it.
            "localIp": "127.0.0.1",
        }
        try:
            answer = await self._call("POST", "/v1.0/gateway/connections/open", body, token="")
        except DingTalkError as exc:
            if exc.http_status in (401, 403):
                raise CredentialsRefused(
                    f"DingTalk's gateway refused the app ({exc.code or exc.http_status})",
                    code=exc.code,
                    http_status=exc.http_status,
                ) from exc
            raise
        url, ticket = answer.get("endpoint"), answer.get("ticket")
        if not isinstance(url, str) or not url or not isinstance(ticket, str) or not ticket:
            raise DingTalkError("DingTalk's gateway answer holds no endpoint and ticket")
        return url, ticket

    # ---- sends ----------------------------------------------------------------------------------------

    async def batch_send(self, user_id: str, msg_key: str, param: dict[str, Any]) -> BatchAnswer:
        body = {
            "robotCode": self.app.robot_code,
            "userIds": [user_id],
            "msgKey": msg_key,
            "msgParam": json.dumps(param, ensure_ascii=False),
        }
        answer = await self._send("/v1.0/robot/oToMessages/batchSend", body)
        return BatchAnswer(
            _key(answer),
            invalid=_ids(answer.get("invalidStaffIdList")),
            throttled=_ids(answer.get("flowControlledStaffIdList")),
        )

    async def group_send(self, group_id: str, msg_key: str, param: dict[str, Any]) -> str:
        body = {
            "robotCode": self.app.robot_code,
            "openConversationId": group_id,
            "msgKey": msg_key,
            "msgParam": json.dumps(param, ensure_ascii=False),
        }
        return _key(await self._send("/v1.0/robot/groupMessages/send", body))

    async def send_card(
        self, card_biz_id: str, card_data: str, *, group_id: str = "", user_id: str = ""
    ) -> str:
        """An interactive card; `card_biz_id` is its idempotency key (the same id twice is one card)."""
        body: dict[str, Any] = {
            "cardTemplateId": "StandardCard",
            "robotCode": self.app.robot_code,
            "cardBizId": card_biz_id,
            "cardData": card_data,
            "sendOptions": {},
        }
        if group_id:
            body["openConversationId"] = group_id
        else:
            body["singleChatReceiver"] = json.dumps({"userId": user_id})
        answer = await self._send("/v1.0/im/v1.0/robot/interactiveCards/send", body)
        key = answer.get("processQueryKey")  # the robot card route answers it at the top level
        if not isinstance(key, str):
            result = answer.get("result")
            key = result.get("processQueryKey") if isinstance(result, dict) else None
        return key if isinstance(key, str) else ""

    async def update_card(self, card_biz_id: str, card_data: str) -> None:
        body = {"cardBizId": card_biz_id, "cardData": card_data}
        await self._send("/v1.0/im/robots/interactiveCards", body, method="PUT")

    async def send_status(self, process_query_key: str, *, group_id: str = "") -> str:
        """How DingTalk says a send went: SUCCESS, PROCESSING, FAIL… ('' when it says nothing)."""
        if group_id:
            body = {
                "robotCode": self.app.robot_code,
                "openConversationId": group_id,
                "processQueryKey": process_query_key,
                "maxResults": 1,
            }
            answer = await self._send("/v1.0/robot/groupMessages/query", body)
        else:
            params = {"robotCode": self.app.robot_code, "processQueryKey": process_query_key}
            answer = await self._send("/v1.0/robot/oToMessages/readStatus", None, method="GET", params=params)
        status = answer.get("sendStatus")
        return status.upper() if isinstance(status, str) else ""

    async def webhook_send(self, url: str, body: dict[str, Any]) -> None:
        """A reply through a message's session webhook; DingTalkError unless it answers errcode 0."""
        try:
            response = await self._http.post(url, json=body)
        except httpx.HTTPError as exc:
            raise DingTalkError(
                f"the session webhook did not answer: {exc!r}", sent=_maybe_sent(exc)
            ) from exc
        answer = _json(response)
        errcode = answer.get("errcode")
        if response.status_code != 200 or errcode != 0:
            code = str(errcode if errcode is not None else response.status_code)
            raise DingTalkError(
                f"the session webhook refused the reply: {answer.get('errmsg') or response.status_code}",
                code=code,
                http_status=response.status_code,
            )

    # ---- plumbing -------------------------------------------------------------------------------------

    async def _send(
        self,
        path: str,
        body: dict[str, Any] | None,
        *,
        method: str = "POST",
        params: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """A call with the app's token; one that DingTalk refuses as unauthorised (the token expired or
        was revoked early) is made once more with a new token."""
        token = await self.token()
        try:
            return await self._call(method, path, body, token=token, params=params)
        except DingTalkError as exc:
            if exc.http_status != 401:
                raise
            self.forget_token()
            return await self._call(method, path, body, token=await self.token(), params=params)

    async def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        *,
        token: str,
        params: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        headers = {"x-acs-dingtalk-access-token": token} if token else {}
        try:
            response = await self._http.request(
                method, self.endpoint + path, json=body, params=params, headers=headers
            )
        except httpx.HTTPError as exc:
            raise DingTalkError(f"DingTalk did not answer {path}: {exc!r}", sent=_maybe_sent(exc)) from exc
        answer = _json(response)
        if response.status_code != 200:
            code = answer.get("code")
            message = answer.get("message") or response.reason_phrase
            raise DingTalkError(
                f"DingTalk refused {path}: {code or response.status_code} {message}".strip(),
                code=str(code or ""),
                http_status=response.status_code,
            )
        return answer


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        answer = response.json()
    except ValueError:
        return {}
    return answer if isinstance(answer, dict) else {}


def _maybe_sent(exc: httpx.HTTPError) -> bool:
    """Whether a request that got no answer may have reached DingTalk: not when it never connected."""
    return not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)


def _key(answer: dict[str, Any]) -> str:
    key = answer.get("processQueryKey")
    if not isinstance(key, str) or not key:
        raise DingTalkError(
            "DingTalk's answer holds no processQueryKey to read the send back with", sent=True
        )
    return key


def _ids(raw: object) -> list[str]:
    return [item for item in raw if isinstance(item, str)] if isinstance(raw, list) else []

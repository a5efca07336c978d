"""The channel routes of the local API (docs/channels.md#channels-of-a-bot): a bot's channels, adding one
(which starts its QR login, or checks and connects a Feishu app), 测试连接 for an app, its status and login
progress, who besides the owner may use it, the owner's word on a group it was added to (DingTalk), a new
login, the verify code a login may ask for, and removing one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from core.api import web
from core.api.validation import json_object, required_str
from core.channels.views import ChannelView
from core.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from core.host import Host

_ADD_FIELDS = frozenset({"kind"})
_APP_FIELDS = frozenset({"kind", "appId", "appSecret", "domain"})  # an app the person registered (Feishu)
_TOKEN_FIELDS = frozenset({"kind", "token"})  # a Telegram bot
_DINGTALK_FIELDS = frozenset({"kind", "appKey", "appSecret", "robotCode"})  # a DingTalk app
_CODE_FIELDS = frozenset({"code"})
_UPDATE_FIELDS = frozenset({"allowed"})
_ADMIT_FIELDS = frozenset({"admitted"})


def channel_json(view: ChannelView) -> dict[str, Any]:
    login = view.login
    return {
        "id": view.id,
        "botId": view.bot_id,
        "kind": view.kind,
        "account": view.account,
        "owner": view.owner,
        "status": view.status,
        "reason": view.reason,
        "allowed": list(view.allowed),
        "strangers": list(view.strangers),
        "name": view.name,
        "domain": view.domain,
        "pairingCode": view.pairing_code,
        # DingTalk: the groups it was added to, the latest first; admission is asked, allowed or refused
        "groups": [{"id": g.id, "title": g.title, "admission": g.admission} for g in view.groups],
        "login": (
            {
                "qrcodeUrl": login.qrcode_url,
                "status": login.status,
                "codes": login.codes,
                "reason": login.reason,
            }
            if login is not None
            else None
        ),
    }


def add_channel_routes(router: web.Router, host: Host) -> None:
    routes = ChannelRoutes(host)
    router.add_get("/api/bots/{id}/channels", routes.list_channels)
    router.add_post("/api/bots/{id}/channels", routes.add_channel)
    router.add_post("/api/channels/check-app", routes.check_app)
    router.add_get("/api/bots/{id}/channels/{channel}", routes.get_channel)
    router.add_put("/api/bots/{id}/channels/{channel}", routes.update_channel)
    # A group id may hold "/" (DingTalk's openConversationId): the client sends it percent-encoded (%2F),
    # which the router still matches as one segment and decodes.
    router.add_put("/api/bots/{id}/channels/{channel}/groups/{group}", routes.admit_group)
    router.add_post("/api/bots/{id}/channels/{channel}/login", routes.log_in_again)
    router.add_post("/api/bots/{id}/channels/{channel}/verify-code", routes.verify_code)
    router.add_delete("/api/bots/{id}/channels/{channel}", routes.remove_channel)


def _only(body: dict[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInputError(unknown[0], f"is not a field here; use {', '.join(sorted(allowed))}")


class ChannelRoutes:
    def __init__(self, host: Host) -> None:
        self._host = host

    async def list_channels(self, request: web.Request) -> web.Response:
        views = await self._host.channels.of_bot(request.match_info["id"])
        return web.json_response({"channels": [channel_json(v) for v in views]})

    async def add_channel(self, request: web.Request) -> web.Response:
        body = await json_object(request)
        kind = required_str(body, "kind")
        if kind == "feishu":
            _only(body, _APP_FIELDS)
            view = await self._host.channels.add(request.match_info["id"], kind, body)
        elif kind == "telegram":
            _only(body, _TOKEN_FIELDS)
            view = await self._host.channels.add(request.match_info["id"], kind, body)
        elif kind == "dingtalk":
            _only(body, _DINGTALK_FIELDS)
            view = await self._host.channels.add(request.match_info["id"], kind, body)
        else:
            _only(body, _ADD_FIELDS)
            view = await self._host.channels.add(request.match_info["id"], kind)
        return web.json_response(channel_json(view), status=201)

    async def check_app(self, request: web.Request) -> web.Response:
        body = await json_object(request)
        _only(body, _DINGTALK_FIELDS if body.get("kind") == "dingtalk" else _APP_FIELDS)
        found = await self._host.channels.check_app(required_str(body, "kind"), body)
        return web.json_response({"botName": found.bot_name, "botOpenId": found.bot_open_id})

    async def get_channel(self, request: web.Request) -> web.Response:
        view = await self._host.channels.get(request.match_info["id"], request.match_info["channel"])
        return web.json_response(channel_json(view))

    async def update_channel(self, request: web.Request) -> web.Response:
        """`{"allowed": [peer, ...]}`: who besides the owner may use the bot here."""
        body = await json_object(request)
        _only(body, _UPDATE_FIELDS)
        if "allowed" not in body:
            raise InvalidInputError("allowed", "send the list of people allowed besides the owner")
        view = await self._host.channels.set_allowed(
            request.match_info["id"], request.match_info["channel"], body["allowed"]
        )
        return web.json_response(channel_json(view))

    async def admit_group(self, request: web.Request) -> web.Response:
        """`{"admitted": bool}`: whether the bot works in a group it was added to (docs/channels.md#groups).
        Either word may be changed later; a group the channel was never added to is 404."""
        body = await json_object(request)
        _only(body, _ADMIT_FIELDS)
        admitted = body.get("admitted")
        if not isinstance(admitted, bool):
            raise InvalidInputError("admitted", "send true (the bot works in the group) or false")
        bot_id, channel_id, group_id = (request.match_info[k] for k in ("id", "channel", "group"))
        if all(g.id != group_id for g in (await self._host.channels.get(bot_id, channel_id)).groups):
            raise NotFoundError("group", group_id)
        view = await self._host.channels.admit_group(bot_id, channel_id, group_id, allowed=admitted)
        return web.json_response(channel_json(view))

    async def log_in_again(self, request: web.Request) -> web.Response:
        view = await self._host.channels.log_in_again(request.match_info["id"], request.match_info["channel"])
        return web.json_response(channel_json(view))

    async def verify_code(self, request: web.Request) -> web.Response:
        body = await json_object(request)
        _only(body, _CODE_FIELDS)
        bot_id, channel_id = request.match_info["id"], request.match_info["channel"]
        await self._host.channels.get(bot_id, channel_id)
        self._host.channels.enter_verify_code(channel_id, required_str(body, "code"))
        return web.json_response(channel_json(await self._host.channels.get(bot_id, channel_id)))

    async def remove_channel(self, request: web.Request) -> web.Response:
        await self._host.channels.remove(request.match_info["id"], request.match_info["channel"])
        return web.Response(status=204)

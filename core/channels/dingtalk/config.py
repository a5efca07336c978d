"""A DingTalk app as the person gives it (docs/channels.md#connecting-dingtalk): its AppKey, its AppSecret
(kept in the keyring, never in the database or a log) and its robot's code.

`ERRAND_DINGTALK_ENDPOINT` points both the stream connection and the OpenAPI calls of every DingTalk channel
at another server (tests use a fake on 127.0.0.1). dingtalk-stream reads its own variable once, when it is
imported; we never use its endpoint, so the order of imports does not matter here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from core.errors import InvalidInputError

DEFAULT_ENDPOINT = "https://api.dingtalk.com"
_KEY = re.compile(r"[A-Za-z0-9_-]{6,80}")
MAX_SECRET = 200


@dataclass(frozen=True, slots=True)
class DingTalkApp:
    app_key: str
    app_secret: str
    robot_code: str

    def __repr__(self) -> str:  # never the secret, not even in a traceback
        return f"DingTalkApp(app_key={self.app_key!r}, robot_code={self.robot_code!r})"


def secret_name(channel_id: str) -> str:
    """The keyring entry holding a DingTalk channel's AppSecret."""
    return f"channel:{channel_id}:app_secret"


def endpoint(environ: Mapping[str, str]) -> str:
    """Where DingTalk's OpenAPI and stream gateway answer: `ERRAND_DINGTALK_ENDPOINT` when set."""
    return environ.get("ERRAND_DINGTALK_ENDPOINT", "").strip().rstrip("/") or DEFAULT_ENDPOINT


def checked_app(config: Mapping[str, object] | None) -> DingTalkApp:
    """The app from a request's fields; InvalidInputError names the first one that is wrong. The robot code
    defaults to the AppKey, which is what DingTalk gives an app's robot unless it was set otherwise."""
    if not isinstance(config, Mapping):
        raise InvalidInputError("appKey", "send the app's appKey, appSecret and robotCode")
    key = config.get("appKey")
    if not isinstance(key, str) or not _KEY.fullmatch(key.strip()):
        raise InvalidInputError(
            "appKey", "must be the app's AppKey (Client ID) from the developer console: letters and digits"
        )
    secret = config.get("appSecret")
    if not isinstance(secret, str) or not secret.strip():
        raise InvalidInputError("appSecret", "must be the app's AppSecret (Client Secret) from the console")
    if len(secret) > MAX_SECRET or not secret.strip().isprintable() or " " in secret.strip():
        raise InvalidInputError("appSecret", "does not look like an AppSecret: copy it again")
    robot = config.get("robotCode", "")
    if robot is None or robot == "":
        robot = key
    if not isinstance(robot, str) or not _KEY.fullmatch(robot.strip()):
        raise InvalidInputError(
            "robotCode", "must be the robot's RobotCode from the app's robot page (often the AppKey)"
        )
    return DingTalkApp(key.strip(), secret.strip(), robot.strip())

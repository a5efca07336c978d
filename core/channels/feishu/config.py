"""A Feishu or Lark app as the person gives it (docs/channels.md#connecting-feishu): its app id, its secret
(kept in the keyring, never in the database or a log) and which of the two platforms it lives on.

`ERRAND_FEISHU_DOMAIN` points every Feishu channel at another server (tests use a fake on 127.0.0.1).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from core.errors import InvalidInputError

DOMAINS: Mapping[str, str] = {"feishu": "https://open.feishu.cn", "lark": "https://open.larksuite.com"}
_APP_ID = re.compile(r"cli_[A-Za-z0-9]{4,60}")
MAX_SECRET = 200


@dataclass(frozen=True, slots=True)
class FeishuApp:
    app_id: str
    app_secret: str
    domain: str  # "feishu" or "lark"

    def __repr__(self) -> str:  # never the secret, not even in a traceback
        return f"FeishuApp(app_id={self.app_id!r}, domain={self.domain!r})"


def secret_name(channel_id: str) -> str:
    """The keyring entry holding a Feishu channel's app secret."""
    return f"channel:{channel_id}:app_secret"


def base_url(domain: str, environ: Mapping[str, str]) -> str:
    """Where the app's platform answers: `ERRAND_FEISHU_DOMAIN` when set, else Feishu's or Lark's."""
    override = environ.get("ERRAND_FEISHU_DOMAIN", "").strip().rstrip("/")
    return override or DOMAINS.get(domain, DOMAINS["feishu"])


def checked_app(config: Mapping[str, object] | None) -> FeishuApp:
    """The app from a request's fields; InvalidInputError names the first one that is wrong."""
    if not isinstance(config, Mapping):
        raise InvalidInputError("appId", "send the app's appId, appSecret and domain")
    app_id = config.get("appId")
    if not isinstance(app_id, str) or not _APP_ID.fullmatch(app_id.strip()):
        raise InvalidInputError(
            "appId", "must be the app's App ID from the developer console: it starts with cli_"
        )
    secret = config.get("appSecret")
    if not isinstance(secret, str) or not secret.strip():
        raise InvalidInputError("appSecret", "must be the app's App Secret from the developer console")
    if len(secret) > MAX_SECRET or not secret.strip().isprintable() or " " in secret.strip():
        raise InvalidInputError("appSecret", "does not look like an App Secret: copy it again")
    domain = config.get("domain", "feishu")
    if not isinstance(domain, str) or domain not in DOMAINS:
        raise InvalidInputError("domain", f"must be one of {', '.join(DOMAINS)}, not {domain!r}")
    return FeishuApp(app_id.strip(), secret.strip(), str(domain))

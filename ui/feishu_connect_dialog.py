"""「连接飞书」: a bot's Feishu (or Lark) channel from an app the person registered themselves
(docs/desktop.md#connecting-feishu):

    连接飞书
    用你在开放平台建的企业自建应用连接……
    ┌──────────────────────────────────────────────────┐
    │ App ID       [cli_a1b2c3d4e5f6            ]      │
    │              (room for its error)                │
    │ App Secret   [••••••••••••••••            ]      │
    │              (room for its error, two lines)     │
    │ 域名          [飞书（open.feishu.cn）    ⌄]      │
    │              (room for its error)                │
    │              [测试连接] ● 已连上：Errand Bot      │
    └──────────────────────────────────────────────────┘
    应用要开通的权限
      im:message                     以应用身份发消息、回复和更新卡片
      …                              (core.channels.feishu.permissions, in the UI's language)
    要订阅的事件与回调（长连接）
      im.message.receive_v1          接收消息（事件）
      card.action.trigger            卡片上的按钮（回调）
    在开发者后台……                   where in the developer console
    (room for an error that names no field)
                                                  [取消] [连接]

测试连接 asks the ChannelFacade's `check_app` and says the bot's name; 连接 asks `add` and closes once the
channel is stored. Both run on the loop, so the window never waits (ui.connect_dialog: what the connect
dialogs do alike). An empty field is refused here, before anything is asked. A refused field is said under
that field (`InvalidInputError.field`: appId, appSecret, domain) and goes as soon as the field is edited;
anything else (the platform out of reach: UnavailableError) is said above the buttons. Every message has
its room kept while empty, so nothing moves when one appears. Closing the dialog while 连接 runs leaves
nothing behind: the channel it makes after the person gave up is removed (`open_feishu_connect` wires
this).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from PySide6.QtWidgets import QLineEdit, QWidget

from core.channels.app_check import AppCheck
from core.channels.facade import ChannelFacade
from core.channels.feishu.permissions import EVENTS, PERMISSIONS, Permission
from ui.async_calls import AsyncCalls
from ui.connect_dialog import AppConnectDialog, Listed, open_connect
from ui.form import Combo, line_input
from ui.i18n import language, t

DOMAINS = ("feishu", "lark")
# Core's Chinese keeps ASCII punctuation (its own book's rule); the UI's Chinese is full-width.
FULL_WIDTH = str.maketrans({",": "，", ":": "：", ";": "；", "(": "（", ")": "）"})
# What an empty field is told; the domain is always one of the choices.
MISSING = {"appId": "feishu.error.app_id_missing", "appSecret": "feishu.error.app_secret_missing"}


def permission_words(permission: Permission) -> str:
    """What the permission is for, in the UI's language."""
    if language() == "zh":
        return permission.why_zh.translate(FULL_WIDTH)
    return permission.why_en


def event_words(event: str) -> str:
    """What subscribing to the event or callback is for; an event the catalogue does not know, as nothing."""
    key = f"feishu.event.{event}"
    words = t(key)
    return "" if words == key else words


class FeishuConnectDialog(AppConnectDialog):
    """`connected(channel_id)` once the channel was added (the dialog then closes)."""

    KIND = "feishu"
    FIELDS = ("appId", "appSecret", "domain")
    FIELD_LABELS: ClassVar[Mapping[str, str]] = {
        "appId": "feishu.app_id",
        "appSecret": "feishu.app_secret",
        "domain": "feishu.domain",
    }

    def _make_inputs(self, well: QWidget) -> dict[str, QWidget]:
        self.app_id_input = line_input(well, t("feishu.app_id_placeholder"))
        self.secret_input = line_input(well, t("feishu.app_secret_placeholder"))
        self.secret_input.setEchoMode(QLineEdit.EchoMode.Password)
        self.domain_combo = Combo(well)
        for domain in DOMAINS:
            self.domain_combo.addItem(t(f"feishu.domain.{domain}"), domain)
        return {"appId": self.app_id_input, "appSecret": self.secret_input, "domain": self.domain_combo}

    def _console_lists(self) -> tuple[Listed, Listed]:
        scopes = [(p.scope, permission_words(p)) for p in PERMISSIONS]
        subscriptions = [(e, event_words(e)) for e in EVENTS]
        return (
            (t("feishu.permissions"), scopes, "feishuPermission"),
            (t("feishu.events"), subscriptions, "feishuEvent"),
        )

    # -- what a person sees (tests read these) ---------------------------------------------------------

    def permission_lines(self) -> list[str]:
        """「im:message · 以应用身份发消息、回复和更新卡片」, one per permission."""
        return self._lines("feishuPermission")

    def event_lines(self) -> list[str]:
        return self._lines("feishuEvent")

    # -- commands --------------------------------------------------------------------------------------

    def config(self) -> dict[str, object]:
        """What the fields say, as `check_app` and `add` take it."""
        return {
            "appId": self.app_id_input.text().strip(),
            "appSecret": self.secret_input.text().strip(),
            "domain": str(self.domain_combo.currentData() or DOMAINS[0]),
        }

    def _refusals(self, config: Mapping[str, object]) -> dict[str, str]:
        """Only an empty field is refused here; the platform says what else is wrong."""
        return {field: t(key) for field, key in MISSING.items() if not config[field]}

    # -- answers ---------------------------------------------------------------------------------------

    def _tested_words(self, check: AppCheck) -> str:
        return t("feishu.tested", name=check.bot_name or check.bot_open_id)


def open_feishu_connect(
    channels: ChannelFacade, bot_id: str, calls: AsyncCalls, parent: QWidget | None = None
) -> FeishuConnectDialog:
    """Open the dialog. A channel added after the person closed it is removed through `calls`, which belong
    to the opener and so outlive the dialog."""
    return open_connect(
        lambda abandon: FeishuConnectDialog(channels, bot_id, parent, abandon=abandon), channels, calls
    )

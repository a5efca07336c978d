"""「连接钉钉」: a bot's DingTalk channel from an internal app the person registered themselves
(docs/channels.md#connecting-dingtalk):

    连接钉钉
    用你在钉钉开放平台创建的企业内部应用连接……
    ┌──────────────────────────────────────────────────┐
    │ AppKey       [dingabc123                  ]      │
    │              (room for its error)                │
    │ AppSecret    [••••••••••••••••            ]      │
    │              (room for its error, two lines)     │
    │ RobotCode    [可以不填：默认就是 AppKey     ]      │
    │              (room for its error)                │
    │              [测试连接] ● 已连上：AppKey dingabc123 │
    └──────────────────────────────────────────────────┘
    应用要有的能力
      机器人                         在「应用能力」里添加机器人
      Stream 模式                    机器人的消息接收模式选它……
    应用要开通的权限
      qyapi_robot_sendmsg            企业内机器人发送消息……
      Card.Instance.Write            互动卡片……
      Card.Streaming.Write           互动卡片……
    在开发者后台……                   where in the developer console, and that groups are allowed in 渠道
    (room for an error that names no field)
                                                  [取消] [连接]

It behaves as 连接飞书 does (ui.feishu_connect_dialog), and is built as it is (ui.connect_dialog): 测试连接
asks the ChannelFacade's `check_app`, 连接 asks `add` and closes once the channel is stored, both on the
loop with the buttons disabled and the fields frozen meanwhile. DingTalk tells no robot name, so a
test that went through names the AppKey. The fields are checked here first with the core's own
`checked_app`, so what is refused before anything is asked is exactly what the service would refuse; it
is said in our words under the field it is about. A refusal from DingTalk names its field
(`InvalidInputError.field`: appKey, appSecret, robotCode) and is said under it until that field is edited;
anything else (DingTalk out of reach: UnavailableError) above the buttons. A channel made after the person
closed the dialog is handed to `abandon`, and the opener removes it (`open_dingtalk_connect` wires this).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from PySide6.QtWidgets import QLineEdit, QWidget

from core.channels.app_check import AppCheck
from core.channels.dingtalk.config import checked_app
from core.channels.facade import ChannelFacade
from core.errors import InvalidInputError
from ui.async_calls import AsyncCalls
from ui.connect_dialog import AppConnectDialog, Listed, open_connect
from ui.form import line_input
from ui.i18n import t

PLACEHOLDERS = {
    "appKey": "dingtalk.app_key_placeholder",
    "appSecret": "dingtalk.app_secret_placeholder",
    "robotCode": "dingtalk.robot_code_placeholder",
}
# The console's own names for what the app needs, so a person can search for them there.
ABILITIES = ("robot", "stream")
PERMISSIONS = ("qyapi_robot_sendmsg", "Card.Instance.Write", "Card.Streaming.Write")
# What an empty field and one of the wrong shape are told; the robot code may be empty (the AppKey).
MISSING = {"appKey": "dingtalk.error.app_key_missing", "appSecret": "dingtalk.error.app_secret_missing"}
SHAPE = {
    "appKey": "dingtalk.error.app_key_shape",
    "appSecret": "dingtalk.error.app_secret_shape",
    "robotCode": "dingtalk.error.robot_code_shape",
}


class DingTalkConnectDialog(AppConnectDialog):
    """`connected(channel_id)` once the channel was added (the dialog then closes)."""

    KIND = "dingtalk"
    FIELDS = ("appKey", "appSecret", "robotCode")
    FIELD_LABELS: ClassVar[Mapping[str, str]] = {
        "appKey": "dingtalk.app_key",
        "appSecret": "dingtalk.app_secret",
        "robotCode": "dingtalk.robot_code",
    }

    def _make_inputs(self, well: QWidget) -> dict[str, QWidget]:
        self.app_key_input = line_input(well, t(PLACEHOLDERS["appKey"]))
        self.secret_input = line_input(well, t(PLACEHOLDERS["appSecret"]))
        self.secret_input.setEchoMode(QLineEdit.EchoMode.Password)
        self.robot_code_input = line_input(well, t(PLACEHOLDERS["robotCode"]))
        return {
            "appKey": self.app_key_input,
            "appSecret": self.secret_input,
            "robotCode": self.robot_code_input,
        }

    def _console_lists(self) -> tuple[Listed, Listed]:
        abilities = [
            (t(f"dingtalk.ability.{each}"), t(f"dingtalk.ability.{each}_words")) for each in ABILITIES
        ]
        permissions = [(each, t(f"dingtalk.permission.{each}")) for each in PERMISSIONS]
        return (
            (t("dingtalk.abilities"), abilities, "dingtalkAbility"),
            (t("dingtalk.permissions"), permissions, "dingtalkPermission"),
        )

    # -- what a person sees (tests read these) ---------------------------------------------------------

    def ability_lines(self) -> list[str]:
        """「机器人 · 在「应用能力」里添加机器人」, one per thing the app must have."""
        return self._lines("dingtalkAbility")

    def permission_lines(self) -> list[str]:
        """「qyapi_robot_sendmsg · 企业内机器人发送消息：单聊和群里的回复」, one per permission."""
        return self._lines("dingtalkPermission")

    # -- commands --------------------------------------------------------------------------------------

    def config(self) -> dict[str, object]:
        """What the fields say, as `check_app` and `add` take it; an empty robot code is left out (the
        service then takes the AppKey)."""
        config: dict[str, object] = {
            "appKey": self.app_key_input.text().strip(),
            "appSecret": self.secret_input.text().strip(),
        }
        robot_code = self.robot_code_input.text().strip()
        if robot_code:
            config["robotCode"] = robot_code
        return config

    def _refusals(self, config: Mapping[str, object]) -> dict[str, str]:
        """What is wrong with each field, in our words. `checked_app` stops at the first bad field, so the
        others are checked again with that one replaced by a good stand-in: every bad field is said at
        once, as an empty App ID and App Secret are in 连接飞书."""
        stand_ins = {"appKey": "standin", "appSecret": "standin", "robotCode": "standin"}
        refused: dict[str, str] = {}
        trying = dict(config)
        for _attempt in self.FIELDS:  # at most one refusal per field
            try:
                checked_app(trying)
                break
            except InvalidInputError as exc:
                field = exc.field if exc.field in self.FIELDS else "appKey"
                if field in refused:
                    break
                empty = not str(config.get(field) or "")
                refused[field] = t(MISSING[field] if empty and field in MISSING else SHAPE[field])
                trying[field] = stand_ins[field]
        return refused

    # -- answers ---------------------------------------------------------------------------------------

    def _tested_words(self, check: AppCheck) -> str:
        # DingTalk says nothing about the robot's name: the app it reached is named by its key.
        return t("dingtalk.tested", app_key=check.bot_name or str(self.config()["appKey"]))


def open_dingtalk_connect(
    channels: ChannelFacade, bot_id: str, calls: AsyncCalls, parent: QWidget | None = None
) -> DingTalkConnectDialog:
    """Open the dialog. A channel added after the person closed it is removed through `calls`, which belong
    to the opener and so outlive the dialog."""
    return open_connect(
        lambda abandon: DingTalkConnectDialog(channels, bot_id, parent, abandon=abandon), channels, calls
    )

"""What the UI and the API read about bots. Never carries a key: only whether one is set."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

BotState = Literal["idle", "working", "waiting"]


@dataclass(frozen=True, slots=True)
class BotView:
    id: str
    name: str
    workspace: str
    model_provider: str
    model_base_url: str
    model_name: str
    has_api_key: bool
    preset: str
    is_default: bool
    created_at: float
    avatar: str = ""  # a palette colour key ("teal", "amber", ...); empty = derived from the id
    task_slots: int = 2  # background slots for this bot's tasks and rule runs
    quiet_start: str = "22:00"  # quiet hours, local "HH:MM"; equal start and end = none
    quiet_end: str = "08:00"
    paused: bool = False  # background work paused: no new task runs, scheduled rules skipped, pushes wait
    window_nudge: bool = True  # the one 「回个 ok」 line before a chat platform's reply window closes
    images: bool = False  # its model is shown the images a person sends (docs/models.md#images)
    images_chosen: bool | None = None  # what the person chose; None = as the model is known to

    @property
    def configured(self) -> bool:
        """Whether the bot has a model to talk to (a base URL and a model name)."""
        return bool(self.model_base_url and self.model_name)

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "name": self.name,
            "workspace": self.workspace,
            "model": {
                "provider": self.model_provider,
                "baseUrl": self.model_base_url,
                "model": self.model_name,
                "hasApiKey": self.has_api_key,
            },
            "preset": self.preset,
            "isDefault": self.is_default,
            "createdAt": self.created_at,
            "avatar": self.avatar,
            "taskSlots": self.task_slots,
            "quietHours": {"start": self.quiet_start, "end": self.quiet_end},
            "paused": self.paused,
            "windowNudge": self.window_nudge,
            "images": self.images,
            "configured": self.configured,
        }


@dataclass(frozen=True, slots=True)
class BotUpdate:
    """A change to a bot's settings. None leaves a field as it is; `api_key=""` removes the stored key.
    Every field is validated before anything is written; a bad one raises InvalidInputError naming it."""

    name: str | None = None
    avatar: str | None = None
    model_provider: str | None = None
    model_base_url: str | None = None
    model_name: str | None = None
    api_key: str | None = None
    preset: str | None = None
    task_slots: int | None = None
    quiet_start: str | None = None
    quiet_end: str | None = None
    paused: bool | None = None
    window_nudge: bool | None = None
    images: bool | None = None  # the person's choice: the model is shown images, or only told of them


@dataclass(frozen=True, slots=True)
class ConnectionCheck:
    """The outcome of 「测试连接」: one real request to the model. `message` is for the person (zh or en)."""

    ok: bool
    message: str
    latency_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class ModelPreset:
    """A first-run choice: a provider with its base URL and a suggested model. `local` presets were found
    running on this machine (Ollama) and need no key; `models` lists what they offer."""

    key: str  # "deepseek", "openai", "openrouter", "ollama"
    label: str
    base_url: str
    model: str
    needs_key: bool = True
    local: bool = False
    models: tuple[str, ...] = ()
    key_hint: str = ""  # where to get a key, e.g. "https://platform.deepseek.com/api_keys"
    images: bool = False  # its suggested model takes images (core/bots/model_images.py)


@dataclass(frozen=True, slots=True)
class BotActivity:
    """A bot's row in the sidebar: its avatar state and the line under its name.
    `working`: a task or rule run is working (or a chat reply streams); `waiting`: something of this bot is
    in needs-you. `line` is e.g. 「GPU 价格调研等你回答」 or 「正在工作…」, empty when idle."""

    bot_id: str
    state: BotState
    line: str = ""
    waiting_count: int = 0
    working_count: int = 0

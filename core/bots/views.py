"""What the UI and the API read about bots. Never carries a key: only whether one is set."""

from __future__ import annotations

from dataclasses import dataclass


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
        }

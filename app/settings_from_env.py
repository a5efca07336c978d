"""Model settings from the environment: how tests and scripts point the default bot at a model server.

Beside them, `ERRAND_MODEL_IMAGES=1` (or true, yes, on) also shows that model the images a person sends
(docs/models.md#images); unset, the bot's own setting decides. Alone it sets nothing."""

from __future__ import annotations

import os
from collections.abc import Mapping

from core.agent.model_config import ModelConfig

_YES = frozenset({"1", "true", "yes", "on"})


def model_override(env: Mapping[str, str] = os.environ) -> ModelConfig | None:
    base_url = env.get("ERRAND_MODEL_BASE_URL", "").strip()
    model = env.get("ERRAND_MODEL", "").strip()
    api_key = env.get("ERRAND_API_KEY", "").strip()
    images = env.get("ERRAND_MODEL_IMAGES", "").strip().lower() in _YES
    if not (base_url or model or api_key):
        return None
    return ModelConfig(base_url=base_url.rstrip("/"), model=model, api_key=api_key, images=images)

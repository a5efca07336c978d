"""Model settings from the environment: how tests and scripts point the default bot at a model server."""

from __future__ import annotations

import os
from collections.abc import Mapping

from core.agent.model_config import ModelConfig


def model_override(env: Mapping[str, str] = os.environ) -> ModelConfig | None:
    base_url = env.get("ERRAND_MODEL_BASE_URL", "").strip()
    model = env.get("ERRAND_MODEL", "").strip()
    api_key = env.get("ERRAND_API_KEY", "").strip()
    if not (base_url or model or api_key):
        return None
    return ModelConfig(base_url=base_url.rstrip("/"), model=model, api_key=api_key)
